"""What --memcheck costs per solution: each example evaluated with --memcheck on its smallest workload
(one trial, no timing, no held-out workloads): the verdict, the seconds of each sanitized evaluation
(worker start under the sanitizer, build, the trial, the sanitizer's exit), the whole command's wall time
and the phases of the trace. Run from the repository root with PYTHONPATH=src:
python3 benchmarks/memcheck_cost.py NAME..."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

PROBLEM = "src/solbench/dataset/problems/silu_and_mul_llama3_8b"
SMALLEST = "f2f3faa3"


def evaluate(solution: Path, memcheck: bool) -> tuple[float, dict, int, str]:
    command = [sys.executable, "-m", "solbench.cli", "eval", PROBLEM, "--solution", str(solution), "--workload", SMALLEST, "--hidden", "0",
               "--no-timing", "--trials", "1", "--json"] + (["--memcheck"] if memcheck else [])
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=240, env={**os.environ, "COLUMNS": "200"})
    wall = time.monotonic() - started
    try:
        trace = json.loads(done.stdout)[0]
    except (ValueError, IndexError):
        return wall, {}, done.returncode, (done.stderr or done.stdout)[-600:]
    return wall, trace["evaluation"], done.returncode, ""


def main() -> None:
    for name in sys.argv[1:]:
        solution = Path("examples") / name / "solution.json"
        checked_s, checked, checked_rc, checked_error = evaluate(solution, True)
        record = (checked.get("environment") or {}).get("memcheck", {})
        print(json.dumps({"example": name, "wall_s": round(checked_s, 1), "status": checked.get("status"), "rc": checked_rc, "memcheck": record,
                          "phases": checked.get("phases"), "error": checked_error}), flush=True)


if __name__ == "__main__":
    main()
