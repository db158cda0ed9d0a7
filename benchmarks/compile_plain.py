"""Which references torch.compile compiles in a plain Python session, outside solbench: the
denominator of "compiled baselines PASS on >= 95% of the problems whose reference compiles".

For each problem (smallest workload), a fresh interpreter writes the reference to `reference.py` in a
temporary folder, imports it as an ordinary module (`import reference`), draws the inputs and calls
`torch.compile(reference.run, mode=MODE, dynamic=False)` once, comparing with the eager result at the
workload's tolerance. Given a run folder (`--run RUN_DIR`, a `solbench run` with that compile mode),
it then counts how many of the problems that compile plainly have the solbench candidate PASSED.

    python3 benchmarks/compile_plain.py DATASET... [--mode default] [--device cuda] [--jobs 4] [--run RUN_DIR] [--out plain.json]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*:")
ONE = """
import json, sys
from pathlib import Path
payload = json.loads(sys.stdin.read())
folder = Path(payload["folder"])
(folder / "reference.py").write_text(payload["reference"])
sys.path.insert(0, str(folder))
import torch
import reference
from solbench.bench.correctness import compare_outputs
from solbench.data.inputs import generate_inputs
from solbench.data.loaders import load_problems
problem = next(p for p in load_problems([Path(payload["path"])], synthesize_missing_blobs=True) if p.name == payload["name"])
workload = problem.workload(payload["workload"])
inputs = list(generate_inputs(problem, workload, seed=0, device=payload["device"]).values())
def outputs(result):
    values = list(result) if isinstance(result, (tuple, list)) else [result]
    return dict(zip(problem.definition.outputs, values))
expected = outputs(reference.run(*inputs))
got = outputs(torch.compile(reference.run, mode=payload["mode"], dynamic=False)(*inputs))
check = compare_outputs(got, expected, problem.definition.outputs, workload.effective_tolerance)
print(json.dumps({"compiled": True, "matches": check.passed, "detail": "" if check.passed else check.message[:200]}))
"""


def plain_compile(problem, path: Path, mode: str, device: str, timeout_s: float) -> dict:
    from solbench.data.selection import choose_workloads

    (workload,) = choose_workloads(problem, "smallest:1")
    with tempfile.TemporaryDirectory() as folder:
        payload = {"folder": folder, "reference": problem.definition.reference, "path": str(path), "name": problem.name,
                   "workload": workload.uuid, "mode": mode, "device": device}
        try:
            done = subprocess.run([sys.executable, "-c", ONE], input=json.dumps(payload), capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return {"problem": problem.name, "compiled": False, "detail": f"did not finish in {timeout_s:.0f} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode == 0 and lines:
        return {"problem": problem.name, **json.loads(lines[-1])}
    return {"problem": problem.name, "compiled": False, "detail": error_line(done.stderr)[:200]}


def error_line(stderr: str) -> str:
    """The last line of `stderr` that names an exception (dynamo ends its errors with hints such as
    "Set TORCHDYNAMO_VERBOSE=1 ..."), else its last line."""
    lines = stderr.strip().splitlines() or ["no output"]
    named = [line for line in lines if EXCEPTION_LINE.match(line)]
    return (named or lines)[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--mode", default="default")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--run", type=Path, default=None, help="a solbench run folder to compare with")
    parser.add_argument("--out", type=Path, default=Path("compile-plain.json"))
    args = parser.parse_args()

    from solbench.data.loaders import scan
    from solbench.dataset import resolve_set_paths

    found = [(loaded.problem, path) for path in resolve_set_paths(args.paths) for loaded in scan(path, synthesize_missing_blobs=True)
             if loaded.problem is not None]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(lambda item: plain_compile(item[0], item[1], args.mode, args.device, args.timeout), found))
    compiles = [r["problem"] for r in results if r["compiled"]]
    report = {"mode": args.mode, "device": args.device, "problems": len(results), "compile_plainly": len(compiles),
              "match_eager": sum(bool(r.get("matches")) for r in results), "results": results}
    if args.run is not None:
        summary = json.loads((args.run / "summary.json").read_text())
        failed = {f["problem"] for f in summary.get("baseline_failures", []) if f["candidate"] == f"compile-{args.mode}"}
        scored = {row["problem"] for row in summary["workloads"]}
        judged = [name for name in compiles if name in scored]
        passed = [name for name in judged if name not in failed]
        report["solbench"] = {"judged": len(judged), "candidate_passed": len(passed),
                              "share": round(len(passed) / len(judged), 3) if judged else None,
                              "failed_though_plain_compiles": sorted(name for name in judged if name in failed)}
    args.out.write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "results"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
