"""Running out of memory, told apart from other failures and described with its sizes."""

from __future__ import annotations

import os
import re
from typing import Any

# Set (to 1) for correctness-only runs that share their GPU (benchmarks/reference_self_check.py sets it): the
# orchestrator and its workers then hand cached device memory back after each request, so that the memory one
# problem's largest workload needed is free for the other runs and the other worker, not kept by an idle allocator.
SHARED_DEVICE_ENV = "SOLBENCH_SHARED_DEVICE"
# Such runs also let the CUDA allocator grow segments instead of carving small tensors out of freed large blocks:
# without it a 32 GiB attention score buffer could not be allocated again beside 31.8 GiB cached in split blocks
# (deepseek_v3_attention_backward at 8,192 tokens, 2026-12-02). Timed runs keep torch's default allocator.
ALLOCATOR_ENV = "PYTORCH_CUDA_ALLOC_CONF"
SHARED_DEVICE_ALLOCATOR = "expandable_segments:True"

# What torch's allocators say when an allocation fails (CUDA caching allocator, CPU allocator).
_OOM_PATTERNS = ("out of memory", "can't allocate memory", "cannot allocate memory", "not enough memory")
_REQUEST_PATTERNS = (
    re.compile(r"[Tt]ried to allocate ([\d.]+ ?[KMGT]?i?B)"),
    re.compile(r"you tried to allocate (\d+) bytes"),
)


def says_out_of_memory(text: str) -> bool:
    """Whether a message (an exception's, or a trace's log) is an allocator's out-of-memory report."""
    lowered = text.lower()
    return any(pattern in lowered for pattern in _OOM_PATTERNS)


def memory_failure(exc: BaseException, device: str) -> str | None:
    """A one-line description of an out-of-memory failure (what was being allocated, the device's
    free and total memory where known); None when `exc` is not one."""
    import torch

    message = str(exc)
    is_oom = isinstance(exc, (MemoryError, torch.OutOfMemoryError)) or (isinstance(exc, RuntimeError) and says_out_of_memory(message))
    if not is_oom:
        return None
    parts = [type(exc).__name__]
    requested = _requested(message)
    if requested:
        parts.append(f"allocating {requested}")
    memory = device_memory(device)
    if memory is not None:
        free, total = memory
        parts.append(f"{'device' if device.startswith('cuda') else 'host'} memory {_gib(free)} free of {_gib(total)}")
        held = _held_here(device)
        if held is not None:
            parts.append(f"held by this process (pid {os.getpid()}) {_gib(held)}, by other processes {_gib(max(0, total - free - held))}")
    return "; ".join(parts)


def _held_here(device: str) -> int | None:
    """Device memory this process's CUDA allocator holds (None on the CPU or where unknown)."""
    if not device.startswith("cuda"):
        return None
    try:
        import torch

        return int(torch.cuda.memory_reserved(torch.device(device)))
    except Exception:  # noqa: BLE001 - a courtesy, as the sizes
        return None


def shared_device_environment(environment: dict[str, str]) -> dict[str, str]:
    """`environment` for a correctness-only run that shares its GPU: SOLBENCH_SHARED_DEVICE set, and the
    allocator's expandable segments unless the user chose an allocator configuration of their own."""
    return {ALLOCATOR_ENV: SHARED_DEVICE_ALLOCATOR, **environment, SHARED_DEVICE_ENV: "1"}


def shares_device() -> bool:
    return os.environ.get(SHARED_DEVICE_ENV, "") not in ("", "0")


def return_cached_memory(device: str) -> None:
    """Under SOLBENCH_SHARED_DEVICE: give the CUDA allocator's unused cached blocks back to the device."""
    if device.startswith("cuda") and shares_device():
        import torch

        if torch.cuda.is_initialized():
            torch.cuda.empty_cache()


def device_memory(device: str) -> tuple[int, int] | None:
    """Free and total bytes of the device (the host's memory for the CPU); None where unknown."""
    try:
        if device.startswith("cuda"):
            import torch

            free, total = torch.cuda.mem_get_info(torch.device(device))
            return int(free), int(total)
        return _host_memory()
    except Exception:  # noqa: BLE001 - the sizes are a courtesy: unknown is fine
        return None


def _host_memory() -> tuple[int, int] | None:
    fields: dict[str, int] = {}
    with open("/proc/meminfo") as handle:
        for line in handle:
            name, _, value = line.partition(":")
            if name in ("MemAvailable", "MemTotal"):
                fields[name] = int(value.split()[0]) * 1024
    if len(fields) != 2:
        return None
    return fields["MemAvailable"], fields["MemTotal"]


def _requested(message: str) -> str | None:
    for pattern in _REQUEST_PATTERNS:
        found = pattern.search(message)
        if found:
            text = found.group(1)
            return _gib(int(text)) if text.isdigit() else text
    return None


def _gib(count: Any) -> str:
    return f"{count / 2**30:.2f} GiB"
