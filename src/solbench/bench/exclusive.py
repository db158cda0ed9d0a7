"""Timed sections hold the GPU alone: whatever else of this process shares the GPU (the run's compiles
ahead, in other processes) registers a hook here and is paused while a timed request is in flight."""

from __future__ import annotations

import contextlib
from typing import Callable, Iterator

_hooks: list[Callable[[bool], None]] = []  # called with True as a timed section starts, False as it ends


def register(hook: Callable[[bool], None]) -> None:
    _hooks.append(hook)


def unregister(hook: Callable[[bool], None]) -> None:
    if hook in _hooks:
        _hooks.remove(hook)


@contextlib.contextmanager
def timed_section() -> Iterator[None]:
    """Around a timed request: every hook is told it starts, and told it ended however it ends."""
    for hook in list(_hooks):
        hook(True)
    try:
        yield
    finally:
        for hook in list(_hooks):
            hook(False)
