"""The report's bar chart of a gap decomposition, drawn from a stored profile JSON, and its place in a
run's report.md and report.html (RUN_DIR/profiles/<problem>/<solution>.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from solbench.data.errors import SpecError
from solbench.profile.model import load_profile
from solbench.profile.store import profile_path, run_profiles
from solbench.report.profile_chart import caption, gap_chart_svg
from solbench.report.render import write_report
from solbench.report.sample import sample_summary

REMAINDER = 1.2548 / (1.01 * 1.002 * 1.25)  # the factors multiply to T/T_SOL
STORED = {
    "format": "solbench-profile/1", "problem": "silu_and_mul_llama3_8b", "solution": "silu_and_mul_cuda", "workload": "e090157f-4bce",
    "status": "PASSED", "latency_ms": 0.0921, "latency_source": "evaluation",
    "sol": {"hardware": "H200", "policy": "relaxed", "t_sol_ms": 0.0734, "t_roofline_ms": 0.0734, "t_floor_ms": 0.0009, "floor_bound": False,
            "bottleneck": "memory", "compulsory_bytes": 352321536, "bytes_fused": 352321536, "flops_by_unit": {"vector_fp32": 5.9e8},
            "peak_bandwidth_bytes_per_s": 4.8e12},
    "kernels": [{"index": 0, "name": "silu_and_mul_kernel", "duration_ms": 0.089, "dram_read_bytes": 235e6, "dram_write_bytes": 118e6}],
    "totals": {"kernels": 1, "dram_bytes": 353e6},
    "decomposition": {"t_over_t_sol": 1.2548, "bound": "memory", "factors": [
        {"name": "gaps", "value": 1.01, "meaning": "..."}, {"name": "extra_bytes", "value": 1.002, "meaning": "..."},
        {"name": "bandwidth", "value": 1.25, "meaning": "..."}, {"name": "remainder", "value": REMAINDER, "meaning": "..."}]},
    "gap": {"t_over_t_sol": 1.2548, "gaps": 1.01, "extra_bytes": 1.002, "bandwidth": 1.25, "remainder": REMAINDER},
    "some_future_key": {"kept": True},
}


def stored(folder: Path, problem: str = "silu_and_mul_llama3_8b", solution: str = "silu_and_mul_cuda") -> Path:
    path = profile_path(folder, problem, solution)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**STORED, "problem": problem, "solution": solution}), encoding="utf-8")
    return path


def test_the_chart_renders_from_a_stored_profile(tmp_path: Path):
    report = load_profile(stored(tmp_path))
    svg = gap_chart_svg(report, key="t")
    assert svg.startswith("<svg") and 'id="t-bar-bandwidth"' in svg and 'id="t-bar-t_over_t_sol"' in svg
    for label in ("launch / idle gaps", "extra DRAM bytes", "DRAM bandwidth below peak", "remainder", "T / T_SOL", "×1.25", "×0.992"):
        assert label in svg
    assert "memory-bound" in svg and "factor of T / T_SOL" in svg
    assert caption(report).startswith("T/T_SOL 1.25 = launch / idle gaps 1.01 × extra DRAM bytes 1 × DRAM bandwidth below peak 1.25")
    assert report.model_extra["some_future_key"] == {"kept": True}


def test_no_chart_without_a_decomposition(tmp_path: Path):
    path = stored(tmp_path)
    data = json.loads(path.read_text())
    data["decomposition"], data["gap"] = None, {}
    path.write_text(json.dumps(data))
    assert gap_chart_svg(load_profile(path), key="t") is None


def test_a_run_report_shows_each_profiled_solution(tmp_path: Path):
    (tmp_path / "summary.json").write_text(sample_summary(2, seed=1).to_json(), encoding="utf-8")
    stored(tmp_path)
    stored(tmp_path, "rmsnorm_llama3_8b", "rms_triton")
    (tmp_path / "profiles" / "broken").mkdir()
    (tmp_path / "profiles" / "broken" / "x.json").write_text("{not json")
    found, problems = run_profiles(tmp_path)
    assert [p.solution for p in found] == ["rms_triton", "silu_and_mul_cuda"] and len(problems) == 1 and "x.json" in problems[0]
    write_report(tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert '<section id="profiles">' in html and '<a href="#profiles">Profiles</a>' in html
    assert len(re.findall(r'data-plot="gap-decomposition"', html)) == 2 and len(set(re.findall(r'id="(profile-\d+-bar-remainder)"', html))) == 2
    markdown = (tmp_path / "report.md").read_text()
    assert "## Profiles" in markdown and "| silu_and_mul_llama3_8b | silu_and_mul_cuda | e090157f-4bc | T/T_SOL 1.25 = " in markdown


def test_a_report_without_profiles_has_no_section(tmp_path: Path):
    (tmp_path / "summary.json").write_text(sample_summary(2, seed=1).to_json(), encoding="utf-8")
    write_report(tmp_path)
    assert 'id="profiles"' not in (tmp_path / "report.html").read_text() and "## Profiles" not in (tmp_path / "report.md").read_text()


def test_a_file_that_is_not_a_profile_is_one_line(tmp_path: Path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"problem": "p"}))
    with pytest.raises(SpecError) as caught:
        load_profile(path)
    assert "not a solbench profile" in str(caught.value) and "\n" not in str(caught.value)
