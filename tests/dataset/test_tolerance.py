"""`solbench calibrate-tolerance` (solbench.dataset.tolerance): real references on the CPU, calibrated against
their own fp64 runs; the new tolerances hold on seeds the calibration never saw, are written back with every
other byte of the workload file unchanged, and bad input is one line and a non-zero exit."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from solbench.bench.correctness import compare_outputs
from solbench.bench.precision import oracle_arguments
from solbench.cli import app
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems
from solbench.data.reference import reference_module
from solbench.data.workload import Tolerance
from solbench.dataset import bundled_problems_path
from solbench.dataset.tolerance import calibrate_workload, round_up, tolerance_edits

BF16_PROBLEM = "silu_and_mul_llama3_8b"
BF16_SMALLEST = "f2f3faa3-b5fe-49d7-88b4-71adb1f620d0"  # num_tokens = 1
FRESH_SEEDS = (424242, 77)  # never used by a calibration here (those use seed 0)
VALUES = re.compile(r'("max_(?:atol|rtol)": )[-+0-9.eE]+')

FP32_DEFINITION = {
    "name": "matmul_fp32_small",
    "description": "An fp32 matmul: its error against fp64 grows with K.",
    "axes": {"M": {"type": "var"}, "K": {"type": "const", "value": 256}, "N": {"type": "const", "value": 32}},
    "inputs": {"a": {"shape": ["M", "K"], "dtype": "float32"}, "b": {"shape": ["K", "N"], "dtype": "float32"}},
    "outputs": {"c": {"shape": ["M", "N"], "dtype": "float32"}},
    "reference": "import torch\n\n\ndef run(a, b):\n    return a @ b\n",
}
FP32_LINES = [  # the first without a tolerance (defaults), the second compact: both styles must survive
    '{"uuid": "mm-a", "axes": {"M": 4}, "inputs": {"a": {"type": "random"}, "b": {"type": "random"}}}',
    '{"uuid":"mm-b","axes":{"M":8},"inputs":{"a":{"type":"random"},"b":{"type":"random"}},"tolerance":{"max_rtol":0.001,"required_matched_ratio":1.0}}',
]


def _invoke(*args: str):
    return CliRunner().invoke(app, ["calibrate-tolerance", *args], env={"COLUMNS": "200"})


def _bf16_copy(tmp_path: Path) -> Path:
    folder = tmp_path / BF16_PROBLEM
    shutil.copytree(bundled_problems_path() / BF16_PROBLEM, folder)
    return folder


def _fp32_problem(tmp_path: Path) -> Path:
    folder = tmp_path / "matmul_fp32_small"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(FP32_DEFINITION, indent=2) + "\n")
    (folder / "workload.jsonl").write_text("\n".join(FP32_LINES) + "\n")
    return folder


def _native_and_fp64(problem, workload, seed: int, trial: int) -> tuple[dict, dict]:
    run = reference_module(problem.definition).run
    inputs = list(generate_inputs(problem, workload, seed=seed, trial=trial).values())
    names = list(problem.definition.outputs)

    def outputs(result):
        return dict(zip(names, result if isinstance(result, (tuple, list)) else [result]))

    return outputs(run(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])), outputs(run(*oracle_arguments(inputs)))


def _holds_on_fresh_seeds(problem, workload, tolerance: Tolerance) -> list[bool]:
    results = []
    for seed in FRESH_SEEDS:
        native, fp64 = _native_and_fp64(problem, workload, seed, 0)
        results.append(compare_outputs(native, fp64, problem.definition.outputs, tolerance).passed)
    return results


def test_bf16_tolerances_are_written_back_alone_and_hold_on_fresh_seeds(tmp_path: Path) -> None:
    folder = _bf16_copy(tmp_path)
    before = (folder / "workload.jsonl").read_text()
    result = _invoke(str(folder), "--workloads", "smallest:1", "--runs", "3", "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert "1 workload line(s) updated" in result.stdout
    after = (folder / "workload.jsonl").read_text()

    old_lines, new_lines = before.split("\n"), after.split("\n")
    assert len(old_lines) == len(new_lines)
    changed = [i for i, (old, new) in enumerate(zip(old_lines, new_lines)) if old != new]
    assert len(changed) == 1 and BF16_SMALLEST in new_lines[changed[0]]
    old, new = old_lines[changed[0]], new_lines[changed[0]]
    assert VALUES.sub(r"\1X", old) == VALUES.sub(r"\1X", new)  # only the two values differ, every other byte kept

    problem = load_problems([folder])[0]
    workload = problem.workload(BF16_SMALLEST)
    tolerance = workload.effective_tolerance
    assert 0 < tolerance.max_atol <= 0.05
    assert 2**-9 <= tolerance.max_rtol <= 0.05
    assert tolerance.required_matched_ratio == 1.0  # the other fields as they were
    assert _holds_on_fresh_seeds(problem, workload, tolerance) == [True, True]
    # not vacuous: a tenth of it rejects the very same bf16 reference
    tighter = tolerance.model_copy(update={"max_atol": tolerance.max_atol / 10, "max_rtol": tolerance.max_rtol / 10})
    assert _holds_on_fresh_seeds(problem, workload, tighter) == [False, False]


def test_fp32_tolerances_are_much_tighter_than_bf16_and_hold(tmp_path: Path) -> None:
    folder = _fp32_problem(tmp_path)
    result = _invoke(str(folder), "--runs", "3", "--device", "cpu")
    assert result.exit_code == 0, result.output
    new_lines = (folder / "workload.jsonl").read_text().split("\n")
    assert new_lines[2:] == [""]
    first, second = json.loads(new_lines[0]), json.loads(new_lines[1])
    assert list(first) == ["uuid", "axes", "inputs", "tolerance"] and list(first["tolerance"]) == ["max_atol", "max_rtol"]
    assert new_lines[0].startswith(FP32_LINES[0][:-1] + ', "tolerance": {"max_atol": ')  # appended in the file's style
    assert list(second["tolerance"]) == ["max_rtol", "required_matched_ratio", "max_atol"]  # order kept, the absent key appended
    atol, rtol = second["tolerance"]["max_atol"], second["tolerance"]["max_rtol"]
    assert new_lines[1] == FP32_LINES[1].replace('"max_rtol":0.001', f'"max_rtol":{rtol!r}').replace('1.0}}', f'1.0,"max_atol":{atol!r}}}}}')

    fp32 = load_problems([folder])[0]
    bf16 = load_problems([bundled_problems_path() / BF16_PROBLEM])[0]
    bf16_tolerance = calibrate_workload(bf16, bf16.workload(BF16_SMALLEST), runs=2, device="cpu").tolerance
    assert bf16_tolerance is not None
    for workload in fp32.workloads:
        tolerance = workload.effective_tolerance
        assert 0 < tolerance.max_atol < 1e-3 and 0 < tolerance.max_rtol < 1e-5
        assert tolerance.max_rtol * 1000 < bf16_tolerance.max_rtol
        assert (tolerance.max_atol + tolerance.max_rtol) * 100 < bf16_tolerance.max_atol + bf16_tolerance.max_rtol  # allowed at |ref| = 1
        assert _holds_on_fresh_seeds(fp32, workload, tolerance) == [True, True]
        # the fp32 matmul's rounding is real: without the atol it fails near zero (cancellation)
        assert False in _holds_on_fresh_seeds(fp32, workload, tolerance.model_copy(update={"max_atol": 0.0}))


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    folder = _bf16_copy(tmp_path)
    path = folder / "workload.jsonl"
    before, stamp = path.read_bytes(), path.stat().st_mtime_ns
    result = _invoke(str(folder), "--workloads", "smallest:1", "--runs", "1", "--device", "cpu", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "new atol" in result.stdout and BF16_SMALLEST[:8] in result.stdout and "nothing written" in result.stdout
    assert path.read_bytes() == before and path.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in folder.iterdir()) == ["definition.json", "workload.jsonl"]  # no temporary left


def test_non_determinism_is_measured_and_folded_in(tmp_path: Path) -> None:
    definition = dict(FP32_DEFINITION, name="noisy", reference="import torch\n\n\ndef run(a, b):\n    c = a @ b\n    return c + 1e-3 * torch.randn_like(c)\n")
    folder = tmp_path / "noisy"
    folder.mkdir()
    (folder / "definition.json").write_text(json.dumps(definition))
    (folder / "workload.jsonl").write_text(FP32_LINES[0] + "\n")
    problem = load_problems([folder])[0]
    calibration = calibrate_workload(problem, problem.workloads[0], runs=2, device="cpu")
    assert calibration.failure is None
    assert 1e-3 < calibration.nondeterminism < 0.05
    assert calibration.max_atol >= 1.25 * calibration.nondeterminism
    assert any("non-deterministic" in note for note in calibration.notes)


def test_a_bad_path_and_py_problems_are_one_line_errors(tmp_path: Path) -> None:
    missing = _invoke(str(tmp_path / "nowhere"), "--device", "cpu")
    assert missing.exit_code == 1
    assert missing.stderr.strip().splitlines() == [f"{tmp_path / 'nowhere'}: does not exist"]

    inline = tmp_path / "inline_problem.py"
    inline.write_text("from solbench.data.inline import inline_problem\n\n"
                      "PROBLEM = inline_problem('double', 'def run(x):\\n    return 2 * x\\n', {'x': ([4], 'float32')}, {'y': ([4], 'float32')})\n")
    refused = _invoke(str(inline), "--device", "cpu")
    assert refused.exit_code == 1
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{inline}: ") and "no workload file" in lines[0]

    dataset = tmp_path / "dataset"
    dataset.mkdir()
    shutil.copy(Path(__file__).parents[1] / "fixtures" / "kernelbench" / "09_elementwise_chain.py", dataset)
    kernelbench = _invoke(str(dataset), "--device", "cpu")
    assert kernelbench.exit_code == 1
    lines = kernelbench.stderr.strip().splitlines()
    assert len(lines) == 1 and "KernelBench-style file has no workload file" in lines[0] and "09_elementwise_chain.py" in lines[0]


def test_bad_options_exit_non_zero_without_writing(tmp_path: Path) -> None:
    folder = _bf16_copy(tmp_path)
    before = (folder / "workload.jsonl").read_bytes()
    for args in (["--workloads", "largest:2"], ["--runs", "0"], ["--input-profile", "gaussian"]):
        result = _invoke(str(folder), "--device", "cpu", *args)
        assert result.exit_code == 2, (args, result.output)
        assert "Traceback" not in result.output
    assert (folder / "workload.jsonl").read_bytes() == before


@pytest.mark.parametrize(("line", "expected"), [
    ('{"uuid": "u", "tolerance": {"max_atol": 0.01, "max_rtol": 0.02, "allow_negative_inf": false}}',
     '{"uuid": "u", "tolerance": {"max_atol": 0.5, "max_rtol": 0.25, "allow_negative_inf": false}}'),
    ('{"uuid": "u", "tolerance": null, "x": 1}', '{"uuid": "u", "tolerance": {"max_atol": 0.5, "max_rtol": 0.25}, "x": 1}'),
    ('{"uuid": "u", "tolerance": {}}', '{"uuid": "u", "tolerance": {"max_atol": 0.5, "max_rtol": 0.25}}'),
    ('{"definition": "d", "workload": {"uuid": "u", "tolerance": {"max_rtol": 1}}, "tolerance": "not this one"}\r',
     '{"definition": "d", "workload": {"uuid": "u", "tolerance": {"max_rtol": 0.25, "max_atol": 0.5}}, "tolerance": "not this one"}\r'),
    ('{"uuid": "\\u00e9 \\"q\\" ü", "tolerance": {"max_atol": 1e-05}}', '{"uuid": "\\u00e9 \\"q\\" ü", "tolerance": {"max_atol": 0.5, "max_rtol": 0.25}}'),
])
def test_tolerance_edits_touch_only_the_two_values(line: str, expected: str) -> None:
    assert tolerance_edits(line, 0.5, 0.25) == expected


def test_round_up_keeps_three_digits_and_never_goes_below() -> None:
    assert round_up(2.0**-7) == 0.00782
    assert round_up(0.0123) == 0.0123
    assert round_up(1.0000001e-6) == 1.01e-6
    assert round_up(0.0) == 0.0
    for value in (3.14159e-9, 2.0**-20, 0.999999, 123456.0):
        assert value <= round_up(value) <= value * 1.01
