"""Evaluation lanes of one host: one per GPU (CUDA_VISIBLE_DEVICES), or N CPU lanes without a GPU;
and the parsers of the options that choose them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


class LaneError(ValueError):
    """A lane request that cannot be met; the message is one line naming the option."""


@dataclass(frozen=True)
class Lane:
    name: str  # gpu0, gpu1, ... or cpu0, cpu1, ...
    device: str  # the evaluation's device inside the lane: cuda (its one visible GPU) or cpu
    env: dict[str, str]  # set in the lane before anything runs; the evaluator's workers inherit it


def parse_gpus(text: str, available: int, option: str = "--gpus") -> list[str]:
    """all | N (the first N) | a list of indices such as 0,2 -> the GPU indices (as torch numbers them here)."""
    text = text.strip()
    if available < 1:
        raise LaneError(f"{option}: no CUDA GPU is visible here (for CPU lanes use --lanes N)")
    if text == "all":
        return [str(index) for index in range(available)]
    if re.fullmatch(r"\d+", text):
        count = int(text)
        if not 1 <= count <= available:
            raise LaneError(f"{option}: expected 1 to {available} GPUs (the GPUs visible here), got {count} (for GPU {count} alone write {count},)")
        return [str(index) for index in range(count)]
    if "," in text and re.fullmatch(r"\d+(\s*,\s*\d+)*\s*,?", text):  # "3," is GPU 3 alone
        return check_gpu_ids([part.strip() for part in text.split(",") if part.strip()], available, option)
    raise LaneError(f"{option}: expected all, a count N or GPU indices such as 0,1; got {text!r}")


def check_gpu_ids(ids: list[str], available: int, option: str = "--gpus") -> list[str]:
    if available < 1:
        raise LaneError(f"{option}: no CUDA GPU is visible here (for CPU lanes use --lanes N)")
    for gpu in ids:
        if not gpu.isdigit() or int(gpu) >= available:
            raise LaneError(f"{option}: GPU {gpu!r} is not one of the {available} visible here (0 to {available - 1})")
    if len(set(ids)) != len(ids):
        raise LaneError(f"{option}: GPU indices must differ (never two lanes on one GPU), got {','.join(ids)}")
    return ids


def parse_lanes(text: str, option: str = "--lanes") -> int:
    """N >= 1 CPU lanes."""
    if not re.fullmatch(r"\s*\d+\s*", text) or int(text) < 1:
        raise LaneError(f"{option}: expected a number of lanes, 1 or more; got {text!r}")
    return int(text)


def gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def plan_lanes(lanes: int | str | list[str] | None, device: str, available_gpus: int | None = None) -> list[Lane]:
    """The lanes of a pool. On GPUs (device auto with a GPU here, or cuda): lanes None or "all" is
    every GPU, N the first N, a list those indices. On the CPU (device cpu, or auto without a GPU):
    N CPU lanes (None: 1), each with an equal share of the cores for torch's threads."""
    available = gpu_count() if available_gpus is None else available_gpus
    if device.startswith("cuda") or (device == "auto" and available > 0):
        if available < 1:
            raise LaneError(f"--device {device}: no CUDA GPU is visible here (for CPU lanes use --device cpu --lanes N)")
        if lanes is None:
            ids = parse_gpus("all", available)
        elif isinstance(lanes, int):
            ids = parse_gpus(str(lanes), available)
        elif isinstance(lanes, str):
            ids = parse_gpus(lanes, available)
        else:
            ids = check_gpu_ids([str(gpu) for gpu in lanes], available)
        return [Lane(f"gpu{gpu}", "cuda", {"CUDA_VISIBLE_DEVICES": physical_gpu(gpu)}) for gpu in ids]
    if isinstance(lanes, list) or lanes == "all":
        raise LaneError("--gpus: no CUDA GPU is used here (device cpu); for CPU lanes use --lanes N")
    count = 1 if lanes is None else parse_lanes(str(lanes))
    threads = str(max(1, (os.cpu_count() or 1) // count))
    env = {"CUDA_VISIBLE_DEVICES": ""}
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = os.environ.get(name, threads)  # lanes share the cores instead of each taking all of them
    return [Lane(f"cpu{index}", "cpu", dict(env)) for index in range(count)]


def physical_gpu(index: str) -> str:
    """The CUDA_VISIBLE_DEVICES entry of torch's GPU `index` here (this process may see a subset already)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None or not visible.strip():
        return index
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    return entries[int(index)] if int(index) < len(entries) else index
