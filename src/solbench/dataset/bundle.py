"""How the bundled set `solbench:models` (src/solbench/dataset/models/) is made: the dataset tools,
run in order as a user would run them, with every command and its time written to MANIFEST.md.

    python -m solbench.dataset.bundle OUT [--pool DIR] [--n 120] [--seed 0]

1. `solbench dataset extract MODEL [--modules ...] [--backward] [--dtype ...]` for each entry of PLAN
   into a pool folder;
2. `solbench dataset characterise POOL`;
3. `solbench dataset sample POOL --duplicates sizes --n N --strata ... --share ...`: the same layer
   of models of the same sizes is one problem; the coverage shares of the set are asked for here;
4. `solbench dataset stats OUT` with the coverage targets, into the manifest.
Hand edits: none are made to the files; the problems whose reference is written by hand in the
extractor (quantised GEMMs, paged decode; their descriptions say "hand-written") are listed.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Entry:
    model: str
    modules: str | None = None  # comma-separated; None: all of the model's
    backward: bool = True
    dtype: str | None = None  # None: the model's published dtype

    def arguments(self) -> list[str]:
        found = [self.model]
        if self.modules:
            found += ["--modules", self.modules]
        if self.backward:
            found.append("--backward")
        if self.dtype:
            found += ["--dtype", self.dtype]
        return found


PLAN: tuple[Entry, ...] = ()  # filled in by the extractor's models (see below)
SHARES = ("category=attention:0.30,moe:0.12", "direction=backward:0.25")
STRATA = "category,direction"
TARGETS = ("category=attention:0.30,moe:0.12", "direction=backward:0.20")


def solbench(arguments: list[str], log: list[str]) -> subprocess.CompletedProcess[str]:
    """One solbench command, its line and time kept for the manifest; a failure stops the build."""
    command = [sys.executable, "-m", "solbench.cli", *arguments]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    log.append(f"| `solbench {shlex.join(arguments)}` | {seconds:.1f} s | {'ok' if done.returncode == 0 else f'exit {done.returncode}'} |")
    print(f"solbench {shlex.join(arguments)}: {seconds:.1f} s", flush=True)
    return done


def build(out: Path, pool: Path, n: int, seed: int, plan: tuple[Entry, ...]) -> str:
    log: list[str] = []
    for entry in plan:
        done = solbench(["dataset", "extract", *entry.arguments(), "-o", str(pool), "--force"], log)
        if done.returncode != 0:
            raise SystemExit(f"extract {entry.model} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.stdout[-400:]}")
    solbench(["dataset", "characterise", str(pool), "--force"], log)
    sample = ["dataset", "sample", str(pool), "--n", str(n), "--strata", STRATA, "--duplicates", "sizes", "--seed", str(seed), "-o", str(out)]
    for share in SHARES:
        sample += ["--share", share]
    sampled = solbench(sample, log)
    if sampled.returncode != 0:
        raise SystemExit(f"sample failed: {sampled.stderr.strip()}")
    index = Path(tempfile.mkdtemp()) / "index.json"  # the set's folder keeps only its problems
    stats = ["dataset", "stats", str(out), "--index", str(index)]
    for target in TARGETS:
        stats += ["--target", target]
    shown = solbench(stats, log)
    hand = sorted(p.parent.name for p in out.glob("*/definition.json") if "hand-written" in p.read_text())
    return "\n".join([
        "# The bundled set `solbench:models`",
        "",
        "Made by `python -m solbench.dataset.bundle` (src/solbench/dataset/bundle.py) with the dataset tools, in this order:",
        "",
        "| command | time | result |",
        "|---|---|---|",
        *log,
        "",
        "## What the sample kept (dimensions of `solbench dataset characterise`)",
        "",
        "```",
        sampled.stdout.strip()[-6000:],
        "```",
        "",
        "## Coverage (`solbench dataset stats`)",
        "",
        "```",
        shown.stdout.strip(),
        "```",
        "",
        "## Hand edits",
        "",
        "No file was edited after the tools wrote it. The references of these problems are written by hand in the",
        "extractor (the tool cannot capture them from a transformers layer; each description says so):",
        "",
        *(f"- {name}" for name in hand),
        *([] if hand else ["- none"]),
        "",
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where the set goes (must not exist, or be empty)")
    parser.add_argument("--pool", type=Path, default=None, help="the folder the models are extracted into (default: a temporary one)")
    parser.add_argument("--n", type=int, default=120)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pool = args.pool or Path(tempfile.mkdtemp(prefix="solbench-pool-"))
    manifest = build(args.out, pool, args.n, args.seed, PLAN)
    (args.out / "MANIFEST.md").write_text(manifest)
    print(f"wrote {args.out} ({len(list(args.out.glob('*/definition.json')))} problems) and its MANIFEST.md")


if __name__ == "__main__":
    main()
