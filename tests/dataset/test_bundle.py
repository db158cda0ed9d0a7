"""dataset/bundle.py: the tools run in order on a small plan give a set folder that loads, and a manifest
that lists every command with its time, the coverage table and the hand-written references."""

from __future__ import annotations

from pathlib import Path

import pytest

from solbench.data.loaders import load_problems
from solbench.dataset.bundle import Entry, build

pytest.importorskip("transformers")


def test_a_small_plan_makes_a_set_that_loads_with_its_manifest(tmp_path: Path) -> None:
    out, pool = tmp_path / "set", tmp_path / "pool"
    plan = (Entry("llama3_8b", "norm,mlp", backward=False), Entry("qwen3_8b", "norm", backward=False))
    manifest = build(out, pool, 10, 0, plan)
    problems = sorted(p.name for p in load_problems([out]))
    assert problems == ["llama3_8b_mlp", "llama3_8b_norm"]  # qwen3_8b_norm: the same graph and sizes as llama3_8b_norm
    assert manifest.count("| `solbench dataset extract") == 2 and "| `solbench dataset sample" in manifest
    assert "--duplicates sizes" in manifest and "kept llama3_8b_norm, standing for qwen3_8b_norm" in manifest
    assert "## Coverage" in manifest and "category" in manifest
    assert "- none" in manifest  # no hand-written reference among these


def test_added_extractions_are_copied_whole_after_the_sample(tmp_path: Path) -> None:
    out, pool = tmp_path / "set", tmp_path / "pool"
    plan = (Entry("llama3_8b", "norm", backward=False),)
    manifest = build(out, pool, 10, 0, plan, added=(Entry("qwen3_8b", "norm,mlp", backward=False),))
    problems = sorted(p.name for p in load_problems([out]))
    assert problems == ["llama3_8b_norm", "qwen3_8b_mlp", "qwen3_8b_norm"]  # added whole: no de-duplication against the sample
    assert "## Added after the sample" in manifest and "`qwen3_8b_mlp`, `qwen3_8b_norm`" in manifest
    assert sorted(p.name for p in pool.iterdir()) == ["index.json", "llama3_8b_norm"]  # the pool holds the plan's extraction only
    with pytest.raises(SystemExit, match="has this problem already"):
        build(tmp_path / "again", tmp_path / "pool2", 10, 0, plan, added=(Entry("llama3_8b", "norm", backward=False),))
