"""The optimiser's feedback slots for `--memcheck` and `--profile`: the sanitizer's verdict as the traces
carry it, and a profile document as `solbench profile` makes it, in what the proposer is sent."""

from __future__ import annotations

import json
from pathlib import Path

from solbench.data.trace import Trace
from solbench.optimize.feedback import memcheck_feedback, profile_feedback
from solbench.profile.model import load_profile

PROFILE = {  # a profile document as solbench profile writes it (solbench.profile.model)
    "format": "solbench-profile/1", "problem": "silu_and_mul_llama3_8b", "solution": "attempt-3", "workload": "e090157f-4bce", "status": "PASSED",
    "latency_ms": 0.0921, "sol": {"hardware": "H200", "policy": "relaxed", "t_sol_ms": 0.0734, "t_roofline_ms": 0.0734, "t_floor_ms": 0.0009, "floor_bound": False,
            "bottleneck": "memory", "compulsory_bytes": 352321536, "bytes_fused": 352321536, "peak_bandwidth_bytes_per_s": 4.8e12},
    "kernels": [{"index": 0, "name": "silu_and_mul_kernel", "duration_ms": 0.089, "dram_read_bytes": 235e6, "dram_write_bytes": 118e6}],
    "gap": {"t_over_t_sol": 1.2548, "gaps": 1.01, "extra_bytes": 1.002, "bandwidth": 1.25, "remainder": 0.992},
}

REPORT = "Invalid __global__ read of size 4 bytes at k(const float *, float *, int)+0x90 by thread (232,0,0) in block (3,0,0)"


def trace(memcheck: dict | None) -> Trace:
    environment = {"device": "NVIDIA H200"} | ({"memcheck": memcheck} if memcheck is not None else {})
    return Trace.model_validate({"definition": "vector_scale", "solution": "unmasked", "workload": {"uuid": "w0", "axes": {"N": 1000}, "inputs": {}},
                                 "evaluation": {"status": "INCORRECT_NUMERICAL", "log": "INCORRECT [memcheck]: ...", "environment": environment,
                                                "timestamp": "2026-12-04T00:00:00+00:00"}})


def test_the_sanitizers_first_report_reaches_the_proposer_and_a_clean_run_says_clean():
    found = memcheck_feedback([trace(None), trace({"result": "errors", "workload": "w0", "tools": ["memcheck"], "seconds": {"memcheck": 4.1},
                                                   "tool": "memcheck", "first_report": REPORT, "line": f"INCORRECT [memcheck]: {REPORT}"})])
    assert found is not None and not found.clean and found.tool == "memcheck" and found.first_report == REPORT
    assert found.model_dump()["seconds"] == {"memcheck": 4.1}
    clean = memcheck_feedback([trace({"result": "clean", "workload": "w0", "tools": ["memcheck", "racecheck"], "line": "memcheck: clean"})])
    assert clean is not None and clean.clean and clean.first_report is None
    assert memcheck_feedback([trace(None)]) is None  # not asked for: no slot


def test_a_profile_document_becomes_the_kernels_and_gap_factors_the_proposer_sees(tmp_path: Path):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(PROFILE))
    sent = profile_feedback(load_profile(path)).model_dump(mode="json")
    assert sent["kernels"][0]["name"] == "silu_and_mul_kernel" and sent["kernels"][0]["dram_read_bytes"] == 235e6
    assert sent["gap"]["bandwidth"] == 1.25 and sent["gap"]["t_over_t_sol"] == 1.2548
    assert sent["sol"]["bottleneck"] == "memory" and sent["workload"] == "e090157f-4bce"
    json.dumps(sent)  # what goes to the endpoint
