"""The cores this process may run on (its CPU affinity where the platform has one), for sizing pools of processes."""

from __future__ import annotations

import os


def usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
