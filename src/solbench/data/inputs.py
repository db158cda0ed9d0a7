"""Input generation: seeded, dtype-aware, a fresh draw per trial, on CPU or CUDA.

Random inputs follow their declared distribution, else the problem's input profile
(solbench.data.profiles: `plain`, or the `sol-execbench` harness's rules). A Python scalar
(`shape: null`) given as random is one draw of its dtype. The seed of each input is derived from
(seed, workload uuid, trial, input name), so the same arguments always give the same tensors on
the same device, and another trial gives new values.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solbench.data.definition import Distribution, TensorSpec
from solbench.data.dtypes import DType, storage_shape
from solbench.data.problem import Problem
from solbench.data.profiles import pairing_key, resolve_profile, sol_execbench_tensor
from solbench.data.reference import reference_module
from solbench.data.synthesis import synthesize_input
from solbench.data.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Workload

if TYPE_CHECKING:
    import torch

DEFAULT_INTEGER_RANGE = (0, 128)


class InputGenerationError(ValueError):
    pass


def derive_seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def generate_inputs(problem: Problem, workload: Workload, *, seed: int = 0, trial: int = 0, device: Any = "cpu",
                    profile: str | None = None, only: set[str] | None = None) -> dict[str, Any]:
    """All inputs of a workload, in the definition's order: tensors on device, or Python scalars.
    `profile` overrides the problem's input profile (see solbench.data.profiles); `only` names the
    inputs wanted (the others are not made at all)."""
    import torch

    device = torch.device(device)
    definition = problem.definition
    axes = problem.axes(workload)
    profile = resolve_profile(problem, profile)
    values: dict[str, Any] = {}
    custom: dict[str, Any] | None = None
    for name, declared in definition.inputs.items():
        if only is not None and name not in only:
            continue
        spec = workload.inputs[name]
        if isinstance(spec, ScalarInput):
            values[name] = _scalar(declared, spec.value, device)
        elif isinstance(spec, RandomInput):
            stream = pairing_key(name) if profile == "sol-execbench" else name
            generator = _generator(device, derive_seed(seed, workload.uuid, trial, stream))
            distribution = spec.distribution or declared.distribution
            shape = declared.resolve_shape(axes)
            if distribution is None and profile == "sol-execbench":
                drawn = sol_execbench_tensor(name, declared.dtype, shape, _description(declared), generator, device)
            else:
                drawn = random_tensor(declared.dtype, shape, distribution, axes, generator, device)
            values[name] = drawn.item() if declared.shape is None else drawn
        elif isinstance(spec, SafetensorsInput):
            path = blob_path(problem.root, spec)
            if path.is_file() or not problem.synthesize_missing_blobs:
                values[name] = _safetensors(path, spec, declared.dtype, device)
            else:
                generator = _generator(device, derive_seed(seed, workload.uuid, trial, "synthesized", name))
                values[name] = synthesize_input(problem, name, axes, generator, device, profile)
        elif isinstance(spec, CustomInput):
            if custom is None:
                custom = _custom(problem, workload, axes, derive_seed(seed, workload.uuid, trial, "custom"), device)
            if name not in custom:
                raise InputGenerationError(f"{definition.custom_inputs_entrypoint}() returned no {name!r}")
            values[name] = _as_declared(name, custom[name], declared)
        _check_tensor(name, values[name], declared, axes, device)
    return values


def _generator(device: torch.device, seed: int) -> torch.Generator:
    import torch

    generator = torch.Generator(device=device)
    generator.manual_seed(seed)
    return generator


def _description(declared: TensorSpec) -> str:
    text = (declared.model_extra or {}).get("description")
    return text if isinstance(text, str) else ""


def blob_path(root: Path | None, spec: SafetensorsInput) -> Path:
    """Where a safetensors input's file is: its path, relative to the problem's folder unless absolute."""
    path = Path(spec.path)
    return path if path.is_absolute() or root is None else root / path


def random_tensor(dtype: DType, shape: tuple[int, ...], distribution: Distribution | None, axes: dict[str, int], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    import torch

    target = dtype.torch_dtype()
    stored = storage_shape(dtype, shape)
    if dtype.is_fp4:  # every 4-bit code is a finite e2m1 value: draw bytes, view them as fp4 pairs
        return torch.randint(0, 256, stored, generator=generator, device=device, dtype=torch.uint8).view(target)
    kind = distribution.kind if distribution else ("normal" if dtype.is_floating else "integers")
    params = distribution.resolve(axes) if distribution else {}
    if kind == "integers":
        if dtype == DType.bool and distribution is None:
            return torch.randint(0, 2, stored, generator=generator, device=device).bool()
        low, high = (int(params["low"]), int(params["high"])) if distribution else DEFAULT_INTEGER_RANGE
        info = torch.iinfo(target) if target != torch.bool else None
        if info is not None and (low < info.min or high - 1 > info.max):
            raise InputGenerationError(f"integers in [{low}, {high}) do not fit {dtype.value}")
        return torch.randint(low, high, stored, generator=generator, device=device, dtype=torch.int64).to(target)
    # Draw 16/32/64-bit floats in their own dtype (no full-size float32 copy); 8-bit ones via float32.
    work = target if target in (torch.float64, torch.float32, torch.float16, torch.bfloat16) else torch.float32
    # scaled and shifted as they are drawn: one pass over the memory (a multi-GB weight on a CPU took
    # twice as long drawn and then scaled), rounded once to the working dtype
    if kind == "normal" and not params:
        tensor = torch.randn(stored, generator=generator, device=device, dtype=work)
    elif kind == "normal":
        tensor = torch.empty(stored, device=device, dtype=work).normal_(float(params["mean"]), float(params["std"]), generator=generator)
    else:
        tensor = torch.empty(stored, device=device, dtype=work).uniform_(float(params["low"]), float(params["high"]), generator=generator)
    if dtype in (DType.float8_e4m3fn, DType.float8_e5m2):
        limit = torch.finfo(target).max
        tensor = tensor.clamp(-limit, limit)
    narrow = tensor.to(target)
    if kind == "uniform":  # rounding to a narrow dtype can reach `high`, which is exclusive
        if target.itemsize == 1:  # fp8 has no comparisons on a CPU: compare the rounded values widened, replace the bytes
            reached = narrow.to(work) >= params["high"]
            below = largest_below(params["high"], target, device).view(torch.uint8)
            return torch.where(reached, below, narrow.view(torch.uint8)).view(target)
        narrow = torch.where(narrow >= params["high"], largest_below(params["high"], target, device), narrow)
    return narrow


def largest_below(bound: float, dtype: torch.dtype, device: Any = "cpu") -> torch.Tensor:
    """The greatest value of a float dtype strictly below bound."""
    import torch

    value = torch.tensor(float(bound), dtype=torch.float64).to(dtype)
    if value.double().item() < bound:
        return value.to(device)
    bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[value.element_size()]
    if value.double().item() == 0:  # the negative number closest to zero
        step = torch.tensor(1, dtype=bits).view(dtype)
        return (-step).to(device)
    raw = value.view(bits)
    raw = raw - 1 if value.double().item() > 0 else raw + 1
    return raw.view(dtype).to(device)


def _scalar(declared: TensorSpec, value: bool | int | float, device: torch.device) -> Any:
    import torch

    if declared.dtype.is_floating:
        value = float(value)
    if declared.shape is None:
        return value
    return torch.tensor(value, dtype=declared.dtype.torch_dtype(), device=device)


def _safetensors(path: Path, spec: SafetensorsInput, dtype: DType, device: torch.device) -> torch.Tensor:
    """Read the tensor anew each time (the file is memory-mapped): a fresh copy at a fresh address,
    and never stale data from a file that was rewritten meanwhile."""
    from safetensors import safe_open

    if not path.is_file():
        raise InputGenerationError(f"safetensors file {str(path)!r} does not exist (--synthesize-missing-blobs draws such inputs instead)")
    with safe_open(str(path), framework="pt", device="cpu") as handle:
        tensor = handle.get_tensor(spec.tensor_key)
    if dtype.is_fp4 and tensor.dtype != dtype.torch_dtype():
        tensor = tensor.view(dtype.torch_dtype())
    return tensor.to(device, copy=True)


def _custom(problem: Problem, workload: Workload, axes: dict[str, int], seed: int, device: torch.device) -> dict[str, Any]:
    """The custom entry point's inputs. It is called as fn(axes, device) (the layout's form), or with
    the axes as keywords when its parameters are axis names; it returns a dict of input name ->
    value, or a list/tuple in the order of all the inputs or of the custom ones."""
    import torch

    definition = problem.definition
    entry = definition.custom_inputs_entrypoint
    function = getattr(reference_module(definition), entry)
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        made = _call_entry(function, dict(axes), device)
    if isinstance(made, (list, tuple)):
        names = list(definition.inputs)
        if len(made) != len(names):
            names = [n for n in names if isinstance(workload.inputs.get(n), CustomInput)]
        if len(made) != len(names):
            raise InputGenerationError(f"{entry}() returned {len(made)} values; expected one per input ({len(definition.inputs)}) or per custom input ({len(names)})")
        made = dict(zip(names, made))
    if not isinstance(made, dict):
        raise InputGenerationError(f"{entry}() must return a dict of input name -> tensor, got {type(made).__name__}")
    return made


def custom_entry_draws(problem: Problem, workload: Workload) -> bool:
    """Whether the custom entry point draws from a random generator (torch's, numpy's or Python's) when
    it makes this workload's inputs: called once on the CPU, the generators' states compared around it."""
    import random

    import numpy
    import torch

    function = getattr(reference_module(problem.definition), problem.definition.custom_inputs_entrypoint)
    python_state, numpy_state = random.getstate(), numpy.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            torch_state = torch.random.get_rng_state()
            _call_entry(function, dict(problem.axes(workload)), torch.device("cpu"))
            drew_torch = not torch.equal(torch_state, torch.random.get_rng_state())
        numpy_after = numpy.random.get_state()
        drew_numpy = not all((a == b).all() if isinstance(a, numpy.ndarray) else a == b for a, b in zip(numpy_state, numpy_after))
        return drew_torch or drew_numpy or random.getstate() != python_state
    finally:  # the caller's generators as they were
        random.setstate(python_state)
        numpy.random.set_state(numpy_state)


def _call_entry(function: Any, axes: dict[str, int], device: torch.device) -> Any:
    import inspect

    try:
        parameters = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return function(axes, device)
    plain = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    names = {p.name for p in plain}
    if names & axes.keys() and names <= axes.keys() | {"device"} and not any(p.kind == p.VAR_POSITIONAL for p in parameters):
        keywords: dict[str, Any] = {name: axes[name] for name in names if name in axes}
        if "device" in names:
            keywords["device"] = device
        return function(**keywords)
    positional = [p for p in plain if p.kind != p.KEYWORD_ONLY]
    if len(positional) == 1 and not any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return function(axes)
    if not positional and not any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return function()
    return function(axes, device)


def _as_declared(name: str, value: Any, declared: TensorSpec) -> Any:
    """A custom value for a Python scalar input may come as a 0-d tensor: its number."""
    import torch

    if declared.shape is None and isinstance(value, torch.Tensor):
        if value.dim() != 0:
            raise InputGenerationError(f"input {name!r} is a Python scalar (shape null); the custom entry point gave a tensor of shape {list(value.shape)}")
        return value.item()
    return value


def _check_tensor(name: str, value: Any, declared: TensorSpec, axes: dict[str, int], device: torch.device) -> None:
    import torch

    if declared.shape is None:
        if not isinstance(value, (bool, int, float)) or (isinstance(value, bool) and declared.dtype != DType.bool):
            raise InputGenerationError(f"input {name!r} should be a Python {declared.dtype.value} number, got {type(value).__name__}")
        return
    if not isinstance(value, torch.Tensor):
        raise InputGenerationError(f"input {name!r} should be a tensor, got {type(value).__name__}")
    expected = storage_shape(declared.dtype, declared.resolve_shape(axes))
    if tuple(value.shape) != expected or value.dtype != declared.dtype.torch_dtype():
        raise InputGenerationError(
            f"input {name!r} is {str(value.dtype).removeprefix('torch.')}{list(value.shape)}, "
            f"the definition declares {declared.dtype.value}{list(expected)}"
        )
    if value.device != device and not (value.device.type == device.type and device.index is None):
        raise InputGenerationError(f"input {name!r} is on {value.device}, expected {device}")
