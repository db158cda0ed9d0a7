"""The whole suite: hermetic hardware specs. A CPU spec calibrated on this machine earlier (`solbench hw calibrate`,
or the first `solbench run`, into ~/.cache/solbench/hardware) would otherwise price T_SOL in every CPU
evaluation of the tests; tests that want a user spec folder set $SOLBENCH_HARDWARE_DIR themselves.

Under pytest-xdist with a test process per core, each process and the workers it starts compute on one thread
(unless the caller set OMP_NUM_THREADS): with torch's default of a thread per core, every process's parallel
regions fought the others' for the same cores (the models self-check took 305 s with it, 283 s without, and
16% less CPU time)."""

from __future__ import annotations

import os
import tempfile

os.environ["SOLBENCH_HARDWARE_DIR"] = tempfile.mkdtemp(prefix="solbench-test-hardware-")


def _one_thread_per_test_process() -> None:
    processes = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if processes >= (os.cpu_count() or 1) and "OMP_NUM_THREADS" not in os.environ:
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = "1"


_one_thread_per_test_process()
