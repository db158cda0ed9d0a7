"""One lane process of the pool (`python -m solbench.exec.lane_process --fd N`): evaluates the jobs
it is sent, one at a time. Started as a plain subprocess, so that the parent's main module is never
imported again here (a script without a __main__ guard works too)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from multiprocessing.connection import Connection


def serve(connection: Connection) -> None:
    """Messages in: the lane's name and options first, then (job index, job, workload uuids already done) or
    None (stop). Out: ("ready", pid), ("trace", index, trace) for each trace as it is known, ("done",
    index) after each job. A job the pool sent ahead (it may, on GPU lanes) is read before the current
    one starts, so that its solution worker starts while the current job is evaluated."""
    from collections import deque

    from solbench.exec.jobs import evaluate_job, kept_workers, noting_lane

    name, options = connection.recv()
    connection.send(("ready", os.getpid()))
    pending: deque = deque()
    with kept_workers(options) as workers:  # the lane's reference worker lives as long as the lane
        while True:
            try:
                if not pending:
                    pending.append(connection.recv())
                while connection.poll():
                    pending.append(connection.recv())
            except EOFError:
                return
            message = pending.popleft()
            if message is None:
                return
            index, job, done = message
            if workers is not None:
                for queued in [message, *pending]:
                    if queued is not None and queued[1].trusted:  # trusted code shares the compile cache
                        workers.trust(queued[1].solution)
                workers.plan_next([following[1].solution for following in list(pending)[:workers.spares_ahead]])
            evaluate_job(job, options, noting_lane(name, lambda trace: connection.send(("trace", index, trace))), done, workers=workers)
            connection.send(("done", index))


def _end_with_parent() -> None:
    """SIGTERM when the pool's process dies, however it dies (Linux; elsewhere the lane ends at its next message)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() == 1:
        sys.exit(0)  # the parent is already gone


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fd", type=int, required=True, help="the socket to the pool")
    arguments = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # unwind: the evaluator closes its workers
    _end_with_parent()
    connection = Connection(arguments.fd)
    try:
        serve(connection)
    except (BrokenPipeError, ConnectionResetError, EOFError):
        pass  # the pool is gone
    finally:
        connection.close()


if __name__ == "__main__":
    main()
