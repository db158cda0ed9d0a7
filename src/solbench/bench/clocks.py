"""Locking the GPU's clocks, only when the user asks for it (`--lock-clocks`).

Locked clocks make timings steadier but unlike what users of the GPU see; solbench never touches
clocks otherwise. Needs permission to run `nvidia-smi --lock-gpu-clocks`.
"""

from __future__ import annotations

import contextlib
import subprocess
from typing import Iterator


@contextlib.contextmanager
def locked_clocks(device_index: int, enabled: bool, mhz: int | None = None) -> Iterator[int | None]:
    """Lock the SM clock at `mhz` (default: its maximum) for the duration; yields the locked clock
    in MHz (None when nothing was locked), so that T_SOL can be priced at it."""
    if not enabled:
        yield None
        return
    clock = mhz
    if clock is None:
        query = subprocess.run(
            ["nvidia-smi", "-i", str(device_index), "--query-gpu=clocks.max.sm", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, check=True,
        )
        clock = int(query.stdout.strip().splitlines()[0])
    subprocess.run(["nvidia-smi", "-i", str(device_index), f"--lock-gpu-clocks={clock},{clock}"], capture_output=True, text=True, check=True)
    try:
        yield clock
    finally:
        subprocess.run(["nvidia-smi", "-i", str(device_index), "--reset-gpu-clocks"], capture_output=True, text=True)
