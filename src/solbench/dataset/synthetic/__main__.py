"""python3 -m solbench.dataset.synthetic OUT_DIR [--problems N] [--seed S] [--force]"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from solbench.dataset.synthetic import SUBSETS, generate_dataset
from solbench.dataset.synthetic.generate import DEFAULT_PROBLEMS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m solbench.dataset.synthetic", description="Write a synthetic dataset in the public SOL-ExecBench layout.")
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    parser.add_argument("--problems", type=int, default=DEFAULT_PROBLEMS, help=f"number of problems (default {DEFAULT_PROBLEMS}: every template once)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the workload choices (default 0)")
    parser.add_argument("--force", action="store_true", help="write into a non-empty OUT_DIR, replacing its subset folders")
    args = parser.parse_args(argv)
    out_dir: Path = args.out_dir
    if out_dir.exists() and not out_dir.is_dir():
        print(f"error: {out_dir} is not a directory", file=sys.stderr)
        return 2
    if out_dir.is_dir() and any(out_dir.iterdir()):
        if not args.force:
            print(f"error: {out_dir} is not empty; pass --force to replace its subset folders", file=sys.stderr)
            return 2
        for subset in SUBSETS:
            if (out_dir / subset).is_dir():
                shutil.rmtree(out_dir / subset)
    if args.problems < 1:
        print(f"error: --problems must be at least 1, got {args.problems}", file=sys.stderr)
        return 2
    folders = generate_dataset(out_dir, problems=args.problems, seed=args.seed)
    per_subset = {subset: [0, 0] for subset in SUBSETS}
    for folder in folders:
        per_subset[folder.parent.name][0] += 1
        per_subset[folder.parent.name][1] += sum(1 for line in (folder / "workload.jsonl").read_text().splitlines() if line.strip())
    summary = ", ".join(f"{s} {p} problems / {w} workloads" for s, (p, w) in per_subset.items())
    total = sum(w for _, w in per_subset.values())
    print(f"wrote {len(folders)} problems and {total} workloads to {out_dir}: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
