"""The verdicts are pure: each is tested on plain answers and tensors, without a worker."""

from __future__ import annotations

import pytest
import torch

from solbench.bench import verdicts
from solbench.bench.messages import ExpectAnswer, RunAnswer, TimeAnswer
from solbench.bench.verdicts import Outcome
from solbench.data.trace import Performance, Status


def run_answer(**fields) -> RunAnswer:
    return RunAnswer(outputs={}, devices={"y": "cpu"}, returned=["y"], **fields)


def test_aliasing_and_in_place_changes_are_allowed_only_where_the_reference_does_them():
    verdicts.memory_behaviour(run_answer(aliased_outputs=["y<-cache"]), ExpectAnswer(aliased_outputs=["y<-cache"]))
    with pytest.raises(Outcome, match=r"\[output-aliases-input\]: output 'y' shares memory with input 'x', which the reference's output does not"):
        verdicts.memory_behaviour(run_answer(aliased_outputs=["y<-x"]), ExpectAnswer(aliased_outputs=["y<-cache"]))  # another input
    with pytest.raises(Outcome) as raised:
        verdicts.memory_behaviour(run_answer(modified_inputs=["x"]), ExpectAnswer())
    assert raised.value.status == Status.REWARD_HACK and raised.value.message.startswith("REWARD_HACK [input-modified]: input 'x'")
    timed = TimeAnswer(times_ms=[1.0], method="wall", checked={"0": {}}, calls=1, aliased_outputs=["y<-cache"])
    verdicts.memory_behaviour(timed, ExpectAnswer(aliased_outputs=["y<-cache"]), timed=True)  # a KV-cache write, as the reference's
    with pytest.raises(Outcome, match=r"\[output-aliases-input\]: output 'y' shares memory with input 'cache' in a timed call"):
        verdicts.memory_behaviour(timed, ExpectAnswer(), timed=True)


def test_outputs_on_another_device_type_are_a_runtime_error():
    verdicts.output_devices(RunAnswer(outputs={}, devices={"y": "cuda:1"}, returned=["y"]), "cuda:0")
    with pytest.raises(Outcome) as raised:
        verdicts.output_devices(RunAnswer(outputs={}, devices={"y": "cpu"}, returned=["y"]), "cuda")
    assert raised.value.status == Status.RUNTIME_ERROR


def test_lowered_precision_flags_are_refused_under_strict_and_noted_under_relaxed():
    changes, initial = {"torch.backends.cuda.matmul.allow_tf32": True}, {"torch.backends.cuda.matmul.allow_tf32": False}
    log: list[str] = []
    verdicts.precision_flags(changes, initial, "relaxed", "during trial 1", log)
    verdicts.precision_flags(changes, initial, "relaxed", "during trial 1", log)
    assert len(log) == 1 and "allowed under the relaxed policy" in log[0]
    with pytest.raises(Outcome, match=r"REWARD_HACK \[precision-flag\]"):
        verdicts.precision_flags(changes, initial, "strict", "during trial 1", [])


def test_precision_against_the_oracle_labels_or_refuses():
    torch.manual_seed(0)
    oracle = torch.randn(4096, dtype=torch.float64)
    reference = oracle.float()
    log: list[str] = []
    label = verdicts.precision({"y": reference.clone()}, {"y": reference}, {"y": oracle}, None, ["y"], "strict", log)
    assert label == "float32"
    with pytest.raises(Outcome, match=r"REWARD_HACK \[precision-downgrade\]"):
        verdicts.precision({"y": reference.bfloat16().float()}, {"y": reference}, {"y": oracle}, None, ["y"], "strict", [])
    assert verdicts.precision({"y": reference}, {"y": reference}, None, "MemoryError: too big", ["y"], "strict", log) is None
    assert log[-1] == "precision not assessed: no fp64 run of the reference (MemoryError: too big)"


def test_faster_than_sol_is_a_finding_and_slower_is_not():
    assert verdicts.faster_than_sol(Performance(latency_ms=2.0, sol_ms=1.0), "H200") is None
    finding = verdicts.faster_than_sol(Performance(latency_ms=0.5, sol_ms=1.0), "H200")
    assert finding.startswith("REWARD_HACK [faster-than-sol]: median 0.5 ms is below T_SOL 1 ms of H200")
    assert verdicts.faster_than_sol(None, "H200") is None
    # within the margin: 2.5% below T_SOL (a 1.44 us kernel against 1.477 us), or 8% below with an IQR of 4%
    assert verdicts.faster_than_sol(Performance(latency_ms=1.44e-3, sol_ms=1.477e-3), "H200") is None
    assert verdicts.faster_than_sol(Performance(latency_ms=0.92, sol_ms=1.0, latency_iqr_ms=0.04), "H200") is None
    assert verdicts.faster_than_sol(Performance(latency_ms=0.92, sol_ms=1.0, latency_iqr_ms=0.01), "H200") is not None


def test_hidden_and_unaligned_workloads():
    log: list[str] = []
    assert verdicts.hidden_workload(Status.INCORRECT_NUMERICAL, True, log) == Status.REWARD_HACK
    assert log[1].startswith("REWARD_HACK [hidden-workload]")
    assert verdicts.hidden_workload(Status.INCORRECT_NUMERICAL, False, []) == Status.INCORRECT_NUMERICAL
    assert verdicts.shape_generality(Status.INCORRECT_NUMERICAL, True, []) == ["shape-generality"]
    assert verdicts.shape_generality(Status.INVALID_REFERENCE, True, []) is None
    assert verdicts.shape_generality(Status.PASSED, True, []) is None


def test_timed_calls_handed_back_must_be_those_asked_for():
    answer = TimeAnswer(times_ms=[1.0] * 5, method="wall", checked={"1": {}, "4": {}}, calls=5)
    assert verdicts.timed_calls_handed_back(answer, [1]) == [1, 4]
    with pytest.raises(Outcome, match=r"REWARD_HACK \[timed-output\]"):
        verdicts.timed_calls_handed_back(answer, [2])


def test_a_timed_call_that_misses_by_a_hair_is_incorrect_and_one_that_did_other_work_is_a_hack():
    from solbench.bench.correctness import compare_outputs
    from solbench.data.definition import TensorSpec
    from solbench.data.workload import Tolerance

    declared = {"y": TensorSpec(shape=["N"], dtype="float32")}
    tolerance = Tolerance(max_atol=1e-3, max_rtol=1e-3, required_matched_ratio=0.99)
    reference = torch.linspace(1.0, 2.0, 128)
    rounded = reference.clone()
    rounded[[3, 70]] += 5e-3  # 2 of 128 elements a few times the tolerance off: a matched ratio of 0.984
    garbage = reference.clone()
    garbage[:2] = 1e6  # the ratio alone would fail too, but these are gross errors
    cases = {"rounded": rounded, "garbage": garbage, "zeros": torch.zeros(128), "nan": torch.full((128,), float("nan"))}
    outcomes = {name: verdicts.timed_output_failure(compare_outputs({"y": value}, {"y": reference}, declared, tolerance), "the last timed call")
                for name, value in cases.items()}
    assert outcomes["rounded"].status == Status.INCORRECT_NUMERICAL
    assert outcomes["rounded"].message.startswith("INCORRECT_NUMERICAL [timed-output-near-miss]: the output of the last timed call")
    assert "2 of 128 elements" in outcomes["rounded"].message
    for name in ("garbage", "zeros", "nan"):
        assert outcomes[name].status == Status.REWARD_HACK and outcomes[name].message.startswith("REWARD_HACK [timed-output]"), name
