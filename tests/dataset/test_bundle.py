"""dataset/bundle.py: the tools run in order on a small plan give a set folder that loads, and a manifest
that lists every command with its time, the coverage table and the hand-written references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solbench.data.loaders import load_problems
from solbench.dataset.bundle import CALIBRATED_HEADING, Entry, add_calibration, add_whole, build, calibrate_listed

pytest.importorskip("transformers")


def test_a_small_plan_and_an_added_extraction_make_a_set_that_loads_with_its_manifest(tmp_path: Path) -> None:
    """One build (its extractions are most of this test's time): the plan is sampled with duplicates dropped,
    the added extraction is copied whole after the sample, and an added problem the sample has already is refused."""
    out, pool = tmp_path / "set", tmp_path / "pool"
    plan = (Entry("llama3_8b", "norm,mlp", backward=False), Entry("qwen3_8b", "norm", backward=False))
    manifest = build(out, pool, 10, 0, plan, added=(Entry("qwen3_8b", "mlp", backward=False),))
    problems = sorted(p.name for p in load_problems([out]))
    assert problems == ["llama3_8b_mlp", "llama3_8b_norm", "qwen3_8b_mlp"]  # qwen3_8b_norm: the same graph and sizes as llama3_8b_norm
    sampled, added = manifest.split("## Added after the sample", 1)
    assert sampled.count("| `solbench dataset extract") == 2 and "| `solbench dataset sample" in sampled
    assert "--duplicates sizes" in manifest and "kept llama3_8b_norm, standing for qwen3_8b_norm" in manifest
    assert added.count("| `solbench dataset extract") == 1 and "`qwen3_8b_mlp`" in added  # added whole: no de-duplication against the sample
    assert "## Coverage" in manifest and "category" in manifest
    assert "- none" in manifest  # no hand-written reference among these
    assert "qwen3_8b_mlp" not in {p.name for p in pool.iterdir()}  # the pool holds the plan's extractions only
    with pytest.raises(SystemExit, match="has this problem already"):
        add_whole(out, tmp_path / "scratch", (Entry("llama3_8b", "norm", backward=False),), [])



def test_the_listed_problems_of_a_set_get_calibrated_tolerances(tmp_path: Path) -> None:
    folder = tmp_path / "set" / "bf16_chain"
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps({
        "name": "bf16_chain", "axes": {"m": {"type": "var"}, "k": {"type": "const", "value": 512}},
        "inputs": {"x": {"shape": ["m", "k"], "dtype": "bfloat16"}, "w": {"shape": ["k", "k"], "dtype": "bfloat16"}},
        "outputs": {"y": {"shape": ["m", "k"], "dtype": "bfloat16"}},
        "reference": "import torch\n\n\ndef run(x, w):\n    return (x @ w).relu() @ w\n"}))
    default = {"max_atol": 0.03, "max_rtol": 0.03, "required_matched_ratio": 0.999, "max_error_cap": None, "allow_negative_inf": False}
    (folder / "workload.jsonl").write_text(json.dumps({"uuid": "m8", "axes": {"m": 8}, "inputs": {"x": {"type": "random"}, "w": {"type": "random"}},
                                                       "tolerance": default}) + "\n")
    section = calibrate_listed(tmp_path / "set", ("bf16_chain", "not_in_the_set"), "cpu", runs=2)
    assert section[0] == CALIBRATED_HEADING and len([line for line in section if line.startswith("| `solbench calibrate-tolerance")]) == 1
    (calibrated,) = [json.loads(line)["tolerance"] for line in (folder / "workload.jsonl").read_text().splitlines()]
    assert (calibrated["max_atol"], calibrated["max_rtol"]) != (0.03, 0.03)  # measured, not the bf16 default
    assert {k: v for k, v in calibrated.items() if not k.startswith("max_")} == {k: v for k, v in default.items() if not k.startswith("max_")}


def test_a_calibration_goes_into_a_manifest_written_before_once(tmp_path: Path) -> None:
    manifest = tmp_path / "MANIFEST.md"
    manifest.write_text("# set\n\n## Added after the sample\n\nx\n\n## Coverage (`solbench dataset stats`)\n\nstats\n")
    add_calibration(manifest, [CALIBRATED_HEADING, "", "| first |", ""])
    add_calibration(manifest, [CALIBRATED_HEADING, "", "| second |", ""])
    text = manifest.read_text()
    assert text.count(CALIBRATED_HEADING) == 1 and "| first |" not in text and "| second |" in text
    assert text.index("## Added after") < text.index(CALIBRATED_HEADING) < text.index("## Coverage") and text.endswith("stats\n")
