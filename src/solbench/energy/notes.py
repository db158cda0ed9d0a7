"""What a run summary says about energy: where it was not measured, and where E_SOL is missing."""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable


def summary_notes(traces: Iterable[Any], spec: Any) -> list[str]:
    """One line per distinct reason energy or E_SOL is missing in the traces (with how many workloads), and
    one about the spec when energy was measured but the spec has no energy figures."""
    reasons: Counter[str] = Counter()
    measured = 0
    for trace in traces:
        performance = trace.evaluation.performance if trace.evaluation is not None else None
        energy = performance.energy if performance is not None else None
        if energy is None:
            continue
        measured += energy.joules is not None
        if energy.note:
            reasons[energy.note] += 1
    notes = []
    for reason, count in reasons.items():
        workloads = f"{count} workload{'s' if count != 1 else ''}"
        missing = reason.startswith(("energy not measured", "no E_SOL"))
        notes.append(f"{reason} ({workloads}): no energy score there" if missing else f"E_SOL: {reason} ({workloads})")
    if measured and spec is not None and getattr(spec, "energy", None) is None and not any(r.startswith("no E_SOL: the hardware spec") for r in reasons):
        from solbench.energy.bound import no_figures_note

        notes.append(no_figures_note(spec))
    return notes
