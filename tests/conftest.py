"""The whole suite: hermetic hardware specs. A CPU spec calibrated on this machine earlier (`solbench hw calibrate`,
or the first `solbench run`, into ~/.cache/solbench/hardware) would otherwise price T_SOL in every CPU
evaluation of the tests; tests that want a user spec folder set $SOLBENCH_HARDWARE_DIR themselves."""

from __future__ import annotations

import os
import tempfile

os.environ["SOLBENCH_HARDWARE_DIR"] = tempfile.mkdtemp(prefix="solbench-test-hardware-")
