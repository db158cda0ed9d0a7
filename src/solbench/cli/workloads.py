"""The --workloads option of the commands that take a subset of each problem's workloads."""

from __future__ import annotations

from typing import Any

import typer


def choose_workloads(problem: Any, which: str, option: str = "--workloads") -> list[Any]:
    """solbench.data.selection.choose_workloads, with a bad value reported against the option."""
    from solbench.data.selection import choose_workloads as choose

    try:
        return choose(problem, which)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint=option) from None
