from __future__ import annotations

from solbench.data.trace import Evaluation, Status, Trace
from solbench.exec.collect import Collector

from exec_testkit import bundled


def _traces(count: int) -> list[Trace]:
    problem = bundled("rmsnorm_llama3_8b")
    return [Trace(definition=problem.name, workload=workload, solution="s", evaluation=Evaluation(status=Status.PASSED))
            for workload in problem.workloads[:count]]


def test_arrival_order_hands_each_trace_on_at_once() -> None:
    a, b, c = _traces(3)
    seen: list[Trace] = []
    indices: list[int] = []
    collector = Collector(2, lambda index, trace: (indices.append(index), seen.append(trace)))
    collector.add(1, c)
    collector.add(0, a)
    collector.add(0, b)
    assert seen == [c, a, b] and indices == [1, 0, 0]
    collector.finish(1)
    collector.finish(0)
    assert collector.results() == [a, b, c] and collector.all_finished()
    assert collector.done_uuids(0) == {a.workload.uuid, b.workload.uuid}


def test_job_order_holds_later_jobs_back_until_earlier_ones_finish() -> None:
    a, b, c, d = _traces(4)
    seen: list[Trace] = []
    collector = Collector(3, lambda index, trace: seen.append(trace), ordered=True)
    collector.add(2, d)
    collector.add(1, c)
    assert seen == []
    collector.add(0, a)  # the first unfinished job streams at once
    assert seen == [a]
    collector.finish(1)
    assert seen == [a]
    collector.add(0, b)
    collector.finish(0)
    assert seen == [a, b, c, d]  # job 1 is finished, job 2 is the first unfinished one now
    collector.finish(2)
    assert seen == [a, b, c, d] and collector.results() == [a, b, c, d]
