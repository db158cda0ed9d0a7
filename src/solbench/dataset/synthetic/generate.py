"""Turns the templates' specs into problem folders: subset shares, names, workloads, tolerances,
the digit-string spelling of literal dims, and the deliberate workload quirks."""

from __future__ import annotations

import itertools
import json
import random
import uuid
from pathlib import Path

from solbench.dataset.synthetic import attention, gemm, layers, misc, mlp, moe, norms, quant, rope, sampling, ssm
from solbench.dataset.synthetic.core import LARGE_BYTES, SMALL_BYTES, Spec, Tensor, resolve_axes, workload_bytes

SUBSETS = ("L1", "L2", "Quant", "FlashInfer-Bench")
ALIAS_SUBSET = "FlashInfer-Bench"  # its tolerances spell the ratio `required_match_ratio`
MODULES = (gemm, attention, norms, rope, misc, mlp, moe, ssm, quant, sampling, layers)  # new modules last: earlier problems keep their order
NAMESPACE = uuid.UUID("5d0b7c1e-3f7a-4d55-9a43-6f2d1c0e8b21")

DIGIT_STRING_SHARE = 0.25
ABSENT_TOLERANCE = 0.4
MIN_WORKLOADS, MAX_WORKLOADS = 4, 30
DEFAULT_PROBLEMS = 241  # every template once (template_pool): as many as the public set's 235, and 6 of the kinds slowest to analyse there

# Workloads that name an input or axis the definition lacks (as some lines of the public set do):
# (where, name, value) added to every third line after the first.
QUIRKS = {
    "paged_decode_bf16_llama3_70b_ps16_tp8": ("axes", "max_num_pages", 16384),
    "rope_cached_positions_bf16_llama3_70b": ("inputs", "rope_theta", {"type": "scalar", "value": 500000.0}),
    "moe_router_topk_bf16_mixtral_8x7b": ("axes", "num_expert_groups", 1),
}

TOLERANCES = {  # (max_atol, max_rtol, required ratio) by the dtype of the first floating output
    "float32": (1e-4, 1e-4, 0.999),
    "float16": (5e-3, 5e-3, 0.99),
    "bfloat16": (1e-2, 1e-2, 0.99),
}


def template_pool() -> dict[str, list[Spec]]:
    """Every template's spec, by subset, in a fixed order."""
    pool: dict[str, list[Spec]] = {subset: [] for subset in SUBSETS}
    for module in MODULES:
        for subset, specs in module.problems().items():
            pool[subset].extend(specs)
    specs = [spec for subset_specs in pool.values() for spec in subset_specs]
    for spec in specs:
        spec.quirk = QUIRKS.get(spec.name)
    assert QUIRKS.keys() <= {spec.name for spec in specs}, "a quirk names a problem that no template makes"
    return pool


def subset_counts(total: int, sizes: dict[str, int]) -> dict[str, int]:
    """Problems per subset for `total` problems, in the pool's proportions (largest remainder)."""
    whole = sum(sizes.values())
    exact = {s: total * n / whole for s, n in sizes.items()}
    counts = {s: int(v) for s, v in exact.items()}
    for s in sorted(exact, key=lambda s: (counts[s] - exact[s], SUBSETS.index(s)))[: total - sum(counts.values())]:
        counts[s] += 1
    return counts


def _select(specs: list[Spec], count: int, rng: random.Random) -> list[tuple[Spec, str]]:
    """`count` of the subset's specs in pool order; beyond the pool, repeats with a round suffix."""
    if count <= len(specs):
        return [(specs[i], specs[i].name) for i in sorted(rng.sample(range(len(specs)), count))]
    chosen = [(spec, spec.name) for spec in specs]
    for extra in range(count - len(specs)):
        spec = specs[extra % len(specs)]
        chosen.append((spec, f"{spec.name}_r{extra // len(specs) + 2}"))
    return chosen


def _axis_json(value: int | str | None) -> dict:
    if value is None:
        return {"type": "var"}
    if isinstance(value, int):
        return {"type": "const", "value": value}
    return {"type": "expr", "expression": value}


def _tensor_json(tensor: Tensor, digit_strings: bool) -> dict:
    shape = None if tensor.shape is None else [str(d) if digit_strings and isinstance(d, int) else d for d in tensor.shape]
    entry: dict = {"shape": shape, "dtype": tensor.dtype}
    if tensor.description:
        entry["description"] = tensor.description
    return entry


def has_int_literal(spec: Spec) -> bool:
    return any(isinstance(d, int) for x in spec.inputs + spec.outputs for d in x.shape or [])


GRADIENTS = ("torch.autograd", ".backward(", "requires_grad")


def as_published(reference: str) -> str:
    """The reference as the public set writes it: a forward `run` under `@torch.no_grad()` (a reference
    that differentiates keeps grad mode). torch.compile must then resolve the decorator's wrapped
    function by its module, which a baseline that compiles the reference has to allow for."""
    if "\nimport torch\n" not in f"\n{reference}" or any(word in reference for word in GRADIENTS) or "\ndef run(" not in reference:
        return reference
    return reference.replace("\ndef run(", "\n@torch.no_grad()\ndef run(", 1)


def definition_json(spec: Spec, name: str, digit_strings: bool) -> dict:
    definition = {
        "name": name,
        "op_type": spec.op_type,
        "description": spec.description,
        "hf_id": spec.hf_id,
        "axes": {axis: _axis_json(value) for axis, value in spec.axes.items()},
    }
    if spec.constraints:
        definition["constraints"] = list(spec.constraints)
    definition["inputs"] = {x.name: _tensor_json(x, digit_strings) for x in spec.inputs}
    definition["outputs"] = {x.name: _tensor_json(x, digit_strings) for x in spec.outputs}
    definition["reference"] = as_published(spec.reference)
    if spec.custom:
        definition["custom_inputs_entrypoint"] = spec.custom
    return definition


def _combos(spec: Spec) -> list[dict[str, int]]:
    keys = list(spec.grid)
    found = []
    for values in itertools.product(*(spec.grid[k] for k in keys)):
        axes: dict[str, int] = {}
        for key, value in zip(keys, values):
            axes.update(zip(key, value) if isinstance(key, tuple) else [(key, value)])
        if axes == spec.small or (spec.valid and not spec.valid(axes)) or workload_bytes(spec, axes) > LARGE_BYTES:
            continue
        found.append(axes)
    return found


def _tolerance(spec: Spec, rng: random.Random, alias: bool) -> dict | None:
    """A workload's tolerance; every line of a problem whose outputs hold -inf allows it (as the public data does)."""
    draw = rng.random()
    if draw < ABSENT_TOLERANCE:
        return {"allow_negative_inf": True} if spec.neg_inf else None
    if spec.neg_inf and draw < ABSENT_TOLERANCE + 0.35:
        return {"allow_negative_inf": True}
    floating = [x.dtype for x in spec.outputs if x.dtype in TOLERANCES]
    atol, rtol, ratio = spec.tolerance or (TOLERANCES[floating[0]] if floating else (0.0, 0.0, 1.0))
    if spec.op_type.endswith("_backward"):
        atol, rtol = atol * 4, rtol * 4
    tolerance = {"max_atol": atol, "max_rtol": rtol, ("required_match_ratio" if alias else "required_matched_ratio"): ratio}
    return {**tolerance, "allow_negative_inf": True} if spec.neg_inf else tolerance


def workload_lines(spec: Spec, name: str, subset: str, seed: int, base: str) -> list[dict]:
    """The workloads of one problem: the small one first, then a seeded sample of the grid by size."""
    rng = random.Random(f"solbench-synthetic:{seed}:{base}")
    small_bytes = workload_bytes(spec, spec.small)
    if sorted(spec.small) != sorted(spec.var_axes) or small_bytes >= SMALL_BYTES or (spec.valid and not spec.valid(spec.small)):
        raise ValueError(f"{spec.name}: the small workload {spec.small} is not a valid assignment under 8 MB ({small_bytes} bytes)")
    combos = _combos(spec)
    picked = rng.sample(combos, min(rng.randint(MIN_WORKLOADS, MAX_WORKLOADS) - 1, len(combos)))
    picked.sort(key=lambda axes: (workload_bytes(spec, axes), [axes[k] for k in spec.var_axes]))
    lines = []
    for index, given in enumerate([spec.small] + picked):
        axes = resolve_axes(spec, given)
        inputs: dict[str, dict] = {}
        for x in spec.inputs:
            if x.make == "scalar":
                inputs[x.name] = {"type": "scalar", "value": axes[x.value] if isinstance(x.value, str) else x.value}
            else:
                inputs[x.name] = {"type": x.make}
        line = {"uuid": str(uuid.uuid5(NAMESPACE, f"{name}/{seed}/{index}")), "axes": {k: given[k] for k in spec.var_axes}, "inputs": inputs}
        if spec.quirk and index % 3 == 1:
            where, key, value = spec.quirk
            line[where][key] = value
        tolerance = _tolerance(spec, rng, subset == ALIAS_SUBSET)
        if tolerance is not None:
            line["tolerance"] = tolerance
        lines.append(line)
    return lines


def generate_dataset(out_dir: Path, problems: int = DEFAULT_PROBLEMS, seed: int = 0) -> list[Path]:
    """Writes `problems` synthetic problems in the public SOL-ExecBench layout under out_dir
    (out_dir/<subset>/<NNN_name>/definition.json and workload.jsonl); returns the problem folders."""
    if problems < 1:
        raise ValueError(f"problems must be at least 1, got {problems}")
    pool = template_pool()
    rng = random.Random(f"solbench-synthetic:{seed}")
    counts = subset_counts(problems, {s: len(specs) for s, specs in pool.items()})
    chosen = [(subset, spec, base) for subset in SUBSETS for spec, base in _select(pool[subset], counts[subset], rng)]
    with_literals = [i for i, (_, spec, _) in enumerate(chosen) if has_int_literal(spec)]
    digit_strings = set(rng.sample(with_literals, min(len(with_literals), round(DIGIT_STRING_SHARE * problems))))
    width = max(3, len(str(problems)))
    folders = []
    for index, (subset, spec, base) in enumerate(chosen):
        name = f"{index + 1:0{width}d}_{base}"
        folder = Path(out_dir) / subset / name
        folder.mkdir(parents=True, exist_ok=True)
        definition = definition_json(spec, name, index in digit_strings)
        (folder / "definition.json").write_text(json.dumps(definition, indent=2) + "\n")
        lines = workload_lines(spec, name, subset, seed, base)
        (folder / "workload.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        folders.append(folder)
    return folders
