"""Input generation: seeded, dtype-aware, a fresh draw per trial, on CPU or CUDA.

Plain distributions (used when the problem declares none): floats standard normal (fp8 clipped to
its finite range), fp4 uniformly random codes, integers uniform in [0, 128), bool a fair coin.
The seed of each input is derived from (seed, workload uuid, trial, input name), so the same
arguments always give the same tensors on the same device, and another trial gives new values.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solbench.spec.definition import Distribution, TensorSpec
from solbench.spec.dtypes import DType, storage_shape
from solbench.spec.problem import Problem
from solbench.spec.reference import reference_module
from solbench.spec.workload import CustomInput, RandomInput, SafetensorsInput, ScalarInput, Workload

if TYPE_CHECKING:
    import torch

DEFAULT_INTEGER_RANGE = (0, 128)


class InputGenerationError(ValueError):
    pass


def derive_seed(*parts: object) -> int:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def generate_inputs(problem: Problem, workload: Workload, *, seed: int = 0, trial: int = 0, device: Any = "cpu") -> dict[str, Any]:
    """All inputs of a workload, in the definition's order: tensors on device, or Python scalars."""
    import torch

    device = torch.device(device)
    definition = problem.definition
    axes = problem.axes(workload)
    values: dict[str, Any] = {}
    custom: dict[str, Any] | None = None
    for name, declared in definition.inputs.items():
        spec = workload.inputs[name]
        if isinstance(spec, ScalarInput):
            values[name] = _scalar(declared, spec.value, device)
        elif isinstance(spec, RandomInput):
            generator = torch.Generator(device=device)
            generator.manual_seed(derive_seed(seed, workload.uuid, trial, name))
            distribution = spec.distribution or declared.distribution
            values[name] = random_tensor(declared.dtype, declared.resolve_shape(axes), distribution, axes, generator, device)
        elif isinstance(spec, SafetensorsInput):
            values[name] = _safetensors(problem.root, spec, declared.dtype, device)
        elif isinstance(spec, CustomInput):
            if custom is None:
                custom = _custom(problem, axes, derive_seed(seed, workload.uuid, trial, "custom"), device)
            if name not in custom:
                raise InputGenerationError(f"{definition.custom_inputs_entrypoint}() returned no {name!r}")
            values[name] = custom[name]
        _check_tensor(name, values[name], declared, axes, device)
    return values


def random_tensor(dtype: DType, shape: tuple[int, ...], distribution: Distribution | None, axes: dict[str, int], generator: torch.Generator, device: torch.device) -> torch.Tensor:
    import torch

    target = dtype.torch_dtype()
    stored = storage_shape(dtype, shape)
    if dtype.is_packed:  # every 4-bit code is a finite e2m1 value: draw bytes, view them as fp4 pairs
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
    if kind == "normal":
        tensor = torch.randn(stored, generator=generator, device=device, dtype=work)
        if params:
            tensor = tensor * params["std"] + params["mean"]
    else:
        tensor = torch.rand(stored, generator=generator, device=device, dtype=work) * (params["high"] - params["low"]) + params["low"]
    if dtype in (DType.float8_e4m3fn, DType.float8_e5m2):
        limit = torch.finfo(target).max
        tensor = tensor.clamp(-limit, limit)
    tensor = tensor.to(target)
    if kind == "uniform":  # rounding to a narrow dtype can reach `high`, which is exclusive
        tensor = torch.where(tensor >= params["high"], largest_below(params["high"], target, device), tensor)
    return tensor


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


def _safetensors(root: Path | None, spec: SafetensorsInput, dtype: DType, device: torch.device) -> torch.Tensor:
    """Read the tensor anew each time (the file is memory-mapped): a fresh copy at a fresh address,
    and never stale data from a file that was rewritten meanwhile."""
    from safetensors import safe_open

    path = Path(spec.path) if Path(spec.path).is_absolute() or root is None else root / spec.path
    with safe_open(str(path), framework="pt", device="cpu") as handle:
        tensor = handle.get_tensor(spec.tensor_key)
    if dtype.is_packed and tensor.dtype != dtype.torch_dtype():
        tensor = tensor.view(dtype.torch_dtype())
    return tensor.to(device, copy=True)


def _custom(problem: Problem, axes: dict[str, int], seed: int, device: torch.device) -> dict[str, Any]:
    import torch

    entry = problem.definition.custom_inputs_entrypoint
    function = getattr(reference_module(problem.definition), entry)
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        made = function(dict(axes), device)
    if not isinstance(made, dict):
        raise InputGenerationError(f"{entry}() must return a dict of input name -> tensor, got {type(made).__name__}")
    return made


def _check_tensor(name: str, value: Any, declared: TensorSpec, axes: dict[str, int], device: torch.device) -> None:
    import torch

    if declared.shape is None:
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
