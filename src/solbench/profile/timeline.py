"""A call's device timeline from the evaluator's CUPTI activity records: busy time and gaps.

Each record is the (start, end) of one kernel, copy or memset of the call, in milliseconds from the
call's first start (what the solution worker answers for a RunRequest with `timeline`). The span is the
evaluator's latency of that call (first start to last end, all streams); the busy time is the length of
the union of the records (time when at least one activity ran: overlapping streams count once); the
gaps are span - busy: the launch and idle time between kernels.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

Span = tuple[float, float]


@dataclass(frozen=True)
class CallTimeline:
    span_ms: float
    busy_ms: float
    activities: int

    @property
    def gaps_ms(self) -> float:
        return max(0.0, self.span_ms - self.busy_ms)


def busy_ms(spans: Sequence[Span]) -> float:
    """The length of the union of the intervals."""
    total, reach = 0.0, None
    start_of_run = 0.0
    for start, end in sorted((min(s, e), max(s, e)) for s, e in spans):
        if reach is None or start > reach:
            if reach is not None:
                total += reach - start_of_run
            start_of_run, reach = start, end
        else:
            reach = max(reach, end)
    if reach is not None:
        total += reach - start_of_run
    return total


def call_timeline(spans: Sequence[Span]) -> CallTimeline | None:
    """One call's span, busy time and activity count; None for a call without device activity."""
    if not spans:
        return None
    first = min(min(s, e) for s, e in spans)
    last = max(max(s, e) for s, e in spans)
    return CallTimeline(span_ms=last - first, busy_ms=busy_ms(spans), activities=len(spans))


def representative(calls: Sequence[Sequence[Span]]) -> CallTimeline | None:
    """The call whose span is the median of the calls' spans (the lower middle one for an even count),
    as a timed series' median is one of its calls; None where no call had device activity."""
    timelines = [timeline for timeline in (call_timeline(spans) for spans in calls) if timeline is not None]
    if not timelines:
        return None
    ordered = sorted(timelines, key=lambda timeline: timeline.span_ms)
    median = statistics.median_low([timeline.span_ms for timeline in ordered])
    return next(timeline for timeline in ordered if timeline.span_ms == median)
