"""benchmarks/tolerance_audit.py: a tolerance below the reference's own rounding error (against an fp64
run of it) is found; one that holds it is not; a problem too large for the memory limit is a skip line."""

from __future__ import annotations

from solbench.data.inline import inline_problem

# a bf16 GEMM chain with a long reduction: the intermediate rounding to bf16 leaves the result a few
# tenths of a percent off fp64 on some elements
REFERENCE = "import torch\n\n\ndef run(x, w, v):\n    return (x @ w).relu() @ v\n"
SHAPES = {"x": (["m", "k"], "bfloat16"), "w": (["k", "k"], "bfloat16"), "v": (["k", "k"], "bfloat16")}


def chain(tolerance: dict) -> object:
    return inline_problem("bf16_chain", REFERENCE, SHAPES, {"y": (["m", "k"], "bfloat16")}, axes={"m": {"type": "var"}, "k": {"type": "const", "value": 1024}},
                          workload_axes=[{"m": 16}], tolerance={"max_error_cap": None, "allow_negative_inf": False, **tolerance})


def test_a_tolerance_tighter_than_the_references_own_error_is_over(tolerance_audit) -> None:
    tight = tolerance_audit.audit(chain({"max_atol": 1e-3, "max_rtol": 1e-3, "required_matched_ratio": 0.999}), 2**30, seed=1)
    assert tight["over"] and tight["outside_share"]["y"] > 0.001 and tight["allowed_share"] == 0.001
    # the outputs are in the hundreds (one bf16 step there is 1 to 4): atol 20 holds the chain's rounding
    loose = tolerance_audit.audit(chain({"max_atol": 20.0, "max_rtol": 0.05, "required_matched_ratio": 0.999}), 2**30, seed=1)
    assert not loose["over"] and loose["outside_share"]["y"] == 0.0
    skipped = tolerance_audit.audit(chain({"max_atol": 1e-3, "max_rtol": 1e-3, "required_matched_ratio": 0.999}), 1024, seed=1)
    assert skipped["skipped"].startswith("inputs and their fp64 copies") and "over" not in skipped
