"""The GPU's cumulative energy counter, read through NVML (the `nvidia-ml-py` package, `pynvml`).

`nvmlDeviceGetTotalEnergyConsumption` gives millijoules since the driver was loaded. On an H200
(driver 580.159.04, 2026-12-04) it advances in steps about every 100 ms, so a reading is the energy
up to the last update, not up to now: solbench.energy.window aligns its windows to updates.

Where the counter cannot be read, open_counter says why in one line (the trace's note): nvidia-ml-py
not installed, NVML not available (no driver: NVMLError_LibraryNotFound on a CPU machine), an
evaluation on the CPU, a GPU without the counter (NotSupported, e.g. a MIG slice) or no permission.
pynvml is imported with this module, so that a worker has it (and the integrity snapshot records it)
before any solution code is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

try:
    import pynvml
except ImportError:  # the optional extra `energy` is not installed: no counter, and a note saying so
    pynvml = None

METHOD = "nvml-total-energy"
_opened: dict[str, tuple["EnergyCounter | None", str | None]] = {}


@dataclass
class EnergyCounter:
    """The total-energy counter of one GPU."""

    handle: Any
    name: str
    uuid: str
    power_limit_w: float | None  # the enforced power limit (None where NVML does not say)

    def read_mj(self) -> int:
        return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def power_w(self) -> float:
        """The power NVML reports now (its own average over a short period), in watts."""
        return pynvml.nvmlDeviceGetPowerUsage(self.handle) / 1e3


def _why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _is(exc: BaseException, name: str) -> bool:
    kind = getattr(pynvml, name, None)
    return isinstance(kind, type) and isinstance(exc, kind)


def _uuid_of(device: str) -> tuple[str | None, int]:
    """The NVML UUID ("GPU-...") of a torch CUDA device and its torch index (None where torch does not say)."""
    import torch

    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    if uuid is None:
        return None, index
    text = str(uuid)
    return (text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"), index


def open_counter(device: str) -> tuple[EnergyCounter | None, str | None]:
    """The energy counter of `device` (cuda, cuda:N), or None and the one-line reason; cached per device."""
    if device in _opened:
        return _opened[device]
    found = _open(device)
    _opened[device] = found
    return found


def _open(device: str) -> tuple[EnergyCounter | None, str | None]:
    if pynvml is None:
        return None, "energy not measured: nvidia-ml-py is not installed (pip install 'solbench[energy]')"
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError_LibraryNotFound (no driver), DriverNotLoaded, ...
        return None, f"energy not measured: NVML is not available here ({_why(exc)})"
    if not device.startswith("cuda"):
        return None, f"energy not measured: the evaluation runs on {device}, and NVML counts the energy of NVIDIA GPUs only"
    try:
        uuid, index = _uuid_of(device)
        handle = pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else pynvml.nvmlDeviceGetHandleByIndex(index)
        name = pynvml.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as exc:  # noqa: BLE001 - a device NVML does not know
        return None, f"energy not measured: NVML does not find {device} ({_why(exc)})"
    try:
        pynvml.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception as exc:  # noqa: BLE001 - NotSupported (a MIG slice, an old GPU), NoPermission
        if _is(exc, "NVMLError_NotSupported"):
            why = "this GPU has no total-energy counter"
        elif _is(exc, "NVMLError_NoPermission"):
            why = "reading its total-energy counter is not permitted here"
        else:
            why = "its total-energy counter cannot be read"
        return None, f"energy not measured: {name}: {why} ({_why(exc)})"
    try:
        limit = pynvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1e3
    except Exception:  # noqa: BLE001 - the limit is only used to cross-check a worker's readings
        limit = None
    return EnergyCounter(handle, name, uuid or f"index {index}", limit), None
