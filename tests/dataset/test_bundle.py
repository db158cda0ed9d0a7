"""dataset/bundle.py: the tools run in order on a small plan give a set folder that loads, and a manifest
that lists every command with its time, the coverage table and the hand-written references."""

from __future__ import annotations

from pathlib import Path

import pytest

from solbench.data.loaders import load_problems
from solbench.dataset.bundle import Entry, add_whole, build

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
