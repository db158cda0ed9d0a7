"""The leaderboard service on real work (issue 30): `solbench serve` over the bundled problems with the
pool executor, every bundled example and every problem's reference submitted over HTTP, and what it took.

Starts the server on loopback over a fresh SQLite file, makes a user, submits, polls until every
submission is done, then reads the boards and pages. Reports per submission its state, the statuses
of its workloads, its mean score and the seconds from submission to result; the baselines' time (the
first results wait for them); the whole wall; and the pages' HTTP statuses.

    python3 benchmarks/serve_at_scale.py [--executor pool] [--device cuda] [--workloads smallest:1] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def http(base: str, method: str, path: str, token: str | None = None, body: dict | None = None) -> tuple[int, object, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(base + path, data=json.dumps(body).encode() if body is not None else None, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    text = raw.decode("utf-8", "replace")
    try:
        return status, json.loads(text), text
    except ValueError:
        return status, None, text


def submissions() -> list[dict]:
    """The bundled examples' solutions, then each bundled problem's reference as a solution."""
    from solbench.bench.orchestrator import reference_solution
    from solbench.data.loaders import load_problems

    found = [json.loads(path.read_text()) for path in sorted((ROOT / "examples").glob("*/solution.json"))]
    for problem in load_problems([ROOT / "src" / "solbench" / "dataset" / "problems"]):
        found.append(json.loads(reference_solution(problem).model_dump_json()))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--executor", default="pool")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--workloads", default="smallest:1")
    parser.add_argument("--timeout", type=float, default=540.0, help="seconds to wait for every result")
    parser.add_argument("--out", type=Path, help="folder for the JSON result and the server's log")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="serve-at-scale-"))
    out = args.out or scratch
    out.mkdir(parents=True, exist_ok=True)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    log = out / "serve.log"
    command = [sys.executable, "-m", "solbench.cli", "serve", "--db", f"sqlite:///{scratch / 'serve.db'}", "--port", str(port),
               "--executor", args.executor, "--device", args.device, "--workloads", args.workloads]
    started = time.monotonic()
    with log.open("wb") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        while http_ok(base) is False:
            if server.poll() is not None or time.monotonic() - started > 180:
                print(f"the server did not come up: {log.read_text()[-2000:]}", file=sys.stderr)
                return 1
            time.sleep(0.3)
        up_s = time.monotonic() - started
        admin = re.search(r"API token \(shown once\): (\S+)", log.read_text())
        status, body, text = http(base, "POST", "/api/admin/users", admin.group(1) if admin else None, {"name": "bench"})
        if status != 201:
            print(f"could not make a user: {status} {text[:300]}", file=sys.stderr)
            return 1
        token = body["token"]
        sent: dict[int, tuple[str, float]] = {}
        for solution in submissions():
            status, body, text = http(base, "POST", "/api/submissions", token, solution)
            if status not in (200, 201, 202):
                print(f"{solution['name']}: refused {status} {text[:200]}", file=sys.stderr)
                continue
            sent[body["id"]] = (solution["name"], time.monotonic())
        results: dict[int, dict] = {}
        while len(results) < len(sent) and time.monotonic() - started < args.timeout:
            for number, (name, at) in sent.items():
                if number in results:
                    continue
                _, body, _ = http(base, "GET", f"/api/submissions/{number}", token)
                if body and body.get("state") in ("done", "failed", "cancelled"):
                    results[number] = {**body, "seconds": round(time.monotonic() - at, 1)}
            time.sleep(1.0)
        wall = time.monotonic() - started
        _, boards, _ = http(base, "GET", "/api/boards")
        pages = {"/": http(base, "GET", "/")[0]}
        for board in boards or []:
            path = f"/boards/{board['dataset_id']}/{board['environment_id']}"
            pages[path] = http(base, "GET", path)[0]
            _, standing, _ = http(base, "GET", "/api" + path)
        rows = []
        for number, (name, _) in sent.items():
            found = results.get(number)
            statuses = Counter(r["status"] for r in found["results"]) if found else Counter()
            rows.append({"id": number, "name": name, "state": found["state"] if found else "unfinished", "score": found.get("score") if found else None,
                         "statuses": dict(statuses), "seconds": found["seconds"] if found else None,
                         "gpu": sorted({r["gpu_uuid"] for r in found["results"] if r.get("gpu_uuid")}) if found else []})
            print(f"{name:44} {rows[-1]['state']:10} score {rows[-1]['score'] if rows[-1]['score'] is not None else '-':>8}  "
                  f"{dict(statuses)}  {rows[-1]['seconds']} s")
        summary = {"command": " ".join(command), "server_up_s": round(up_s, 1), "wall_s": round(wall, 1), "submitted": len(sent),
                   "finished": len(results), "states": dict(Counter(r["state"] for r in rows)), "pages": pages, "boards": boards,
                   "standings": standing if boards else None, "submissions": rows}
        print(json.dumps({k: v for k, v in summary.items() if k not in ("submissions", "standings")}, indent=1))
        (out / "serve_at_scale.json").write_text(json.dumps(summary, indent=1))
        return 0 if len(results) == len(sent) else 1
    finally:
        server.terminate()
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()


def http_ok(base: str) -> bool:
    try:
        return http(base, "GET", "/api/health")[0] == 200
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
