"""The version key of a worker: the hardware spec that prices T_SOL, the device, the driver, CUDA,
torch, Triton and solbench versions and the clock policy. Results are ranked only against results
of the same key (and the same dataset content); the GPU's UUID is kept per result beside it, so a
number can always be traced to the chip sample that produced it."""

from __future__ import annotations

import hashlib
import json
import platform
import time
from dataclasses import asdict, dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from solbench.serve.models import Environment

CLOCK_POLICY = "default clocks (not locked)"  # the service never changes the GPU's clocks
KEY_FIELDS = ("hardware", "device", "driver", "cuda", "torch", "triton", "solbench", "clock_policy")


@dataclass(frozen=True)
class VersionKey:
    hardware: str
    device: str
    driver: str
    cuda: str
    torch: str
    triton: str
    solbench: str
    clock_policy: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


def device_name(device: str) -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return torch.cuda.get_device_name(0)
    return f"cpu {platform.machine()} {platform.processor() or ''}".strip()


def gpu_uuids() -> list[str]:
    """The UUID of every visible GPU, in torch's order ([] without CUDA)."""
    import torch

    if not torch.cuda.is_available():
        return []
    found = []
    for index in range(torch.cuda.device_count()):
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        found.append(f"GPU-{uuid}" if uuid is not None and not str(uuid).startswith("GPU-") else str(uuid or ""))
    return found


def current_key(hardware: str | None, device: str) -> VersionKey:
    from solbench.score.baselines import versions

    found = versions()
    return VersionKey(hardware=hardware or "unknown", device=device_name(device), driver=found.get("driver", ""), cuda=found.get("cuda", ""),
                      torch=found.get("torch", ""), triton=found.get("triton", ""), solbench=found.get("solbench", ""),
                      clock_policy=CLOCK_POLICY)


def environment_row(session: Session, key: VersionKey, roofs: dict[str, float]) -> Environment:
    """The row of this key, made on first use."""
    row = session.scalar(select(Environment).where(Environment.key_hash == key.digest))
    if row is None:
        row = Environment(key_hash=key.digest, roofs=json.dumps(roofs), created=time.time(), **asdict(key))
        session.add(row)
        session.flush()
    return row
