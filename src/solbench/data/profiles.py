"""Input profiles: how `{type: random}` inputs that declare no distribution are drawn.

- ``plain`` (solbench's own problems): floats standard normal (fp8 clipped to its finite range),
  fp4 uniformly random codes, integers uniform in [0, 128), bool a fair coin.
- ``sol-execbench`` (the public SOL-ExecBench data, whose tolerances were calibrated on these
  draws): floats standard normal, fp8 normal clipped to +-2, fp4 normal rounded to the nearest e2m1
  value, integers uniform in [-128, 128) for int8, [0, 256) for uint8 and [-1024, 1024) otherwise,
  bool a fair coin; and by input name (first rule that applies wins):

  ==========================================  ==============================================
  name                                        values
  ==========================================  ==============================================
  ``norm_weight``, ``*_norm_weight``,         ones
  ``*layernorm_weight`` (+ a trailing number)
  the same with ``bias``                      zeros
  ``attention_mask``, ``causal_mask`` whose   a causal mask: additive (0 / dtype min) for
  last two dims are equal                     floats, True / 1 on and below the diagonal else
  ``x_mask``, ``text_mask``,                  binary: 0 or 1 (a fair coin)
  ``aspect_ratio_mask``, ``drop_mask``,
  ``attention_mask``, or ``*_mask`` whose
  description says binary / {0, 1} / 0 or 1
  ``cos``, ``sin`` (``*_cached``, ``rope_*``)  cos / sin of normal angles clipped to +-pi (a cos
                                              and its sin share their angles)
  ``rstd``, ``std``, ``var``, ``variance``,   abs(normal) + 0.1
  ``*_rstd`` ...
  ``A``                                       uniform [-1, -0.001)
  ``A_log``                                   uniform [-5, -1)
  ``A_cumsum``                                cumsum (last dim) of uniform [-0.1, 0)
  ``g``                                       uniform [-5, 0)
  ``attn_weights``, ``attention_weights``,    softmax (last dim) of normal logits
  ``routing_weights``
  2-D+ ``weight``, ``*_weight``,              normal / sqrt(last dim)
  ``*_weights``, ``*_proj``
  ==========================================  ==============================================

A declared distribution (the definition's or the workload's) always wins over the profile.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Literal

from solbench.data.dtypes import DType, storage_shape

if TYPE_CHECKING:
    import torch

    from solbench.data.problem import Problem

Profile = Literal["plain", "sol-execbench"]
PROFILES: tuple[str, ...] = ("plain", "sol-execbench")
PROFILE_KEY = "input_profile"  # a definition may name its profile

FP8_CLIP = 2.0
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)

_NORM_WEIGHT = re.compile(r"(?:(?:.*_)?norm|.*layernorm)_weight_?\d*")
_NORM_BIAS = re.compile(r"(?:(?:.*_)?norm|.*layernorm)_bias_?\d*")
_CAUSAL_MASKS = {"attention_mask", "causal_mask"}
_BINARY_MASKS = {"x_mask", "text_mask", "aspect_ratio_mask", "drop_mask", "attention_mask"}
_BINARY_WORDS = re.compile(r"(?i)binary|\{\s*0\s*,\s*1\s*\}|\b0\s+or\s+1\b")
_TRIG = re.compile(r"(?:rope_)?(cos|sin)(?:_cached)?")
_STATISTIC = re.compile(r"(?:.*_)?(?:rstd|std|var|variance)")
_SOFTMAX_OUTPUTS = {"attn_weights", "attention_weights", "routing_weights"}
_WEIGHT_MATRIX = re.compile(r"weight|.*_weights?|.*_proj")
_UNIFORM_BY_NAME = {"A": (-1.0, -0.001), "A_log": (-5.0, -1.0), "g": (-5.0, 0.0)}


def resolve_profile(problem: Problem, requested: str | None = None) -> Profile:
    """The profile in force: the caller's, else the definition's `input_profile`, else by origin.

    solbench's own conventions (a KernelBench import, a declared distribution anywhere) mean
    `plain`; a problem with none of them is in the public layout and gets `sol-execbench`."""
    if requested is not None and requested != "auto":
        return _checked(requested)
    if problem.input_profile is not None:
        return _checked(problem.input_profile)
    declared = (problem.definition.model_extra or {}).get(PROFILE_KEY)
    if declared is not None:
        return _checked(declared)
    if problem.kind == "kernelbench":
        return "plain"
    if any(spec.distribution is not None for spec in problem.definition.inputs.values()):
        return "plain"
    if any(getattr(spec, "distribution", None) is not None for w in problem.workloads for spec in w.inputs.values()):
        return "plain"
    return "sol-execbench"


def _checked(name: Any) -> Profile:
    if name not in PROFILES:
        raise ValueError(f"unknown input profile {name!r}; expected one of {', '.join(PROFILES)}")
    return name


def pairing_key(name: str) -> str:
    """The name an input's random stream is seeded by: a cos and its sin share their angles."""
    match = _TRIG.fullmatch(name)
    return name if match is None else name[: match.start(1)] + "cos|sin" + name[match.end(1):]


def name_rule(name: str, dtype: DType, shape: tuple[int, ...], description: str = "") -> str | None:
    """Which sol-execbench name rule applies to this input, if any."""
    square = len(shape) >= 2 and shape[-1] == shape[-2]
    if name in _CAUSAL_MASKS and square:
        return "causal-mask"
    if name in _BINARY_MASKS or (name.endswith("_mask") and _BINARY_WORDS.search(description or "")):
        return "binary"
    if not dtype.is_floating:
        return None
    if _NORM_WEIGHT.fullmatch(name):
        return "ones"
    if _NORM_BIAS.fullmatch(name):
        return "zeros"
    if _TRIG.fullmatch(name):
        return _TRIG.fullmatch(name).group(1)  # type: ignore[union-attr]
    if _STATISTIC.fullmatch(name):
        return "positive"
    if name in _UNIFORM_BY_NAME:
        return "uniform-by-name"
    if name == "A_cumsum":
        return "decay-cumsum"
    if name in _SOFTMAX_OUTPUTS:
        return "softmax"
    if len(shape) >= 2 and _WEIGHT_MATRIX.fullmatch(name):
        return "weight-matrix"
    return None


def sol_execbench_tensor(name: str, dtype: DType, shape: tuple[int, ...], description: str, generator: torch.Generator,
                         device: torch.device) -> torch.Tensor:
    """One input drawn as the SOL-ExecBench harness draws it (see the module docstring)."""
    import torch

    target = dtype.torch_dtype()
    rule = name_rule(name, dtype, shape, description)
    stored = storage_shape(dtype, shape)
    if rule == "causal-mask":
        return _causal_mask(dtype, shape, device)
    if rule == "binary":
        return torch.randint(0, 2, stored, generator=generator, device=device, dtype=torch.int64).to(target)
    if not dtype.is_floating:
        if dtype == DType.bool:
            return torch.randint(0, 2, stored, generator=generator, device=device).bool()
        low, high = integer_range(dtype)
        return torch.randint(low, high, stored, generator=generator, device=device, dtype=torch.int64).to(target)
    if dtype.is_fp4:
        logical = shape if dtype == DType.float4_e2m1 else (*shape[:-1], shape[-1] * 2) if shape else shape
        values = torch.randn(logical, generator=generator, device=device, dtype=torch.float32)
        return pack_e2m1(values)
    work = target if target in (torch.float64, torch.float32, torch.float16, torch.bfloat16) else torch.float32
    tensor = _float_values(rule, name, shape, work, generator, device)
    if dtype in (DType.float8_e4m3fn, DType.float8_e5m2):
        tensor = tensor.clamp(-FP8_CLIP, FP8_CLIP)
    return tensor.to(target)


def integer_range(dtype: DType) -> tuple[int, int]:
    """[low, high) of sol-execbench integer draws for this dtype."""
    if dtype == DType.int8:
        return -128, 128
    if dtype == DType.uint8:
        return 0, 256
    return -1024, 1024


def _float_values(rule: str | None, name: str, shape: tuple[int, ...], work: torch.dtype, generator: torch.Generator,
                  device: torch.device) -> torch.Tensor:
    import torch

    if rule == "ones":
        return torch.ones(shape, device=device, dtype=work)
    if rule == "zeros":
        return torch.zeros(shape, device=device, dtype=work)
    if rule in ("cos", "sin"):
        angles = torch.randn(shape, generator=generator, device=device, dtype=torch.float32).clamp_(-math.pi, math.pi)
        return (angles.cos_() if rule == "cos" else angles.sin_()).to(work)
    if rule == "positive":
        return torch.randn(shape, generator=generator, device=device, dtype=work).abs_().add_(0.1)
    if rule == "uniform-by-name":
        low, high = _UNIFORM_BY_NAME[name]
        return _uniform(shape, low, high, work, generator, device)
    if rule == "decay-cumsum":
        steps = _uniform(shape, -0.1, 0.0, torch.float32, generator, device)
        return (steps.cumsum(-1) if steps.dim() else steps).to(work)
    if rule == "softmax":
        logits = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
        return (logits.softmax(-1) if logits.dim() else torch.ones_like(logits)).to(work)
    tensor = torch.randn(shape, generator=generator, device=device, dtype=work)
    if rule == "weight-matrix" and shape[-1] > 0:
        tensor.mul_(1.0 / math.sqrt(shape[-1]))
    return tensor


def _uniform(shape: tuple[int, ...], low: float, high: float, work: torch.dtype, generator: torch.Generator, device: torch.device) -> torch.Tensor:
    """Uniform in [low, high): values that round up to `high` in a narrow dtype are moved just below it."""
    import torch

    from solbench.data.inputs import largest_below

    tensor = torch.rand(shape, generator=generator, device=device, dtype=torch.float32).mul_(high - low).add_(low).to(work)
    return torch.where(tensor >= high, largest_below(high, work, device), tensor)


def _causal_mask(dtype: DType, shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    """Allowed on and below the diagonal of the last two dims: 0 / dtype min for floats, True / 1 else."""
    import torch

    rows, columns = shape[-2], shape[-1]
    allowed = torch.ones(rows, columns, dtype=torch.bool, device=device).tril_()
    target = dtype.torch_dtype()
    if dtype.is_floating and not dtype.is_fp4:
        lowest = torch.finfo(target).min
        mask = torch.zeros(rows, columns, dtype=target, device=device).masked_fill_(~allowed, lowest)
    else:
        mask = allowed.to(target)
    return mask.expand(shape).contiguous()


def quantize_e2m1(values: torch.Tensor) -> torch.Tensor:
    """The 4-bit e2m1 code (sign bit 3) of the representable value nearest to each value (clamped to +-6)."""
    import torch

    midpoints = [(low + high) / 2 for low, high in zip(E2M1_VALUES, E2M1_VALUES[1:])]
    boundaries = torch.tensor(midpoints, dtype=torch.float32, device=values.device)
    code = torch.bucketize(values.abs().float(), boundaries).to(torch.uint8)
    negative = (values < 0) & (code != 0)
    return code | (negative.to(torch.uint8) << 3)


def pack_e2m1(values: torch.Tensor) -> torch.Tensor:
    """values (logical shape, even last dim) as torch.float4_e2m1fn_x2: the first of each pair in the low nibble."""
    import torch

    if not values.dim() or values.shape[-1] % 2:
        raise ValueError(f"packing e2m1 needs an even last dimension, got shape {list(values.shape)}")
    codes = quantize_e2m1(values)
    pairs = codes.reshape(*codes.shape[:-1], codes.shape[-1] // 2, 2)
    packed = pairs[..., 0] | (pairs[..., 1] << 4)
    return packed.contiguous().view(torch.float4_e2m1fn_x2)
