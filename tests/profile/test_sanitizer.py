"""compute-sanitizer's output (written here by hand in its layout), the verdict on a solution's traces,
and when racecheck runs besides memcheck."""

from __future__ import annotations

from pathlib import Path

import pytest

from solbench.data.inline import inline_solution
from solbench.data.trace import Evaluation, Status, Trace
from solbench.data.workload import Workload
from solbench.profile.memcheck import MemcheckVerdict, ToolRun, _failed_without_the_cache
from solbench.profile.racecheck import racecheck_reason
from solbench.profile.sanitizer import ERROR_EXITCODE, parse_output, sanitizer_argv

MEMCHECK = """\
========= COMPUTE-SANITIZER
trial output printed by the solution
========= Invalid __global__ read of size 4 bytes
=========     at k(const float *, float *, int)+0x90
=========     by thread (232,0,0) in block (3,0,0)
=========     Access to 0x7f6b44800fa0 is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f6b44800000 of size 4,000 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: main [0x8d3d] in oob
========= 
========= Invalid __global__ read of size 4 bytes
=========     at k(const float *, float *, int)+0x90
=========     by thread (233,0,0) in block (3,0,0)
=========     Access to 0x7f6b44800fa4 is out of bounds
========= 
========= ERROR SUMMARY: 26 errors
"""
RACECHECK = """\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at race(float *)+0x60
=========     and Read access at race(float *)+0x90 [128 hazards]
========= 
========= Warning: Race reported between Write access at other(float *)+0x10
=========     and Write access at other(float *)+0x20 [4 hazards]
========= 
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
========= ERROR SUMMARY: 1 error
"""
CLEAN = "========= COMPUTE-SANITIZER\ndone 17.66 -66741.6\n========= ERROR SUMMARY: 0 errors\n"
INTERNAL = "========= COMPUTE-SANITIZER\n========= Error: Device not supported. Please refer to the documentation\n"


def test_a_memcheck_report_in_one_line_without_its_backtrace():
    out = parse_output(MEMCHECK)
    assert out.error_summary == 26
    assert [report.severity for report in out.reports] == ["error", "error"]
    first = out.errors[0].text
    assert first == ("Invalid __global__ read of size 4 bytes at k(const float *, float *, int)+0x90 by thread (232,0,0) in block (3,0,0) "
                     "Access to 0x7f6b44800fa0 is out of bounds and is 1 bytes after the nearest allocation at 0x7f6b44800000 of size 4,000 bytes")
    assert "Host Frame" not in first and "backtrace" not in first


def test_racecheck_errors_and_warnings():
    out = parse_output(RACECHECK)
    assert [report.severity for report in out.reports] == ["error", "warning"]
    assert out.race_errors == 1 and out.race_warnings == 1 and out.error_summary == 1
    assert out.errors[0].text.startswith("Error: Race reported between Write access at race(float *)+0x60 and Read access")


def test_clean_output_and_the_sanitizers_own_failure():
    clean = parse_output(CLEAN)
    assert clean.reports == [] and clean.error_summary == 0
    internal = parse_output(INTERNAL)
    assert internal.errors == [] and internal.internal[0].text.startswith("Error: Device not supported")


def test_hazard_mode_reports_are_errors():
    out = parse_output("========= ERROR: Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :\n"
                       "=========     Write Thread (1,0,0) at 0x00000190 in race.cu:3:race(float*)\n=========\n")
    assert out.errors and out.errors[0].text.startswith("ERROR: Potential WAW hazard")


def test_the_sanitizer_command_line():
    argv = sanitizer_argv(Path("/usr/local/cuda/bin/compute-sanitizer"), "racecheck")
    assert argv[argv.index("--tool") + 1] == "racecheck" and argv[argv.index("--error-exitcode") + 1] == str(ERROR_EXITCODE)
    assert "--print-limit" in argv and argv[argv.index("--report-api-errors") + 1] == "no"
    with pytest.raises(ValueError):
        sanitizer_argv(Path("cs"), "everything")


# --- the verdict ------------------------------------------------------------------------------------

def trace(status: Status = Status.PASSED, uuid: str = "w-1") -> Trace:
    workload = Workload.model_validate({"uuid": uuid, "axes": {}, "inputs": {}})
    return Trace(definition="scale", workload=workload, solution="s", evaluation=Evaluation(status=status, log="trial 1 passed"))


def run(tool: str, text: str, codes: list[int | None], seconds: float = 4.0, status: str = "PASSED") -> ToolRun:
    return ToolRun(tool, seconds, build_seconds=1.5, status=status, exit_codes=codes, output=parse_output(text))


def test_a_report_makes_passed_traces_incorrect_with_the_first_report():
    verdict = MemcheckVerdict("w-small-uuid", [run("memcheck", MEMCHECK, [ERROR_EXITCODE], status="RUNTIME_ERROR")])  # the sanitizer stops the kernel
    assert verdict.result == "errors"
    first, second, failed = trace(), trace(uuid="w-2"), trace(Status.TIMEOUT, "w-3")
    for each in (first, second, failed):
        verdict.apply(each)
    for each in (first, second):
        assert each.evaluation.status == Status.INCORRECT_NUMERICAL
        assert each.evaluation.log.startswith("INCORRECT [memcheck]: compute-sanitizer memcheck on workload w-small- reported: Invalid __global__ read")
        assert "out of bounds" in each.evaluation.log.splitlines()[0] and each.evaluation.log.endswith("trial 1 passed")
        assert each.evaluation.flags == ["memcheck"]
        assert each.evaluation.environment["memcheck"]["result"] == "errors"
    assert failed.evaluation.status == Status.TIMEOUT and "INCORRECT [memcheck]" in failed.evaluation.log  # a failure keeps its own status
    assert first.evaluation.phases == {"memcheck": 4.0} and second.evaluation.phases is None  # the cost, once per solution


def test_the_exit_code_alone_is_enough_and_a_clean_run_is_a_note():
    by_code = MemcheckVerdict("w", [run("memcheck", "", [ERROR_EXITCODE])])
    assert by_code.result == "errors" and "exited with its error code" in by_code.line()
    clean = MemcheckVerdict("w", [run("memcheck", CLEAN, [0], 3.0), run("racecheck", CLEAN, [0], 5.0)], racecheck="a Triton kernel")
    assert clean.result == "clean"
    passed = trace()
    clean.apply(passed)
    assert passed.evaluation.status == Status.PASSED
    assert passed.evaluation.log.endswith("memcheck: clean (memcheck 3.0 s (build 1.5 s), racecheck 5.0 s (build 1.5 s), compute-sanitizer on workload w)")
    assert passed.evaluation.environment["memcheck"]["seconds"] == {"memcheck": 3.0, "racecheck": 5.0}
    assert passed.evaluation.environment["memcheck"]["racecheck_because"] == "a Triton kernel"


@pytest.mark.parametrize("codes, text, reason", [([-9], "", "killed by SIGKILL"), ([137], "", "killed by SIGKILL"), ([None], "", "did not end in time"),
                                                 ([3], "", "exit code 3"), ([], "", "no worker started"), ([1], INTERNAL, "Device not supported")])
def test_a_sanitizer_that_did_not_finish_never_passes(codes, text, reason):
    verdict = MemcheckVerdict("w", [run("memcheck", text, codes)])
    assert verdict.result == "incomplete"
    passed = trace()
    verdict.apply(passed)
    assert passed.evaluation.status == Status.RUNTIME_ERROR
    assert passed.evaluation.log.startswith("RUNTIME_ERROR [memcheck]") and reason in passed.evaluation.log.splitlines()[0]


def test_a_sanitized_evaluation_that_did_not_pass_judges_nothing():
    verdict = MemcheckVerdict("w", [ToolRun("memcheck", 9.0, status="COMPILE_ERROR", message="build: nvcc timed out", exit_codes=[0],
                                            output=parse_output(CLEAN))])
    assert verdict.result == "incomplete"
    passed = trace()
    verdict.apply(passed)
    assert passed.evaluation.status == Status.RUNTIME_ERROR
    assert "under the sanitizer the evaluation ended COMPILE_ERROR: build: nvcc timed out" in passed.evaluation.log.splitlines()[0]


@pytest.mark.parametrize("status, codes, text, again", [("RUNTIME_ERROR", [0], CLEAN, True), ("RUNTIME_ERROR", [ERROR_EXITCODE], MEMCHECK, False),
                                                       ("RUNTIME_ERROR", [-9], "", False), ("PASSED", [0], CLEAN, False), ("TIMEOUT", [1], INTERNAL, False)])
def test_a_failure_without_the_caching_allocator_is_tried_again_with_it(status, codes, text, again):
    assert _failed_without_the_cache(run("memcheck", text, codes, status=status)) is again


def test_skipped_changes_no_status():
    verdict = MemcheckVerdict("w", skipped="the static analysis refused the solution (no code of it runs)")
    hacked = trace(Status.REWARD_HACK)
    verdict.apply(hacked)
    assert hacked.evaluation.status == Status.REWARD_HACK and "not run" in hacked.evaluation.log


# --- racecheck or not -------------------------------------------------------------------------------

CUDA_SHARED = "__global__ void k(float* y) { __shared__ float s[32]; s[threadIdx.x] = 1; __syncthreads(); y[threadIdx.x] = s[31 - threadIdx.x]; }"
CUDA_PLAIN = "__global__ void k(const float* x, float* y, int n) { int i = threadIdx.x; if (i < n) y[i] = 2 * x[i]; }"
TRITON = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x, y, n, B: tl.constexpr):\n    pass\n\ndef run(x, y):\n    pass\n"
TORCH = "import torch\n\ndef run(x, y):\n    torch.mul(x, 2, out=y)\n"
INLINE = 'import torch\nfrom torch.utils.cpp_extension import load_inline\nSOURCE = """' + CUDA_SHARED + '"""\n\ndef run(x, y):\n    pass\n'


@pytest.mark.parametrize("language, entry, source, why", [
    ("cuda_cpp", "k.cu::run", CUDA_SHARED, "declares __shared__"),
    ("cuda_cpp", "k.cu::run", CUDA_PLAIN, None),
    ("triton", "k.py::run", TRITON, "Triton kernel"),
    ("pytorch", "k.py::run", TRITON, "Triton kernel"),  # a Triton kernel under a pytorch label
    ("pytorch", "k.py::run", TORCH, None),
    ("pytorch", "k.py::run", INLINE, "declares __shared__"),  # CUDA in a Python string (load_inline)
    ("cutlass", "k.cu::run", CUDA_PLAIN, "cutlass kernels"),
])
def test_racecheck_for_kernels_that_may_use_shared_memory(language, entry, source, why):
    solution = inline_solution("s", "p", language, entry, {entry.split("::")[0]: source})
    reason = racecheck_reason(solution)
    assert (reason is None) if why is None else (why in reason)
