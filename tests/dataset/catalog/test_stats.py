"""stats: counts and shares, coverage targets and the SVG figure, from the real bundled index."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

from solbench.dataset.catalog.plot import CREATOR, stats_svg
from solbench.dataset.catalog.row import intensity_band
from solbench.dataset.catalog.stats import counts, coverage, stats_table

SVG = "{http://www.w3.org/2000/svg}"


def test_counts_of_the_bundled_problems(bundled_index) -> None:
    rows = bundled_index.problems
    assert len(rows) == 13
    category = {c.value: c.problems for c in counts(rows, "category")}
    assert category == {"gemm": 3, "norm": 3, "attention": 1, "elementwise": 1, "embedding": 1, "mlp": 1, "moe": 1, "reduction": 1, "rope": 1}
    assert [c.value for c in counts(rows, "category")][:2] == ["gemm", "norm"]  # most first, ties by name
    direction = {c.value: (c.problems, round(c.share, 4)) for c in counts(rows, "direction")}
    assert direction == {"forward": (12, round(12 / 13, 4)), "backward": (1, round(1 / 13, 4))}
    assert {c.value: c.problems for c in counts(rows, "precision")} == {"bfloat16": 10, "float32": 2, "float8_e4m3fn": 1}
    bands = counts(rows, "intensity")
    assert sum(c.problems for c in bands) == 13
    assert [c.value for c in bands] == sorted((c.value for c in bands), key=["<1", "1-10", "10-100", "100-1000", ">=1000", "unknown"].index)
    assert {intensity_band(r) for r in rows if r.category == "norm"} <= {"<1", "1-10"}


def test_table_lists_every_dimension(bundled_index) -> None:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(stats_table(bundled_index.problems))
    text = console.export_text()
    for word in ("category", "domain", "precision", "direction", "intensity", "gemm", "23.1%", "backward", "7.7%"):
        assert word in text


def test_coverage_targets(bundled_index) -> None:
    checks = coverage(bundled_index.problems, {"category": {"attention": 0.3, "gemm": 0.2}, "direction": {"backward": 0.05}, "domain": {"audio": 0.1}})
    result = {(c.dimension, c.value): (c.met, c.problems) for c in checks}
    assert result == {("category", "attention"): (False, 1), ("category", "gemm"): (True, 3), ("direction", "backward"): (True, 1),
                      ("domain", "audio"): (False, 0)}


def test_plot_is_a_deterministic_svg_with_bars_and_a_histogram(bundled_index) -> None:
    text = stats_svg(bundled_index.problems, "bundled")
    assert text == stats_svg(bundled_index.problems, "bundled")  # byte-identical
    root = ElementTree.fromstring(text.encode())
    assert root.tag == f"{SVG}svg"
    assert CREATOR in text
    axes = [g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("axes_")]
    assert len(axes) >= 6  # five bar charts and the histogram
    patches = [g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("patch_")]
    assert len(patches) > 30  # bars and histogram bins are drawn, not only frames
    assert "Date" not in text
