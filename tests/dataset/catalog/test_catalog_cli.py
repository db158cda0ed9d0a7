"""The three commands end to end on real problem folders: files written, exit codes, one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from solbench.cli import app
from solbench.data.loaders import load_problems
from solbench.dataset.catalog.characterise import load_folder, read_index


def invoke(*args: str):
    return CliRunner().invoke(app, ["dataset", *args], env={"COLUMNS": "200"})


def one_line_error(result, *words: str) -> None:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    lines = [line for line in result.output.splitlines() if all(word in line for word in words)]
    assert lines, result.output


@pytest.fixture
def small_set(tmp_path: Path, bundled_copy: Path) -> Path:
    folder = tmp_path / "set"
    for name in ("rmsnorm_llama3_8b", "layernorm_backward_gpt2_medium", "gemm_bf16_llama3_8b_qkv_proj"):
        shutil.copytree(bundled_copy / name, folder / name)
    return folder


def test_characterise_writes_the_index_and_refuses_a_foreign_file(small_set: Path, tmp_path: Path) -> None:
    result = invoke("characterise", str(small_set), "-j", "1")
    assert result.exit_code == 0, result.output
    assert "characterised 3 problems (0 unchanged, 0 with a failed analysis)" in result.output
    index = read_index(small_set / "index.json")
    assert [row.name for row in index.problems] == ["gemm_bf16_llama3_8b_qkv_proj", "layernorm_backward_gpt2_medium", "rmsnorm_llama3_8b"]
    first = (small_set / "index.json").read_bytes()
    again = invoke("characterise", str(small_set), "-j", "1", "--fresh")
    assert again.exit_code == 0 and (small_set / "index.json").read_bytes() == first  # deterministic
    assert "3 unchanged" in invoke("characterise", str(small_set), "-j", "1").output
    assert len(load_folder(small_set)) == 3  # the catalogue's own loading skips its index.json

    foreign = tmp_path / "mine.json"
    foreign.write_text("{}\n")
    refused = invoke("characterise", str(small_set), "-o", str(foreign))
    one_line_error(refused, str(foreign), "refusing to overwrite", "--force")
    assert foreign.read_text() == "{}\n"
    assert invoke("characterise", str(small_set), "-o", str(foreign), "--force", "-j", "1").exit_code == 0
    assert read_index(foreign).problems == index.problems


def test_characterise_largest_workload_is_compute_bound(small_set: Path, tmp_path: Path) -> None:
    result = invoke("characterise", str(small_set), "-o", str(tmp_path / "largest.json"), "--workload", "largest", "-j", "1")
    assert result.exit_code == 0, result.output
    rows = {row.name: row for row in read_index(tmp_path / "largest.json").problems}
    assert rows["gemm_bf16_llama3_8b_qkv_proj"].sol.bound == "compute"
    assert rows["rmsnorm_llama3_8b"].sol.bound == "memory"


def test_missing_dir_and_bad_options_are_one_line_errors(tmp_path: Path, small_set: Path) -> None:
    missing = tmp_path / "nowhere"
    one_line_error(invoke("characterise", str(missing)), str(missing), "does not exist")
    one_line_error(invoke("stats", str(missing)), str(missing), "does not exist")
    one_line_error(invoke("sample", str(missing), "--n", "3", "--dry-run"), str(missing), "does not exist")
    one_line_error(invoke("sample", str(small_set), "--n", "2", "--share", "category=gemm", "--dry-run"), "--share", "value:share")
    one_line_error(invoke("sample", str(small_set), "--n", "2", "--share", "category:gemm=0.5", "--dry-run"), "--share")
    one_line_error(invoke("sample", str(small_set), "--n", "2", "--strata", "colour", "--dry-run"), "--strata", "unknown dimension 'colour'")
    one_line_error(invoke("sample", str(small_set), "--n", "2"), "--output", "--dry-run")
    one_line_error(invoke("stats", str(small_set), "--target", "direction=backward:2"), "--target", "between 0 and 1")
    one_line_error(invoke("characterise", str(small_set), "--workload", "biggest"), "--workload", "expected one of median, smallest, largest")
    assert not (small_set / "index.json").exists()  # nothing was analysed for a bad option


def test_stats_table_plot_and_targets(synthetic_index, synthetic_subset: Path, tmp_path: Path) -> None:
    plot = tmp_path / "figure.svg"
    result = invoke("stats", str(synthetic_subset), "--plot", str(plot), "--target", "domain=llm:0.5", "--target", "direction=backward:0.05")
    assert result.exit_code == 0, result.output
    assert "18 problems" in result.output and "gemm" in result.output and "ok" in result.output
    assert plot.read_text().lstrip().startswith("<?xml") and "<svg" in plot.read_text()
    first = plot.read_bytes()
    short = invoke("stats", str(synthetic_subset), "--plot", str(plot), "--target", "category=attention:0.30,moe:0.12",
                   "--target", "direction=backward:0.20")
    assert short.exit_code == 1
    assert "short of target: category=attention is 5.6% (1 of 18), target 30.0%" in short.output
    assert "short of target: direction=backward is 5.6% (1 of 18), target 20.0%" in short.output
    assert "short of target: category=moe is 11.1% (2 of 18), target 12.0%" in short.output
    assert plot.read_bytes() == first  # the same figure, byte for byte
    foreign = tmp_path / "drawing.svg"
    foreign.write_text("<svg>mine</svg>")
    one_line_error(invoke("stats", str(synthetic_subset), "--plot", str(foreign)), str(foreign), "refusing to overwrite")
    assert foreign.read_text() == "<svg>mine</svg>"


def test_stats_characterises_a_folder_without_index(small_set: Path) -> None:
    result = invoke("stats", str(small_set), "-j", "1")
    assert result.exit_code == 0, result.output
    assert "no index yet" in result.output and (small_set / "index.json").is_file() and (small_set / "stats.svg").is_file()
    assert "backward" in result.output and "33.3%" in result.output


def test_sample_copies_the_chosen_folders_and_reports_duplicates(synthetic_index, synthetic_subset: Path, tmp_path: Path) -> None:
    out = tmp_path / "sample"
    args = ("sample", str(synthetic_subset), "--n", "6", "--strata", "category", "--share", "category=gemm:0.5", "--seed", "7")
    dry = invoke(*args, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "kept L1/001_gemm_bf16_llama3_8b_qkv, standing for L1/002_gemm_bf16_llama3_8b_gate_up, L1/003_gemm_bf16_llama3_8b_down" in dry.output
    assert "stratum gemm: wanted 3.0, has only 3" not in dry.output
    listed = [line for line in dry.output.splitlines() if line.startswith(("L1/", "L2/", "Quant/", "FlashInfer-Bench/"))]
    assert len(listed) == 6 and not out.exists()
    result = invoke(*args, "-o", str(out))
    assert result.exit_code == 0, result.output
    copied = sorted(p.parent.relative_to(out).as_posix() for p in out.rglob("definition.json"))
    assert copied == sorted(listed)
    assert sum(1 for path in copied if "gemm" in path) == 3
    for path in copied:
        assert (out / path / "workload.jsonl").read_bytes() == (synthetic_subset / path / "workload.jsonl").read_bytes()
    assert len(load_problems([out])) == 6
    one_line_error(invoke(*args, "-o", str(out)), str(out), "not empty")
    (tmp_path / "file").write_text("x")
    one_line_error(invoke(*args, "-o", str(tmp_path / "file")), "file", "not a folder")


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.parametrize("layout, expected", [
    ("flashinfer_trace", ["gemm_n16_k8", "rmsnorm_h8"]),  # written as problem folders, with the safetensors they read
    ("valid", ["dataset/L1/row_softmax", "dataset/L1/vector_add", "dataset/L2/fused_linear_relu.py", "dataset/scale_shift",
               "problem_with_reference_file"]),  # folders and a KernelBench-style file, copied as they are
])
def test_sample_of_other_layouts_loads_on_its_own(tmp_path: Path, layout: str, expected: list[str]) -> None:
    index = tmp_path / "index.json"  # never written into the fixtures
    out = tmp_path / "out"
    result = invoke("sample", str(FIXTURES / layout), "--index", str(index), "--n", "9", "-o", str(out), "-j", "1")
    assert result.exit_code == 0, result.output
    assert "took them all" in result.output
    found = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.name == "definition.json" or p.suffix == ".py" and p.name != "reference.py")
    assert found == sorted(f"{e}/definition.json" if not e.endswith(".py") else e for e in expected)
    original = {p.name: p for p in load_problems([FIXTURES / layout])}
    copied = load_problems([out])
    assert sorted(p.name for p in copied) == sorted(original)
    for problem in copied:
        assert [w.uuid for w in problem.workloads] == [w.uuid for w in original[problem.name].workloads]


def _package_files(folder: Path) -> set[Path]:
    return {path for path in folder.rglob("*") if path.is_file() and "__pycache__" not in path.parts}


def test_a_bundled_set_is_read_by_name_and_nothing_is_written_into_the_package() -> None:
    from solbench.dataset import bundled_set_path

    folder = bundled_set_path("problems")
    before = _package_files(folder)
    stats = invoke("stats", "solbench:problems", "-j", "1")
    assert stats.exit_code == 0, stats.output
    assert f"{folder}: 13 problems" in stats.output and "the index is kept in memory" in stats.output
    sample = invoke("sample", "solbench:problems", "--n", "3", "--dry-run", "-j", "1")
    assert sample.exit_code == 0, sample.output
    assert "sample of 3 from" in sample.output
    one_line_error(invoke("characterise", "solbench:problems"), str(folder), "inside the installed solbench package", "-o FILE")
    one_line_error(invoke("stats", "solbench:nonesuch"), "no bundled set named 'nonesuch'")
    assert _package_files(folder) == before  # no index.json, no stats.svg
