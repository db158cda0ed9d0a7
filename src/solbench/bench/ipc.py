"""CUDA tensors between processes without a trip through host memory (CUDA IPC).

The producer describes a tensor by torch's own IPC reduction, turned into plain JSON (bytes in
base64, classes and dtypes by allow-listed names); the consumer checks the description (a plain
tensor, sizes and strides inside the shared allocation) before mapping it. The producer keeps the
tensor alive until the consumer is done (the `release` of its group).
"""

from __future__ import annotations

import base64
from typing import Any

from solbench.bench.shm import ALLOWED_DTYPES, BlobError


PROBE_SIZE = 16


def probe_tensor(device: str) -> Any:
    """What a worker exports at start so that the orchestrator can see whether CUDA IPC works
    across the sandbox between them (it fails where the worker is in another PID namespace)."""
    import torch

    return torch.arange(PROBE_SIZE, dtype=torch.float32, device=device)


def probe_fails(description: Any) -> str | None:
    """Why the probe tensor a worker exported cannot be mapped here (None: it can)."""
    try:
        if import_cuda(description).tolist() != list(range(PROBE_SIZE)):
            return "the probe tensor does not hold what it should"
    except Exception as exc:  # noqa: BLE001 - any failure means: use host-memory files instead
        return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    return None


def export_cuda(tensor: Any) -> dict[str, Any]:
    from torch.multiprocessing.reductions import reduce_tensor

    _, args = reduce_tensor(tensor.detach())
    (_, size, stride, offset, _, dtype, device, handle, storage_bytes, storage_offset, _, counter_handle, counter_offset, event_handle, event_sync) = args
    return {
        "cuda_ipc": {
            "device": device, "handle": _encode(handle), "storage_bytes": storage_bytes, "storage_offset": storage_offset,
            "counter_handle": _encode(counter_handle), "counter_offset": counter_offset,
            "event_handle": _encode(event_handle), "event_sync": bool(event_sync),
        },
        "dtype": str(dtype).removeprefix("torch."), "shape": list(size), "stride": list(stride), "offset": offset,
    }


def import_cuda(description: dict[str, Any]) -> Any:
    """Map a described CUDA tensor of another process (checked first)."""
    import torch
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    ipc = description.get("cuda_ipc")
    dtype_name, shape, stride, offset = (description.get(k) for k in ("dtype", "shape", "stride", "offset"))
    if not isinstance(ipc, dict) or dtype_name not in ALLOWED_DTYPES:
        raise BlobError(f"bad CUDA tensor description (dtype {dtype_name!r})")
    if not _sizes(shape) or not _sizes(stride) or len(shape) != len(stride) or not _sizes([offset]):
        raise BlobError("bad CUDA tensor description: shape, stride and offset must be non-negative integers")
    dtype = getattr(torch, dtype_name)
    element = torch.empty((), dtype=dtype).element_size()
    storage_bytes = ipc.get("storage_bytes")
    device = ipc.get("device")
    if not _sizes([storage_bytes]) or not isinstance(device, int) or not 0 <= device < torch.cuda.device_count():
        raise BlobError("bad CUDA tensor description: storage size or device")
    last = offset + sum((size - 1) * step for size, step in zip(shape, stride) if size > 0)
    if all(shape) and (last + 1) * element > storage_bytes:
        raise BlobError(f"CUDA tensor view reaches past its allocation ({(last + 1) * element} > {storage_bytes} bytes)")
    return rebuild_cuda_tensor(
        torch.Tensor, torch.Size(shape), tuple(stride), offset, torch.storage.TypedStorage, dtype, device,
        _decode(ipc.get("handle")), storage_bytes, ipc.get("storage_offset", 0), False,
        _decode(ipc.get("counter_handle")), ipc.get("counter_offset", 0), _decode(ipc.get("event_handle")), bool(ipc.get("event_sync")),
    )


def _sizes(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values)


def _encode(value: bytes | None) -> str | None:
    return None if value is None else base64.b64encode(value).decode()


def _decode(value: str | None) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise BlobError("bad CUDA tensor description: handles are base64 strings")
    return base64.b64decode(value)
