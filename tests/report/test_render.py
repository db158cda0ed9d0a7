"""write_report on real run folders: both files, their content, self-containment, and what may be
overwritten."""

from __future__ import annotations

import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from solbench.data.errors import SpecError
from solbench.report.content import gather
from solbench.report.render import HTML_FILE, MARKDOWN_FILE, draw_rooflines, load_summary, write_report
from solbench.report.roofline import draw_rooflines as draw_rooflines_of
from solbench.report.sample import sample_summary
from solbench.score.summary import AuditFinding, ProblemScore, RunSummary, SuiteScore, WorkloadScore

ROOFS = {"dram_tbps": 4.8, "tensor_bf16_tflops": 989.4, "vector_fp32_tflops": 66.9}


def hand_built_summary() -> RunSummary:
    """Two problems: a matmul with a reference, a fast solution (one workload flagged faster than
    SOL) and a failing one; a norm whose T_SOL is unknown (no score); an audit finding; notes."""
    def row(problem, solution, workload, status="PASSED", latency=None, sol=None, baseline=None, score=None, flags=(), solution_set=None,
            flops=None, nbytes=None, reference=None):
        return WorkloadScore(problem=problem, solution=solution, workload=workload, status=status, latency_ms=latency, sol_ms=sol,
                             baseline_ms=baseline, baseline_candidate="eager" if baseline else None, reference_ms=reference, score=score,
                             speedup_vs_reference=(reference / latency) if latency and reference else None, flops=flops, bytes=nbytes,
                             flags=list(flags), solution_set=solution_set)

    mm = dict(flops=2 * 4096**3, nbytes=3 * 4096 * 4096 * 2)
    workloads = [
        row("matmul_bf16", "mm_ref", "w-mm-1", latency=0.30, sol=0.139, baseline=0.30, reference=0.30, score=0.5, solution_set="reference", **mm),
        row("matmul_bf16", "mm_triton", "w-mm-1", latency=0.20, sol=0.139, baseline=0.30, reference=0.30,
            score=1 / (1 + (0.20 - 0.139) / (0.30 - 0.139)), solution_set="agent", **mm),
        row("matmul_bf16", "mm_triton", "w-mm-2", latency=0.10, sol=0.139, baseline=0.30, reference=0.30, score=0.0,
            flags=["faster-than-sol"], solution_set="agent", **mm),
        row("matmul_bf16", "mm_broken", "w-mm-1", status="RUNTIME_ERROR", score=0.0, sol=0.139, baseline=0.30, reference=0.30,
            solution_set="other", **mm),
        row("rms|norm <b>", "norm_ref", "w-norm-1", latency=0.05, reference=0.05, solution_set="reference", flops=0.0, nbytes=1e8),
    ]
    problems = [
        ProblemScore(problem="matmul_bf16", solution="mm_ref", solution_set="reference", categories={"subset": "L1", "op_type": "gemm"},
                     workloads=1, statuses={"PASSED": 1}, score=0.5, median_ratio_to_sol=2.16, geomean_speedup_vs_reference=1.0),
        ProblemScore(problem="matmul_bf16", solution="mm_triton", solution_set="agent", categories={"subset": "L1", "op_type": "gemm"},
                     workloads=2, statuses={"PASSED": 2}, score=0.362, median_ratio_to_sol=1.08, geomean_speedup_vs_reference=2.12,
                     flags=["faster-than-sol"]),
        ProblemScore(problem="matmul_bf16", solution="mm_broken", solution_set="other", categories={"subset": "L1", "op_type": "gemm"},
                     workloads=1, statuses={"RUNTIME_ERROR": 1}, score=0.0),
        ProblemScore(problem="rms|norm <b>", solution="norm_ref", solution_set="reference", categories={"subset": "L2", "op_type": "norm"},
                     workloads=1, statuses={"PASSED": 1}, score=None),
    ]
    suites = [SuiteScore(solution="agent", problems=1, score_mean=0.362, score_median=0.362, fast_p={"1.0": 1.0, "2.0": 0.5},
                         by_category={"subset": {"L1": 0.362}}, geomean_speedup_vs_reference=2.12)]
    audit = [AuditFinding(solution="mm_triton", rule="timing-hook", severity="reject", file="kernel.py", line=12, message="patches torch.cuda.synchronize")]
    return RunSummary(created="2026-11-30T08:15:00+00:00", hardware="H200", device="cuda:0", versions={"solbench": "0.1.0", "torch": "2.13.0"},
                      roofs=ROOFS, wall_s=42.0, workloads=workloads, problems=problems, suites=suites, audit=audit,
                      notes=["T_SOL blank for some workloads: their SOL analysis failed on H200"])


def run_folder(tmp_path: Path, summary: RunSummary, name: str = "run") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "summary.json").write_text(summary.to_json(indent=1), encoding="utf-8")
    (folder / "traces.jsonl").write_text("", encoding="utf-8")
    return folder


def test_writes_markdown_and_html_with_every_section(tmp_path):
    folder = run_folder(tmp_path, hand_built_summary())
    paths = write_report(folder)
    assert paths == [folder / MARKDOWN_FILE, folder / HTML_FILE]
    markdown = paths[0].read_text(encoding="utf-8")
    html = paths[1].read_text(encoding="utf-8")
    for heading in ("## Suite scores", "## Leaderboard", "## Problems", "## Audit flags", "## Notes"):
        assert heading in markdown
    assert "| matmul_bf16 | mm_triton | 0.362 | 2.12× |" in markdown
    assert "| rms\\|norm <b> | norm_ref | – |" in markdown  # a pipe in a name stays inside its cell; no score is a dash
    assert "| mm_triton | reject | timing-hook | kernel.py:12 | patches torch.cuda.synchronize |" in markdown
    assert "| matmul_bf16 | mm_triton | w-mm-2 | faster-than-sol |" in markdown
    assert "T_SOL blank for some workloads" in markdown and "H200" in markdown and "torch 2.13.0" in markdown
    leaderboard = html.split('id="leaderboard"')[1].split("</table>")[0]
    assert leaderboard.count("<tr>") == 1 + 4  # header + a row per problem score
    assert html.count('data-plot="roofline"') == 1  # the norm moves data only: no roofline point
    assert "1 workload(s) do no FLOPs (data movement only): not on the roofline" in html
    assert 'data-plot="speedup-vs-sol"' in html and 'data-plot="scores-by-subset"' in html and 'data-plot="scores-by-op_type"' in html


def test_html_is_self_contained_and_escaped(tmp_path):
    folder = run_folder(tmp_path, hand_built_summary())
    html = write_report(folder)[1].read_text(encoding="utf-8")
    assert not re.search(r"""<(script|img|link|iframe)[^>]*\s(src|href)=""", html)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "@import" not in html and "url(http" not in html
    assert "rms|norm <b>" not in html and "rms|norm &lt;b&gt;" in html  # names are text, never markup
    assert html.count("<svg") == html.count("</svg>") >= 3


def test_report_of_a_large_sample_run(tmp_path):
    summary = sample_summary(14, seed=1)
    folder = run_folder(tmp_path, summary)
    html = write_report(folder)[1].read_text(encoding="utf-8")
    sections = re.findall(r'<details class="problem" id="(p\d+-[^"]+)"', html)
    assert len(sections) == len(set(sections)) == 14
    placed = html.count('data-plot="roofline"')
    copies = sum(1 for p in {w.problem for w in summary.workloads} if "_copy_" in p)
    assert placed == 14 - copies  # copies do no FLOPs; every other problem gets its roofline


def test_rewrites_its_own_report_even_after_the_folder_moves(tmp_path):
    folder = run_folder(tmp_path, hand_built_summary())
    write_report(folder)
    (folder / "summary.json").write_text(sample_summary(3).to_json(), encoding="utf-8")  # a new summary in the same folder
    assert "001_attention" in write_report(folder)[0].read_text(encoding="utf-8")
    moved = tmp_path / "moved"
    shutil.move(folder, moved)
    assert write_report(moved)[0].read_text(encoding="utf-8").count("## Leaderboard") == 1


def test_never_overwrites_a_foreign_file(tmp_path):
    folder = run_folder(tmp_path, hand_built_summary())
    (folder / HTML_FILE).write_text("<html>my own notes</html>", encoding="utf-8")
    with pytest.raises(SpecError) as error:
        write_report(folder)
    assert str(error.value) == f"{folder / HTML_FILE}: exists and is not a previous report of this run; move it away (solbench report never overwrites other files)"
    assert (folder / HTML_FILE).read_text(encoding="utf-8") == "<html>my own notes</html>"
    assert not (folder / MARKDOWN_FILE).exists()  # nothing is written before every target is known to be free


def test_never_overwrites_another_runs_report(tmp_path):
    other = run_folder(tmp_path, sample_summary(2), name="other")
    write_report(other)
    folder = run_folder(tmp_path, hand_built_summary())
    shutil.copy(other / MARKDOWN_FILE, folder / MARKDOWN_FILE)
    with pytest.raises(SpecError, match="report.md: exists and is not a previous report of this run"):
        write_report(folder)


def test_written_files_are_readable_like_any_other(tmp_path):
    paths = write_report(run_folder(tmp_path, hand_built_summary()))
    assert all(path.stat().st_mode & 0o044 for path in paths)
    assert not list(paths[0].parent.glob(".report*"))  # no temporary file left


@pytest.mark.parametrize(("setup", "message"), [
    (lambda d: None, "{d}: no such run folder"),
    (lambda d: d.write_text("x"), "{d}: not a folder (expected a run folder holding summary.json)"),
    (lambda d: d.mkdir(), "{d}/summary.json: missing: not a run folder (`solbench run` writes summary.json)"),
    (lambda d: (d.mkdir(), (d / "summary.json").write_text('{"created": ')), "{d}/summary.json: not a valid run summary: Invalid JSON"),
    (lambda d: (d.mkdir(), (d / "summary.json").write_text('{"created": "now"}')), "{d}/summary.json: not a valid run summary: device: Field required"),
])
def test_bad_run_folders_are_one_line_errors(tmp_path, setup, message):
    folder = tmp_path / "run"
    setup(folder)
    with pytest.raises(SpecError) as error:
        load_summary(folder)
    assert len(error.value.issues) == 1
    assert str(error.value).startswith(message.format(d=folder))


def test_rooflines_drawn_in_worker_processes_match_those_drawn_here():
    summary = sample_summary(5, seed=4)
    here, there = gather(summary), gather(summary)
    draw_rooflines(here, workers=1)
    draw_rooflines(there, workers=2)
    assert [s.roofline_svg for s in there.problems] == [s.roofline_svg for s in here.problems]
    assert [s.roofline_legend for s in there.problems] == [s.roofline_legend for s in here.problems]
    assert all(s.roofline_svg is not None for s in here.problems)


def test_the_roofline_worker_process_draws_its_chunk():
    """The worker on its own (draw_in_processes falls back to drawing here, so its equality above
    alone would not show that workers work)."""
    summary = sample_summary(3, seed=4)
    problems = [(s.name, s.workloads) for s in gather(summary).problems]
    job = pickle.dumps({"roofs": summary.roofs, "solution_sets": ["reference", "agent-a", "agent-b"], "problems": problems, "first_key": 7})
    done = subprocess.run([sys.executable, "-m", "solbench.report.roofline_worker"], input=job, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    drawn = pickle.loads(done.stdout)
    assert drawn == draw_rooflines_of(summary.roofs, ["reference", "agent-a", "agent-b"], problems, 7)
