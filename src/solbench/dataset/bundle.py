"""How the bundled set `solbench:models` (src/solbench/dataset/models/) is made: the dataset tools,
run in order as a user would run them, with every command and its time written to MANIFEST.md.

    python -m solbench.dataset.bundle OUT [--pool DIR] [--n 132] [--seed 0] [--calibrate-on cpu|cuda [--calibrate-only]]

1. `solbench dataset extract MODEL [--modules ...] [--backward] [--dtype ...]` for each entry of PLAN
   into a pool folder;
2. problems whose smallest workload needs more than 3 GiB of inputs leave the pool (each problem of
   the set runs on a CPU at its smallest workload in CI), then `solbench dataset characterise POOL`;
3. `solbench dataset sample POOL --duplicates sizes --n N --strata ... --share ...`: the same layer
   of models of the same sizes is one problem; the coverage shares of the set are asked for here;
4. `solbench dataset extract` for each entry of ADDED, every problem it makes copied into the set as it
   comes out (extractions that came after the set was drawn; no sampling of their own);
5. `solbench dataset stats OUT` with the coverage targets, into the manifest;
6. with `--calibrate-on DEVICE`: `solbench calibrate-tolerance` for each problem of CALIBRATED, whose
   dtype-default tolerance is below its reference's own error against fp64 (found by
   benchmarks/tolerance_audit.py). `--calibrate-only` runs this step alone on a set made before,
   adding its commands to the set's MANIFEST.md.
Hand edits: none are made to the files; the problems whose reference is written by hand in the
extractor (quantised GEMMs, paged decode; their descriptions say "hand-written") are listed.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from solbench.data.files import write_atomically


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


# Every model at its published dtype, forward and backward; then fp32 and bf16 variants where production
# runs them too (fp32 norms, RoPE, attention and MLPs of the LLMs; bf16 ViT). No fp32/fp16 MoE: there
# transformers runs the experts' grouped GEMM through an operator of its own (the extractor refuses it).
# The modules of these models as the extractor offered them when the set was drawn: modules added since
# (attention_varlen, moe_ep32) would change the pool and so the draw; the set gets them through ADDED.
DRAWN_MODULES = {
    "llama3_8b": "attention,norm,rope,rope_apply,attention_decode,attention_paged_decode,mlp,fp8_gemm_qkv,fp8_gemm_o,fp8_gemm_gate_up,"
                 "fp8_gemm_down,nvfp4_gemm_qkv,nvfp4_gemm_o,nvfp4_gemm_gate_up,nvfp4_gemm_down",
    "llama3_70b": "attention,norm,rope,rope_apply,attention_decode,attention_paged_decode,mlp,fp8_gemm_qkv,fp8_gemm_o,fp8_gemm_gate_up,"
                  "fp8_gemm_down,nvfp4_gemm_gate_up,nvfp4_gemm_down",
    "deepseek_v3": "attention,norm,rope,mlp,moe,moe_ep8,moe_router,moe_experts,fp8_block_gemm_q_a,fp8_block_gemm_q_b,fp8_block_gemm_kv_b,"
                   "fp8_block_gemm_o,fp8_block_gemm_expert_gate_up,fp8_block_gemm_expert_down,nvfp4_gemm_expert_gate_up,nvfp4_gemm_expert_down",
}
PLAN: tuple[Entry, ...] = (
    *(Entry(model, DRAWN_MODULES.get(model)) for model in ("llama3_8b", "llama3_70b", "qwen3_8b", "qwen3_30b_a3b", "qwen3_235b_a22b", "mixtral_8x7b", "mixtral_8x22b",
                                 "deepseek_v3", "gemma3_27b", "vit_large", "whisper_large_v3", "mamba_codestral_7b", "convnext_large",
                                 "resnet50", "chameleon_vqgan")),
    Entry("llama3_8b", "norm,rope_apply,attention,attention_decode,mlp", dtype="float32"),
    Entry("llama3_70b", "norm,rope_apply,attention,mlp", dtype="float32"),
    Entry("qwen3_8b", "norm,attention,rope_apply,mlp", dtype="float32"),
    Entry("gemma3_27b", "norm,attention_sliding,mlp", dtype="float32"),
    Entry("mamba_codestral_7b", dtype="float32"),
    Entry("whisper_large_v3", dtype="float32"),
    Entry("vit_large", dtype="bfloat16"),
)
# Extracted after the set was drawn and added whole (MANIFEST.md, "Added after the sample"): Gemma-2's
# softcapped attention, DeepSeek-V3's MoE at 32-way expert parallelism, Llama-3's packed varlen prefill.
ADDED: tuple[Entry, ...] = (
    Entry("gemma2_27b", "attention,attention_sliding,attention_decode"),
    Entry("deepseek_v3", "moe_ep32", backward=False),
    Entry("llama3_8b", "attention_varlen"),
)
SHARES = ("category=attention:0.30,moe:0.125", "direction=backward:0.25", "precision=float32:0.30")
STRATA = "category,direction,precision"
TARGETS = ("category=attention:0.30,moe:0.12", "direction=backward:0.20")


CPU_INPUT_BYTES = 3 * 1024**3  # the smallest workload of every problem of the set runs on a CPU in CI


# Problems whose dtype-default tolerance fails their own reference against an fp64 run of it (the
# reference itself outside it on 1.0% and 0.3% of elements where 0.1% is allowed, 1.6% where 1% is;
# benchmarks/results/2026-12-07e-cpu-tolerance-audit-*): an honest kernel that rounds differently, a
# compiled baseline among them, fails there. calibrate-tolerance sets theirs from measurement.
CALIBRATED = ("llama3_70b_mlp", "deepseek_v3_mlp", "chameleon_vqgan_resnet_block_backward")
CALIBRATED_HEADING = "## Tolerances calibrated after the sample (`solbench calibrate-tolerance`)"


def calibrate_listed(out: Path, names: tuple[str, ...], device: str, runs: int | None = None) -> list[str]:
    """`solbench calibrate-tolerance` for each listed problem the set holds; the manifest section of
    the commands. A problem whose calibration fails stops the build (its workloads stay as they were)."""
    log: list[str] = []
    for name in names:
        if not (out / name / "definition.json").is_file():
            continue
        done = solbench(["calibrate-tolerance", str(out / name), "--device", device, *(["--runs", str(runs)] if runs else [])], log)
        if done.returncode != 0:
            raise SystemExit(f"calibrate-tolerance {name} failed: {(done.stderr.strip() or done.stdout.strip())[-400:]}")
    return [CALIBRATED_HEADING, "", "| command | time | result |", "|---|---|---|", *log, ""] if log else []


def too_large_for_a_cpu(pool: Path) -> list[tuple[str, int]]:
    """The problems of the pool whose smallest workload's inputs exceed CPU_INPUT_BYTES (name, bytes)."""
    from solbench.data.loaders import load_problems
    from solbench.dataset.catalog.analyse import input_bytes, representative

    found = []
    for problem in load_problems([pool]):
        size = sum(input_bytes(problem, representative(problem, "smallest")).values())
        if size > CPU_INPUT_BYTES:
            found.append((problem.name, size))
    return sorted(found)


def solbench(arguments: list[str], log: list[str]) -> subprocess.CompletedProcess[str]:
    """One solbench command, its line and time kept for the manifest; a failure stops the build."""
    command = [sys.executable, "-m", "solbench.cli", *arguments]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    log.append(f"| `solbench {shlex.join(arguments)}` | {seconds:.1f} s | {'ok' if done.returncode == 0 else f'exit {done.returncode}'} |")
    print(f"solbench {shlex.join(arguments)}: {seconds:.1f} s", flush=True)
    return done


def extract_entry(entry: Entry, folder: Path, log: list[str]) -> None:
    """`solbench dataset extract` of one entry into `folder`; a failure stops the build."""
    done = solbench(["dataset", "extract", *entry.arguments(), "-o", str(folder), "--force"], log)
    if done.returncode != 0:
        raise SystemExit(f"extract {entry.model} failed: {done.stderr.strip().splitlines()[-1] if done.stderr.strip() else done.stdout[-400:]}")


def add_whole(out: Path, scratch: Path, added: tuple[Entry, ...], log: list[str]) -> list[str]:
    """Each entry extracted into a folder of its own under `scratch` (not the pool, which a later run may
    sample again), and every problem it made copied into `out` (one that could not run on a CPU at its
    smallest workload stays out); the names of those copied."""
    copied: list[str] = []
    for number, entry in enumerate(added):
        folder = scratch / f"added-{number}"
        extract_entry(entry, folder, log)
        too_large = {name for name, _ in too_large_for_a_cpu(folder)}
        for definition in sorted(folder.glob("*/definition.json")):
            name = definition.parent.name
            if name in too_large:
                continue
            if (out / name).exists():
                raise SystemExit(f"{out / name}: the sample has this problem already; {entry.model} would replace it")
            shutil.copytree(definition.parent, out / name)
            copied.append(name)
    return copied


def build(out: Path, pool: Path, n: int, seed: int, plan: tuple[Entry, ...], extract: bool = True, added: tuple[Entry, ...] = (),
          calibrate_on: str | None = None, calibrated: tuple[str, ...] = CALIBRATED) -> str:
    log: list[str] = []
    for entry in plan:
        if not extract:
            log.append(f"| `solbench {shlex.join(['dataset', 'extract', *entry.arguments(), '-o', str(pool), '--force'])}` | (an earlier run) | ok |")
            continue
        extract_entry(entry, pool, log)
    left_out = too_large_for_a_cpu(pool)
    for name, _ in left_out:  # out of the pool before sampling: the set's smallest workloads all run on a CPU
        shutil.rmtree(pool / name)
    solbench(["dataset", "characterise", str(pool), "--force"], log)
    sample = ["dataset", "sample", str(pool), "--n", str(n), "--strata", STRATA, "--duplicates", "sizes", "--seed", str(seed), "-o", str(out)]
    for share in SHARES:
        sample += ["--share", share]
    sampled = solbench(sample, log)
    if sampled.returncode != 0:
        raise SystemExit(f"sample failed: {sampled.stderr.strip()}")
    added_log: list[str] = []
    copied = add_whole(out, Path(tempfile.mkdtemp(prefix="solbench-added-")), added, added_log)
    index = Path(tempfile.mkdtemp()) / "index.json"  # the set's folder keeps only its problems
    stats = ["dataset", "stats", str(out), "--index", str(index)]
    for target in TARGETS:
        stats += ["--target", target]
    shown = solbench(stats, log)
    calibration = calibrate_listed(out, calibrated, calibrate_on) if calibrate_on else []
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
        *(["## Added after the sample (every problem of these commands)", "", "| command | time | result |", "|---|---|---|", *added_log, "",
            ", ".join(f"`{name}`" for name in copied), ""] if added else []),
        *calibration,
        "## Coverage (`solbench dataset stats`)",
        "",
        "```",
        shown.stdout.strip(),
        "```",
        "",
        f"## Left out: the smallest workload needs more than {CPU_INPUT_BYTES / 1024**3:.0f} GiB of inputs (no CPU run in CI)",
        "",
        *(f"- {name} ({size / 1024**3:.1f} GiB)" for name, size in left_out),
        *([] if left_out else ["- none"]),
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


def add_calibration(manifest: Path, section: list[str]) -> None:
    """The calibration's section into a manifest written before, ahead of its coverage section (an
    earlier calibration's section is replaced)."""
    text = manifest.read_text()
    if CALIBRATED_HEADING in text:
        before, _, rest = text.partition(CALIBRATED_HEADING)
        following = rest.find("\n## ")
        text = before + (rest[following + 1:] if following >= 0 else "")
    body = "\n".join(section) + "\n" if section else ""
    before, marker, after = text.partition("## Coverage")
    write_atomically(manifest, before + body + marker + after if marker else text.rstrip("\n") + "\n\n" + body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where the set goes (must not exist, or be empty)")
    parser.add_argument("--pool", type=Path, default=None, help="the folder the models are extracted into (default: a temporary one)")
    parser.add_argument("--n", type=int, default=132)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pool-ready", action="store_true", help="the pool holds the plan's extraction already: only sample it")
    parser.add_argument("--calibrate-on", default=None, metavar="DEVICE", help=f"calibrate the tolerances of {', '.join(CALIBRATED)} on this device")
    parser.add_argument("--calibrate-only", action="store_true", help="only that, on the set already in OUT (its MANIFEST.md gets the commands)")
    args = parser.parse_args()
    if args.calibrate_only:
        if not args.calibrate_on or not (args.out / "MANIFEST.md").is_file():
            parser.error("--calibrate-only needs --calibrate-on DEVICE and a set made before in OUT (with its MANIFEST.md)")
        add_calibration(args.out / "MANIFEST.md", calibrate_listed(args.out, CALIBRATED, args.calibrate_on))
        print(f"calibrated the tolerances of {', '.join(CALIBRATED)} in {args.out}; its MANIFEST.md says how")
        return
    pool = args.pool or Path(tempfile.mkdtemp(prefix="solbench-pool-"))
    manifest = build(args.out, pool, args.n, args.seed, PLAN, extract=not args.pool_ready, added=ADDED, calibrate_on=args.calibrate_on)
    (args.out / "MANIFEST.md").write_text(manifest)
    print(f"wrote {args.out} ({len(list(args.out.glob('*/definition.json')))} problems) and its MANIFEST.md")


if __name__ == "__main__":
    main()
