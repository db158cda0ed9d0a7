from __future__ import annotations

import pytest

from solbench.exec import LaneError, parse_gpus, parse_lanes, plan_lanes
from solbench.exec.lanes import physical_gpu


@pytest.mark.parametrize(("text", "expected"), [("all", ["0", "1", "2", "3"]), ("2", ["0", "1"]), ("0,2", ["0", "2"]), (" 3, 1 ", ["3", "1"]),
                                                ("3,", ["3"])])
def test_parse_gpus(text: str, expected: list[str]) -> None:
    assert parse_gpus(text, available=4) == expected


@pytest.mark.parametrize(("text", "available", "message"), [
    ("5", 4, "--gpus: expected 1 to 4 GPUs"),
    ("0", 4, "for GPU 0 alone write 0,"),
    ("0,4", 4, "GPU '4' is not one of the 4 visible here"),
    ("1,1", 4, "must differ"),
    ("many", 4, "expected all, a count N or GPU indices such as 0,1; got 'many'"),
    ("all", 0, "no CUDA GPU is visible here"),
])
def test_parse_gpus_errors_are_one_line(text: str, available: int, message: str) -> None:
    with pytest.raises(LaneError) as error:
        parse_gpus(text, available)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_parse_lanes() -> None:
    assert parse_lanes("3") == 3
    for bad in ("0", "-1", "two", ""):
        with pytest.raises(LaneError, match="--lanes: expected a number of lanes, 1 or more"):
            parse_lanes(bad)


def test_cpu_lanes_hide_gpus_and_share_the_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    lanes = plan_lanes(2, "cpu", available_gpus=4)
    assert [lane.name for lane in lanes] == ["cpu0", "cpu1"]
    assert all(lane.device == "cpu" and lane.env["CUDA_VISIBLE_DEVICES"] == "" and lane.env["OMP_NUM_THREADS"] == "4" for lane in lanes)
    assert len(plan_lanes(None, "auto", available_gpus=0)) == 1


def test_gpu_lanes_one_visible_gpu_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6,7")  # this process sees a subset: lanes name the physical GPUs
    lanes = plan_lanes(["1", "3"], "auto", available_gpus=4)
    assert [(lane.name, lane.device, lane.env["CUDA_VISIBLE_DEVICES"]) for lane in lanes] == [("gpu1", "cuda", "5"), ("gpu3", "cuda", "7")]
    assert [lane.env["CUDA_VISIBLE_DEVICES"] for lane in plan_lanes(None, "cuda", available_gpus=4)] == ["4", "5", "6", "7"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert physical_gpu("2") == "2"


def test_lane_requests_that_cannot_be_met() -> None:
    with pytest.raises(LaneError, match="--device cuda: no CUDA GPU is visible here"):
        plan_lanes(2, "cuda", available_gpus=0)
    with pytest.raises(LaneError, match="--gpus: no CUDA GPU is used here"):
        plan_lanes(["0"], "cpu", available_gpus=2)
    with pytest.raises(LaneError, match="--gpus: expected 1 to 2 GPUs"):
        plan_lanes(3, "auto", available_gpus=2)
