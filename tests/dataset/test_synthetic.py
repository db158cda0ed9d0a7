"""The synthetic dataset in the public SOL-ExecBench layout: shape of the set, its conventions (counted
by reading the files back), the consistency of every problem, and every reference run on the CPU at
its smallest workload."""

from __future__ import annotations

import ast
import json
import operator
import re
import subprocess
import sys
import types
from collections import Counter
from pathlib import Path

import pytest
import torch

import solbench.dataset.synthetic as synthetic
from solbench.dataset.synthetic import generate_dataset

SUBSET_SHARES = {"L1": 0.40, "L2": 0.35, "Quant": 0.10, "FlashInfer-Bench": 0.15}
DEFAULT_PROBLEMS = 241
BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1, "float4_e2m1fn_x2": 1,
         "int64": 8, "int32": 4, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}
FLOATS = {"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn_x2"}
FP8 = {"float8_e4m3fn", "float8_e5m2"}
INDEX_NAMES = {"input_ids", "labels", "kv_indptr", "kv_indices", "kv_last_page_len", "qo_indptr", "cu_seqlens", "positions",
               "topk_ids", "slot_mapping", "sorted_rows", "batch_indices", "cache_seqlens"}


# --- reading the files back --------------------------------------------------------------------

class Problem:
    def __init__(self, folder: Path):
        self.folder = folder
        self.subset = folder.parent.name
        self.definition = json.loads((folder / "definition.json").read_text())
        self.workloads = [json.loads(line) for line in (folder / "workload.jsonl").read_text().splitlines() if line.strip()]

    @property
    def name(self) -> str:
        return self.definition["name"]

    @property
    def tensors(self) -> dict:
        return {**self.definition["inputs"], **self.definition["outputs"]}

    def var_axes(self) -> set[str]:
        return {a for a, spec in self.definition["axes"].items() if spec["type"] == "var"}

    def axes(self, workload: dict) -> dict[str, int]:
        """All axis values of a workload: consts, the workload's vars, expressions evaluated here."""
        values = {a: s["value"] for a, s in self.definition["axes"].items() if s["type"] == "const"}
        values.update({a: v for a, v in workload["axes"].items() if a in self.definition["axes"]})
        pending = {a: s["expression"] for a, s in self.definition["axes"].items() if s["type"] == "expr"}
        while pending:
            ready = {a: e for a, e in pending.items() if names_in(e) <= values.keys()}
            assert ready, f"{self.name}: expression axes cannot be resolved: {pending}"
            for axis, expression in ready.items():
                values[axis] = evaluate(expression, values)
                del pending[axis]
        return values

    def shape(self, spec: dict, axes: dict[str, int]) -> tuple[int, ...]:
        return tuple(int(d) if isinstance(d, int) or d.isdigit() else axes[d] for d in spec["shape"])

    def nbytes(self, workload: dict) -> int:
        axes = self.axes(workload)
        total = 0
        for spec in self.tensors.values():
            if spec["shape"] is not None:
                count = 1
                for d in self.shape(spec, axes):
                    count *= d
                total += count * BYTES[spec["dtype"]]
        return total

    def smallest(self) -> dict:
        return min(self.workloads, key=self.nbytes)

    def module(self) -> types.ModuleType:
        module = types.ModuleType(f"reference_{self.name}")
        exec(compile(self.definition["reference"], f"<{self.name}>", "exec"), module.__dict__)
        return module


OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
             ast.Mod: operator.mod, ast.Pow: operator.pow}


def names_in(expression: str) -> set[str]:
    return {node.id for node in ast.walk(ast.parse(expression, mode="eval")) if isinstance(node, ast.Name)}


def evaluate(expression: str, values: dict[str, int]) -> int:
    def walk(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        raise AssertionError(f"unexpected expression {expression!r}")

    return walk(ast.parse(expression, mode="eval"))


def load(root: Path) -> list[Problem]:
    return [Problem(folder) for folder in sorted(p.parent for p in root.glob("*/*/definition.json"))]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> tuple[Path, list[Path], list[Problem]]:
    root = tmp_path_factory.mktemp("synthetic")
    folders = generate_dataset(root)
    return root, folders, load(root)


@pytest.fixture(scope="module")
def problems(dataset) -> list[Problem]:
    return dataset[2]


def quirk_names() -> set[str]:
    """The problems whose workloads deliberately name an extra axis or input, as the docstring lists them."""
    return set(re.findall(r"^- (\d{3}_\w+):", synthetic.__doc__, flags=re.MULTILINE))


def primary_dtype(problem: Problem) -> str:
    """The narrowest floating dtype among the problem's tensors."""
    order = ["float4_e2m1fn_x2", "float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64"]
    dtypes = {spec["dtype"] for spec in problem.tensors.values()}
    return next((d for d in order if d in dtypes), "int")


# --- the set as a whole ------------------------------------------------------------------------

def test_shape_of_the_set(dataset, problems):
    root, folders, _ = dataset
    assert len(folders) == len(problems) == DEFAULT_PROBLEMS
    assert sorted(folders) == [p.folder for p in problems]
    counts = Counter(p.subset for p in problems)
    assert set(counts) == set(SUBSET_SHARES)
    for subset, share in SUBSET_SHARES.items():
        assert abs(counts[subset] - share * DEFAULT_PROBLEMS) <= 4, counts
    names = [p.name for p in problems]
    assert len(set(names)) == len(names)
    assert all(p.folder.name == p.name for p in problems)
    assert all(re.fullmatch(r"\d{3}_[a-z0-9_]+", name) for name in names)
    assert sorted(int(name[:3]) for name in names) == list(range(1, DEFAULT_PROBLEMS + 1))
    assert len({name[4:] for name in names}) == len(names)
    workloads = [len(p.workloads) for p in problems]
    assert abs(sum(workloads) - 3950) <= 395, sum(workloads)
    assert min(workloads) >= 4 and max(workloads) <= 32
    assert len(set(workloads)) >= 15  # the counts vary
    uuids = [w["uuid"] for p in problems for w in p.workloads]
    assert len(set(uuids)) == len(uuids)


def test_deterministic(tmp_path, dataset):
    root = dataset[0]
    generate_dataset(tmp_path / "again")
    first = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "again"): p.read_bytes() for p in (tmp_path / "again").rglob("*") if p.is_file()}
    assert first.keys() == second.keys() and first == second
    generate_dataset(tmp_path / "other", problems=12, seed=3)
    assert len(load(tmp_path / "other")) == 12


def test_literal_and_scalar_conventions(problems):
    digit_strings = [p for p in problems if any(isinstance(d, str) and d.isdigit() for s in p.tensors.values() for d in s["shape"] or [])]
    assert 0.2 * DEFAULT_PROBLEMS <= len(digit_strings) <= 0.3 * DEFAULT_PROBLEMS
    assert any(["1"] == s["shape"][:1] or "1" in s["shape"] for p in digit_strings for s in p.tensors.values() if s["shape"])

    def scalar_problems(kind: str) -> list[Problem]:
        return [p for p in problems if any(spec["shape"] is None and all(w["inputs"][n]["type"] == kind for w in p.workloads)
                                           for n, spec in p.definition["inputs"].items())]

    assert len(scalar_problems("random")) >= 3
    assert len(scalar_problems("scalar")) >= 40
    values = {w["inputs"][n]["value"] for p in problems for w in p.workloads
              for n, spec in p.definition["inputs"].items() if w["inputs"][n]["type"] == "scalar"}
    assert {1e-5, 1e-6} <= values
    zero_d = [p for p in problems if any(s["shape"] == [] for s in p.definition["outputs"].values())]
    assert len(zero_d) >= 3


def test_quantised_dtypes(problems):
    fp4 = [p for p in problems if any(s["dtype"] == "float4_e2m1fn_x2" for s in p.tensors.values())]
    assert len(fp4) >= 6 and {p.subset for p in fp4} == {"Quant"}
    for p in fp4:
        halves = {a for a, s in p.definition["axes"].items() if s["type"] == "expr" and s["expression"].endswith("// 2")}
        packed = [s for s in p.tensors.values() if s["dtype"] == "float4_e2m1fn_x2"]
        assert halves and all(s["shape"][-1] in halves for s in packed), p.name
        assert any(s["dtype"] == "float8_e4m3fn" and "// 16" in p.definition["axes"][s["shape"][-1]].get("expression", "")
                   for s in p.tensors.values() if s["shape"] and s["shape"][-1] in p.definition["axes"]), p.name
    fp8 = [p for p in problems if any(s["dtype"] in FP8 for s in p.tensors.values())]
    assert len(fp8) >= 15
    block = [p for p in fp8 if "128, 128" in p.definition["reference"]]
    per_tensor = [p for p in fp8 if "a_scale" in p.definition["inputs"] and p.definition["inputs"]["a_scale"]["shape"] in ([1], ["1"])]
    assert len(block) >= 3 and len(per_tensor) >= 3


def test_tolerances(problems):
    lines = [(p, w) for p in problems for w in p.workloads]
    absent = [w for _, w in lines if "tolerance" not in w]
    neg_inf_only = [(p, w) for p, w in lines if w.get("tolerance") == {"allow_negative_inf": True}]
    full = [(p, w) for p, w in lines if "max_atol" in w.get("tolerance", {})]
    assert 0.3 <= len(absent) / len(lines) <= 0.5
    assert len({p.name for p, _ in neg_inf_only}) >= 3
    assert len(full) >= 0.3 * len(lines)
    assert all({"max_atol", "max_rtol"} < w["tolerance"].keys() for _, w in full)
    alias = {p.subset for p, w in full if "required_match_ratio" in w["tolerance"]}
    proper = {p.subset for p, w in full if "required_matched_ratio" in w["tolerance"]}
    assert len(alias) == 1 and not alias & proper
    assert all(("required_match_ratio" in w["tolerance"]) == (p.subset in alias) for p, w in full)


def test_special_input_names(problems):
    names = Counter(n for p in problems for n in p.definition["inputs"])
    for name in ["norm_weight", "input_layernorm_weight", "post_attention_layernorm_weight", "attention_mask", "text_mask",
                 "cos", "sin", "cos_cached", "sin_cached", "rstd", "variance", "A_log", "A", "dt", "g", "attn_weights",
                 "routing_weights", "gate_proj", "up_proj", "down_proj", "q_proj_weight", "weight"]:
        assert names[name] >= 1, name
    assert sum(c for n, c in names.items() if n.endswith("_norm_bias")) >= 3
    assert names["weight"] >= 10 and names["cos"] >= 3 and names["norm_weight"] >= 3
    for p in problems:
        mask = p.definition["inputs"].get("attention_mask")
        if mask:
            assert mask["shape"][-1] == mask["shape"][-2], p.name
    assert sum(1 for p in problems for s in p.definition["inputs"].values() if s.get("description")) >= 15


def test_index_inputs_are_always_custom(problems):
    seen = set()
    for p in problems:
        for name, spec in p.definition["inputs"].items():
            integer = spec["dtype"] not in FLOATS
            if integer and spec["shape"] is not None or name in INDEX_NAMES:
                seen.add(name)
                assert all(w["inputs"][name]["type"] == "custom" for w in p.workloads), (p.name, name)
                assert p.definition.get("custom_inputs_entrypoint"), p.name
    assert INDEX_NAMES <= seen
    customs = [p for p in problems if p.definition.get("custom_inputs_entrypoint")]
    assert len(customs) >= 25
    assert len({p.definition["custom_inputs_entrypoint"] for p in customs}) >= 3


def test_forward_references_run_under_no_grad_as_published(problems):
    """As in the public set, a forward reference's run is decorated with @torch.no_grad(); one that
    differentiates is not (it needs grad mode)."""
    decorated = [p for p in problems if "@torch.no_grad()\ndef run(" in p.definition["reference"]]
    assert len(decorated) >= 0.8 * len(problems)
    for p in problems:
        if any(word in p.definition["reference"] for word in ("torch.autograd", ".backward(", "requires_grad")):
            assert p not in decorated, p.name


def test_structures(problems):
    def count(pattern: str) -> int:
        return sum(1 for p in problems if re.search(pattern, p.definition["reference"]))

    assert count(r"is_causal=True") >= 5
    assert count(r"torch\.triu\(torch\.ones\(") >= 5
    assert count(r"masked_fill\(.*float\(\"-inf\"\)") >= 5
    assert count(r"\.to\(torch\.float32\) @ \w+\.to\(torch\.float32\)") >= 3
    assert count(r"\.to\(torch\.bfloat16\)") >= 10
    assert count(r"\[\.\.\., :, None\] \* |\[:, :, None\] \* ") >= 2 and count(r"\.sum\(-2\)") >= 2
    assert count(r"torch\.bincount") >= 5 and count(r"torch\.nonzero") >= 1 and count(r"torch\.argsort") >= 4
    assert count(r"index_add_") >= 5 and count(r"for expert, count in enumerate") >= 4
    assert count(r"torch\.autograd\.grad") >= 20
    assert count(r"torch\.fft\.rfft") >= 2 and count(r"torch\.fft\.irfft") >= 2
    assert count(r"index_copy_") >= 3 and count(r"\.item\(\)") >= 1
    assert count(r"torch\.cuda\.is_available\(\)") == 1
    assert count(r"F\.conv2d") >= 4 and count(r"F\.conv1d\(.*groups=") >= 2
    assert count(r"torch\.cumsum") >= 3 and count(r"F\.embedding") >= 3
    assert count(r"softcap") >= 3 and count(r"window_size") >= 2
    assert count(r"F\.cross_entropy") >= 5 and count(r"torch\.log_softmax") >= 2
    assert count(r"approximate=\"tanh\"") >= 3 and count(r"F\.group_norm") >= 2 and count(r"F\.layer_norm") >= 4
    assert sum(1 for p in problems if p.definition.get("constraints")) >= 20
    assert all(isinstance(p.definition["hf_id"], str) and "/" in p.definition["hf_id"] for p in problems)
    models = " ".join(p.definition["hf_id"].lower() for p in problems)
    for model in ["llama-3-8b", "llama-3-70b", "qwen", "mixtral", "deepseek", "gemma", "vit", "whisper", "mamba"]:
        assert model in models, model


def test_backward_and_dtype_shares(problems):
    backward = [p for p in problems if p.definition["op_type"].endswith("_backward")]
    assert 0.17 <= len(backward) / len(problems) <= 0.23
    assert all("backward" in p.name for p in backward)
    shares = Counter(primary_dtype(p) for p in problems)
    assert 0.38 <= shares["bfloat16"] / len(problems) <= 0.52, shares
    assert 0.22 <= shares["float32"] / len(problems) <= 0.36, shares
    assert shares["float16"] >= 8 and shares["float8_e4m3fn"] >= 10 and shares["float4_e2m1fn_x2"] >= 6


def test_quirks_are_rare_and_listed(problems):
    listed = quirk_names()
    assert 2 <= len(listed) <= 3
    odd = set()
    for p in problems:
        for w in p.workloads:
            if set(w["axes"]) - p.var_axes() or set(w["inputs"]) - set(p.definition["inputs"]):
                odd.add(p.name)
    assert odd == listed


def test_sizes(problems):
    for p in problems:
        sizes = [p.nbytes(w) for w in p.workloads]
        assert min(sizes) < 8 * 2**20, p.name
        assert max(sizes) <= 2 * 2**30, p.name
        assert max(sizes) >= 4 * min(sizes), p.name  # the others are realistic sizes


# --- every problem -----------------------------------------------------------------------------

def test_definitions_and_workloads_agree(problems):
    listed = quirk_names()
    for p in problems:
        d = p.definition
        assert {"name", "op_type", "description", "hf_id", "axes", "inputs", "outputs", "reference"} <= d.keys(), p.name
        tree = ast.parse(d["reference"])
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        run = functions["run"]
        assert [a.arg for a in run.args.args] == list(d["inputs"]), p.name
        assert not (run.args.vararg or run.args.kwarg or run.args.kwonlyargs or run.args.posonlyargs), p.name
        customs = [n for n in d["inputs"] if p.workloads[0]["inputs"][n]["type"] == "custom"]
        if customs or "custom_inputs_entrypoint" in d:
            entry = functions[d["custom_inputs_entrypoint"]]
            assert [a.arg for a in entry.args.args] == ["axes", "device"], p.name
        for spec in p.tensors.values():
            for dim in spec["shape"] or []:
                assert isinstance(dim, int) or dim.isdigit() or dim in d["axes"], (p.name, dim)
        for w in p.workloads:
            assert set(w) <= {"uuid", "axes", "inputs", "tolerance"}, p.name
            extra_axes = set(w["axes"]) - p.var_axes()
            extra_inputs = set(w["inputs"]) - set(d["inputs"])
            assert p.var_axes() <= set(w["axes"]), p.name
            assert not (extra_axes or extra_inputs) or p.name in listed, p.name
            assert set(d["inputs"]) <= set(w["inputs"]), p.name
            for name, spec in d["inputs"].items():
                entry = w["inputs"][name]
                assert entry["type"] in {"random", "scalar", "custom"}, p.name
                assert entry["type"] != "scalar" or spec["shape"] is None, (p.name, name)
                assert entry["type"] == p.workloads[0]["inputs"][name]["type"], (p.name, name)


def make_inputs(problem: Problem, workload: dict, module: types.ModuleType, seed: int) -> list:
    """The test harness: standard normal floats cast to the dtype (fp8 clipped to +-2), fp4 as random
    bytes, custom inputs from the reference's entry point under torch.manual_seed."""
    axes = problem.axes(workload)
    generator = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    entry = problem.definition.get("custom_inputs_entrypoint")
    kinds = {n: workload["inputs"][n]["type"] for n in problem.definition["inputs"]}
    made = getattr(module, entry)(dict(axes), torch.device("cpu")) if "custom" in kinds.values() else {}
    values = []
    for name, spec in problem.definition["inputs"].items():
        dtype = getattr(torch, spec["dtype"])
        if kinds[name] == "scalar":
            value = workload["inputs"][name]["value"]
            values.append(float(value) if spec["dtype"] in FLOATS else value)
        elif kinds[name] == "custom":
            values.append(made[name])
        elif spec["shape"] is None:
            assert spec["dtype"] in FLOATS, (problem.name, name)
            values.append(torch.randn((), generator=generator).item())
        else:
            assert spec["dtype"] in FLOATS, f"{problem.name}: integer input {name} is random"
            shape = problem.shape(spec, axes)
            if spec["dtype"] == "float4_e2m1fn_x2":
                values.append(torch.randint(0, 256, shape, generator=generator, dtype=torch.uint8).view(dtype))
            else:
                x = torch.randn(shape, generator=generator)
                values.append((x.clamp(-2, 2) if spec["dtype"] in FP8 else x).to(dtype))
    return values


def as_bytes(x: torch.Tensor) -> torch.Tensor:
    return x.view(torch.uint8) if x.element_size() == 1 and x.dtype != torch.uint8 and x.dim() > 0 else x


def run_smallest(problem: Problem, seed: int = 0) -> tuple:
    module = problem.module()
    workload = problem.smallest()
    result = module.run(*make_inputs(problem, workload, module, seed))
    return result if isinstance(result, tuple) else (result,)


@pytest.mark.parametrize("index", [f"{i:03d}" for i in range(1, DEFAULT_PROBLEMS + 1)])
def test_reference_runs_at_smallest_workload(problems, index):
    problem = next(p for p in problems if p.name.startswith(index + "_"))
    outputs = run_smallest(problem)
    declared = problem.definition["outputs"]
    assert len(outputs) == len(declared), problem.name
    axes = problem.axes(problem.smallest())
    for value, (name, spec) in zip(outputs, declared.items()):
        assert isinstance(value, torch.Tensor), (problem.name, name)
        assert value.dtype == getattr(torch, spec["dtype"]), (problem.name, name, value.dtype)
        assert tuple(value.shape) == problem.shape(spec, axes), (problem.name, name, tuple(value.shape))
        if spec["dtype"] in FLOATS - {"float4_e2m1fn_x2"}:
            assert not torch.isnan(value.float()).any(), (problem.name, name)
    again = run_smallest(problem)
    for first, second in zip(outputs, again):
        assert torch.equal(as_bytes(first), as_bytes(second)), problem.name


def test_custom_inputs_are_valid_for_every_workload(problems):
    checked = 0
    for p in problems:
        entry = p.definition.get("custom_inputs_entrypoint")
        if not entry:
            continue
        module = p.module()
        for w in p.workloads:
            axes = p.axes(w)
            torch.manual_seed(0)
            made = getattr(module, entry)(dict(axes), torch.device("cpu"))
            for name, spec in p.definition["inputs"].items():
                if w["inputs"][name]["type"] != "custom":
                    continue
                value = made[name]
                assert value.dtype == getattr(torch, spec["dtype"]) and tuple(value.shape) == p.shape(spec, axes), (p.name, name)
            check_index_values(p, axes, made)
            checked += 1
    assert checked >= 300


def check_index_values(p: Problem, axes: dict[str, int], made: dict) -> None:
    v = {n: x.long() for n, x in made.items() if not x.is_floating_point()}
    if "kv_indptr" in v:
        indptr, indices, last = v["kv_indptr"], v["kv_indices"], v["kv_last_page_len"]
        assert indptr[0] == 0 and bool((indptr[1:] > indptr[:-1]).all()) and indptr[-1] == indices.numel(), p.name
        assert indices.unique().numel() == indices.numel() and 0 <= indices.min() and indices.max() < axes["num_pages"], p.name
        assert bool(((last >= 1) & (last <= axes["page_size"])).all()), p.name
        lengths = (indptr[1:] - indptr[:-1] - 1) * axes["page_size"] + last
        if "qo_indptr" in v:
            qo = v["qo_indptr"]
            assert qo[0] == 0 and qo[-1] == axes["total_q"] and bool((qo[1:] - qo[:-1] <= lengths).all()), p.name
        if "positions" in v:
            assert bool((v["positions"] < lengths[v["batch_indices"]]).all()) and v["positions"].min() >= 0, p.name
    elif "positions" in v:
        assert 0 <= v["positions"].min() and v["positions"].max() < axes["max_position"], p.name
    if "cu_seqlens" in v:
        cu = v["cu_seqlens"]
        assert cu[0] == 0 and cu[-1] == axes["total_tokens"] and bool((cu[1:] > cu[:-1]).all()), p.name
    for name in ("input_ids", "labels"):
        if name in v:
            ids = v[name][v[name] != -100]
            assert ids.numel() and 0 <= ids.min() and ids.max() < axes["vocab_size"], p.name
    if "topk_ids" in v:
        ids = v["topk_ids"]
        assert 0 <= ids.min() and ids.max() < axes["num_experts"], p.name
        assert bool((ids.sort(dim=-1).values[:, 1:] != ids.sort(dim=-1).values[:, :-1]).all()), p.name
    for name in ("slot_mapping", "sorted_rows"):
        if name in v:
            assert v[name].unique().numel() == v[name].numel() and v[name].min() >= 0, p.name
    if "cache_seqlens" in v:
        assert 0 <= v["cache_seqlens"].min() and v["cache_seqlens"].max() < axes["max_seq_len"], p.name


# --- the command line --------------------------------------------------------------------------

def test_command_line(tmp_path):
    out = tmp_path / "out"
    command = [sys.executable, "-m", "solbench.dataset.synthetic", str(out), "--problems", "20"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    assert len(list(out.glob("*/*/definition.json"))) == 20
    assert len(first.stdout.strip().splitlines()) == 1 and "20 problems" in first.stdout
    for subset in SUBSET_SHARES:
        assert subset in first.stdout
    second = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert second.returncode != 0
    assert len(second.stderr.strip().splitlines()) == 1 and "--force" in second.stderr
    forced = subprocess.run(command[:-1] + ["12", "--force"], capture_output=True, text=True, timeout=120)
    assert forced.returncode == 0, forced.stderr
    assert len(list(out.glob("*/*/definition.json"))) == 12


def test_paged_prefill_scores_blocks_of_queries_as_one_matrix_would(problems):
    """paged_prefill_causal's largest workloads would need 256 GiB of fp32 scores at once (8,192 queries x 262,144 cached
    tokens x 32 heads); its reference scores blocks of queries. One query per block, a few, and all at once
    give the same output (up to the last bf16 bit of a sum taken in another order)."""
    problem = next(p for p in problems if p.name[4:].startswith("paged_prefill"))
    module = problem.module()
    workload = problem.smallest()
    inputs = make_inputs(problem, workload, module, seed=3)
    whole = module.run(*inputs).float()
    axes = problem.axes(workload)
    assert module.SCORES_PER_BLOCK >= axes["num_qo_heads"] * axes["total_q"] * axes["num_kv_indices"] * axes["page_size"]  # one block here
    for scores in (1, axes["num_qo_heads"] * axes["page_size"] * 8):
        module.SCORES_PER_BLOCK = scores
        blocked = module.run(*inputs).float()
        assert (blocked - whole).abs().max().item() <= 2 ** -7 * whole.abs().max().item(), scores


# --- the kinds slowest to analyse on the public set (issue 28) ----------------------------------

def test_the_default_set_is_every_template_once_with_the_slow_kinds():
    from solbench.dataset.synthetic.generate import DEFAULT_PROBLEMS as GENERATED, template_pool

    assert GENERATED == DEFAULT_PROBLEMS == sum(len(specs) for specs in template_pool().values())


def by_kind(problems: list[Problem], kind: str) -> Problem:
    (found,) = [p for p in problems if p.name[4:].startswith(kind)]
    return found


def test_yarn_attention_counts_positions_from_each_sequence_start(problems):
    """Two packed sequences holding the same tokens give the same outputs: each one's positions start at 0."""
    module = by_kind(problems, "yarn_rope_ragged_attention").module()
    generator = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(24, heads, 128, generator=generator).to(torch.bfloat16) for heads in (28, 4, 4))
    twice = [torch.cat((x, x)) for x in (q, k, v)]
    out = module.run(*twice, torch.tensor([0, 24, 48], dtype=torch.int32), 1e6, 128 ** -0.5)
    assert torch.equal(out[:24], out[24:])
    alone = module.run(q, k, v, torch.tensor([0, 24], dtype=torch.int32), 1e6, 128 ** -0.5)
    assert torch.equal(alone, out[:24])
    shifted = module.run(*twice, torch.tensor([0, 20, 48], dtype=torch.int32), 1e6, 128 ** -0.5)
    assert not torch.equal(shifted[28:], out[28:])  # positions counted from another start rotate otherwise


def test_dual_rope_rotates_two_quarters_of_a_head_by_their_own_positions(problems):
    module = by_kind(problems, "dual_rope_causal_attention").module()
    generator = torch.Generator().manual_seed(2)
    x = torch.randn(2, 8, 3, 128, generator=generator).to(torch.bfloat16)
    positions, blocks = torch.randint(0, 8, (2, 8), generator=generator), torch.randint(0, 8, (2, 8), generator=generator)
    made = module.dual_rope(x, positions, blocks, 10000.0)
    assert torch.equal(made[..., 64:], x[..., 64:])
    assert torch.equal(made[..., :32], module.rope(x[..., :32], positions, 10000.0))
    assert torch.equal(made[..., 32:64], module.rope(x[..., 32:64], blocks, 10000.0))
    zeros = torch.zeros(2, 8, dtype=torch.int64)
    assert torch.equal(module.dual_rope(x, zeros, zeros, 10000.0), x)  # position 0 rotates nothing


def test_nvfp4_layers_round_their_activations_onto_the_nvfp4_grid(problems):
    """Rounding is idempotent (what is on the grid stays), and it is coarse: 8 magnitudes per block of 16."""
    module = by_kind(problems, "nvfp4_decoder_layer").module()
    x = torch.randn(8, 64, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    once = module.round_nvfp4(x, 336.0)
    assert torch.equal(module.round_nvfp4(once, 336.0), once)
    assert max(block.abs().unique().numel() for block in once.view(32, 16)) <= 8
    assert not torch.equal(once, x.to(torch.float32))
