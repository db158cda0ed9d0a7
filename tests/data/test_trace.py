"""Trace: statuses, nested correctness/performance, non-finite numbers."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from solbench.data.files import parse_model
from solbench.data.trace import Correctness, Evaluation, Performance, Status, Trace
from solbench.data.workload import Workload

STATUSES = [
    "PASSED", "INCORRECT_SHAPE", "INCORRECT_DTYPE", "INCORRECT_NUMERICAL", "RUNTIME_ERROR",
    "COMPILE_ERROR", "TIMEOUT", "REWARD_HACK", "INVALID_REFERENCE",
]


def test_the_statuses_are_those_of_the_design():
    assert [s.value for s in Status] == STATUSES


@pytest.mark.parametrize("status", STATUSES)
def test_every_status_reads_and_writes(status):
    data = {"definition": "d", "workload": {"uuid": "u"}, "solution": "s", "evaluation": {"status": status, "log": f"{status} log"}}
    trace = Trace.model_validate(data)
    assert trace.evaluation.status is Status(status)
    assert trace.evaluation.status == status
    assert trace.to_json_dict() == data
    assert json.loads(trace.to_json()) == data


@pytest.mark.parametrize("status", ["passed", "FAILED", "", None, 0])
def test_unknown_status(status):
    trace, issues = parse_model(Trace, {"definition": "d", "workload": {"uuid": "u"}, "evaluation": {"status": status}})
    assert trace is None
    assert [i.field for i in issues] == ["evaluation.status"]


def test_full_trace():
    data = {
        "definition": "gemm",
        "workload": {"uuid": "w1", "axes": {"M": 128}, "inputs": {"a": {"type": "random"}}, "tolerance": {"max_atol": 0.001}},
        "solution": "gemm_triton",
        "evaluation": {
            "status": "PASSED",
            "correctness": {"max_absolute_error": 0.0001, "max_relative_error": 0.002, "matched_ratio": 1.0, "trials": 3},
            "performance": {
                "latency_ms": 0.125,
                "latency_iqr_ms": 0.004,
                "reference_latency_ms": 0.5,
                "sol_ms": 0.05,
                "score": 0.71,
                "timing_method": "cupti",
                "iterations": 200,
            },
            "environment": {"gpu": "H100", "torch": "2.13.0", "driver": 560},
            "log": "",
            "timestamp": "2025-01-01T00:00:00Z",
        },
    }
    trace = Trace.model_validate(data)
    assert isinstance(trace.workload, Workload) and trace.workload.axes == {"M": 128}
    assert isinstance(trace.evaluation, Evaluation)
    assert isinstance(trace.evaluation.correctness, Correctness)
    assert isinstance(trace.evaluation.performance, Performance)
    assert trace.evaluation.correctness.matched_ratio == 1.0
    assert trace.evaluation.correctness.trials == 3
    assert trace.evaluation.performance.latency_ms == 0.125
    assert trace.evaluation.performance.iterations == 200
    assert trace.evaluation.performance.timing_method == "cupti"
    assert trace.evaluation.environment["gpu"] == "H100"
    assert trace.to_json_dict() == data
    assert json.loads(trace.to_json(indent=2)) == data


def test_the_latency_floor_fields_round_trip_and_old_traces_load_without_them(tmp_path):
    from solbench.data.files import append_jsonl
    from solbench.data.loaders import load_traces

    performance = {"latency_ms": 0.0011, "sol_ms": 0.000895, "sol_roofline_ms": 0.000123, "sol_floor_ms": 0.000895, "sol_floor_applied": True}
    new = {"definition": "d", "workload": {"uuid": "u1"}, "solution": "s", "evaluation": {"status": "PASSED", "performance": performance}}
    old = {"definition": "d", "workload": {"uuid": "u2"}, "solution": "s", "evaluation": {"status": "PASSED", "performance": {"latency_ms": 0.2, "sol_ms": 0.1}}}
    path = tmp_path / "traces.jsonl"
    for data in (new, old):
        append_jsonl(path, Trace.model_validate(data).to_json_dict())
    first, second = load_traces(path)
    assert first.to_json_dict() == new and second.to_json_dict() == old  # nothing added to an old trace
    assert first.evaluation.performance.sol_roofline_ms == 0.000123 and first.evaluation.performance.sol_floor_applied is True
    older = second.evaluation.performance
    assert older.sol_ms == 0.1 and older.sol_roofline_ms is None and older.sol_floor_ms is None and older.sol_floor_applied is None


def test_minimal_trace_and_defaults():
    trace = Trace.model_validate({"definition": "d", "workload": {"uuid": "u"}})
    assert trace.solution is None and trace.evaluation is None
    evaluation = Evaluation(status=Status.TIMEOUT)
    assert evaluation.log == "" and evaluation.correctness is None and evaluation.performance is None
    assert evaluation.environment is None and evaluation.timestamp is None
    assert evaluation.to_json_dict() == {"status": "TIMEOUT"}
    assert Correctness().to_json_dict() == {} and Performance().to_json_dict() == {}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"workload": {"uuid": "u"}}, "definition"),
        ({"definition": "", "workload": {"uuid": "u"}}, "definition"),
        ({"definition": "d"}, "workload"),
        ({"definition": "d", "workload": {}}, "workload.uuid"),
        ({"definition": "d", "workload": {"uuid": "u"}, "evaluation": {}}, "evaluation.status"),
        ({"definition": "d", "workload": {"uuid": "u"}, "evaluation": {"status": "PASSED", "performance": {"latency_ms": "fast"}}}, "evaluation.performance.latency_ms"),
        ({"definition": "d", "workload": {"uuid": "u"}, "evaluation": {"status": "PASSED", "correctness": {"trials": 1.5}}}, "evaluation.correctness.trials"),
        ({"definition": "d", "workload": {"uuid": "u"}, "evaluation": {"status": "PASSED", "correctness": {"first_mismatch_index": "0"}}}, "evaluation.correctness.first_mismatch_index"),
    ],
)
def test_structural_errors(data, field):
    trace, issues = parse_model(Trace, data)
    assert trace is None
    assert field in [i.field for i in issues]
    with pytest.raises(ValidationError):
        Trace.model_validate(data)


def test_infinities_and_nan_survive_a_json_round_trip():
    data = {
        "definition": "d",
        "workload": {"uuid": "u", "tolerance": {"max_error_cap": float("inf")}},
        "evaluation": {
            "status": "INCORRECT_NUMERICAL",
            "correctness": {
                "max_absolute_error": float("inf"),
                "max_relative_error": float("nan"),
                "matched_ratio": 0.5,
                "first_mismatch_index": [0, 3],
            },
            "performance": {"latency_ms": float("-inf"), "score": float("nan")},
        },
    }
    trace = Trace.model_validate(data)
    text = trace.to_json()
    assert "Infinity" in text and "NaN" in text and "-Infinity" in text
    back = json.loads(text)
    correctness = back["evaluation"]["correctness"]
    assert correctness["max_absolute_error"] == math.inf
    assert math.isnan(correctness["max_relative_error"])
    assert correctness["first_mismatch_index"] == [0, 3]
    assert back["evaluation"]["performance"]["latency_ms"] == -math.inf
    assert math.isnan(back["evaluation"]["performance"]["score"])
    assert back["workload"]["tolerance"]["max_error_cap"] == math.inf
    again = Trace.model_validate(back)
    assert again.evaluation.correctness.max_absolute_error == math.inf
    assert math.isnan(again.evaluation.correctness.max_relative_error)
    assert again.workload.tolerance.error_cap == math.inf
    # pydantic's own JSON serialiser agrees
    assert json.loads(trace.model_dump_json(exclude_unset=True))["evaluation"]["correctness"]["max_absolute_error"] == math.inf


def test_unknown_keys_are_kept_at_every_level():
    data = {
        "definition": "d",
        "workload": {"uuid": "u", "x_extra": 1},
        "solution": "s",
        "evaluation": {
            "status": "RUNTIME_ERROR",
            "correctness": {"max_absolute_error": 1.0, "worst_output": "y"},
            "performance": {"latency_ms": 1.0, "p90_ms": 1.2},
            "log": "Traceback ...",
            "exit_code": -11,
        },
        "run_id": "abc",
    }
    trace = Trace.model_validate(data)
    assert trace.model_extra == {"run_id": "abc"}
    assert trace.evaluation.model_extra == {"exit_code": -11}
    assert trace.to_json_dict() == data


def test_to_json_keeps_non_ascii_text():
    trace = Trace.model_validate({"definition": "d", "workload": {"uuid": "u"}, "evaluation": {"status": "RUNTIME_ERROR", "log": "erreur: données ✗"}})
    assert "données ✗" in trace.to_json()


def test_traces_appended_to_a_jsonl_file_read_back(tmp_path):
    from solbench.data.files import append_jsonl
    from solbench.data.loaders import load_traces

    path = tmp_path / "traces" / "run.jsonl"
    rows = [
        {"definition": "d", "workload": {"uuid": "u1"}, "evaluation": {"status": "PASSED", "correctness": {"max_absolute_error": 0.0}}},
        {"definition": "d", "workload": {"uuid": "u2"}, "evaluation": {"status": "INCORRECT_NUMERICAL", "correctness": {"max_absolute_error": float("inf")}, "log": "tab\there, quote \" and é"}},
    ]
    for row in rows:
        append_jsonl(path, Trace.model_validate(row).to_json_dict())
    traces = load_traces(path)
    assert [t.to_json_dict() for t in traces] == rows


@pytest.mark.parametrize("character", ["\u2028", "\u2029", "\x85"], ids=["U+2028", "U+2029", "U+0085"])
def test_trace_log_with_unicode_line_separators_reads_back(tmp_path, character):
    from solbench.data.files import append_jsonl
    from solbench.data.loaders import load_traces

    path = tmp_path / "run.jsonl"
    row = {"definition": "d", "workload": {"uuid": "u"}, "evaluation": {"status": "RUNTIME_ERROR", "log": f"before{character}after"}}
    append_jsonl(path, Trace.model_validate(row).to_json_dict())
    assert [t.to_json_dict() for t in load_traces(path)] == [row]
