"""Hidden workloads: fresh instances of a problem that appear in no file a solution can read.

A solution can pass every published workload by hard-coding what it sees there: the sizes
(`if x.numel() in {16, 64, 1000}`) or a scalar (`alpha = 2.5`). Evaluating it as well on
workloads drawn at evaluation time, from the same axis ranges, catches that.

Drawing rules (`hidden_workloads`):

- var axes: each value lies in [min, max] of the published values of that axis and, where the
  range allows, equals none of them. When every published value is the same v, it is drawn from
  [max(1, v // 2), v]: never larger than published, so memory and time stay within what the
  published set needs. The value keeps the alignment the published values share (a multiple of
  the largest power of two dividing all of them, capped at 64), so that a legitimate kernel that
  needs, say, multiples of 16 is not failed falsely. Values are drawn log-uniformly: published
  sizes usually span orders of magnitude, and a uniform draw would nearly always land in the top
  one. The definition's constraints must hold, and the whole workload may need no more bytes of
  inputs and outputs than the largest published one (rejection sampling, a bounded number of
  tries; later tries redraw only some axes and keep the others from a published workload, which
  satisfies constraints that tie axes together). When no draw succeeds, the axes of a published
  workload are used and the hidden workload must differ from it in a float scalar; when it cannot,
  it is skipped with a note.
- float scalar inputs: drawn within [min, max] of the published values, or v * (0.5 .. 1.5) (at
  least 1 % away from v, the sign kept) when they are all v. Integer and bool scalars keep their
  published values: they often select semantics (top-k, a flag).
- random and custom inputs keep their description (distribution). Workloads with a safetensors
  input (fixed data tied to fixed shapes) serve as no template; their axes still count as
  published.
- tolerance and every other field come from the template: the template-able published workload
  nearest in size (bytes of inputs and outputs).

Every draw passes the project's own checks (`check_workload`); custom input generators are not run
here (that needs torch and the reference): a generator that cannot make the new sizes fails at
input generation.

The draws are deterministic for (problem name, seed, index), so `count` only adds or drops draws at
the end. Whoever runs the evaluation must pick a seed the solution cannot know (for example
`secrets.randbits(63)`, recorded with the results): a solution that can import solbench and guess
the seed can recompute the draws.
"""

from __future__ import annotations

import hashlib
import math
import random
import warnings
from dataclasses import dataclass, field
from typing import Any

from solbench.data.definition import Definition
from solbench.data.errors import SpecWarning
from solbench.data.problem import Problem, check_workload
from solbench.data.workload import SafetensorsInput, ScalarInput, Workload

ALIGNMENT_CAP = 64  # the largest alignment a hidden value keeps (a multiple of at most 64)
MAX_TRIES = 200  # draws of fresh axes per hidden workload before falling back to published axes
AXIS_VALUE_TRIES = 32  # log-uniform draws of one axis value before an exact draw among the unpublished
SCALAR_TRIES = 32  # draws of a float scalar before accepting one close to a published value
SCALAR_MIN_RELATIVE_CHANGE = 0.01  # a perturbed scalar is at least 1 % away from the published v
SCALAR_DIGITS = 6  # significant digits a drawn float scalar is rounded to (readable in reports)

Signature = tuple[tuple[tuple[str, int], ...], tuple[tuple[str, float], ...]]


@dataclass
class HiddenWorkloads:
    """The result of `hidden_workloads`.

    workloads: the drawn workloads, valid for the problem (fewer than asked when some were skipped).
    notes: why workloads were skipped or fell back to published axes; empty when all went well.
    templates: hidden uuid -> uuid of the published workload it copies tolerance and inputs from.
    """

    workloads: list[Workload] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    templates: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class AxisRange:
    """Where the hidden values of one var axis come from: multiples of `step` in [low, high]."""

    low: int
    high: int
    step: int
    published: frozenset[int]

    @property
    def multiples(self) -> tuple[int, int]:
        """The range of k such that k * step lies in [low, high] (empty when first > last)."""
        return -(-self.low // self.step), self.high // self.step

    @property
    def can_differ(self) -> bool:
        """Whether some value of the range is not published."""
        first, last = self.multiples
        return last - first + 1 > len(self._published_multiples())

    def _published_multiples(self) -> list[int]:
        first, last = self.multiples
        return sorted(p // self.step for p in self.published if p % self.step == 0 and first <= p // self.step <= last)

    def draw(self, rng: random.Random) -> int:
        """A value of the range, not a published one where possible, log-uniformly where possible."""
        first, last = self.multiples
        if first > last:  # e.g. every published value is 0: nothing smaller to draw from
            return min(self.published)
        avoided = self._published_multiples()
        free = last - first + 1 - len(avoided)
        if free <= 0:
            return rng.randint(first, last) * self.step
        taken = set(avoided)
        for _ in range(AXIS_VALUE_TRIES):
            k = _log_uniform_integer(rng, first, last)
            if k not in taken:
                return k * self.step
        k = first + rng.randrange(free)  # the k-th multiple that is not published, exactly
        for published in avoided:
            if published <= k:
                k += 1
        return k * self.step


def hidden_workloads(problem: Problem, count: int, seed: int) -> HiddenWorkloads:
    """Draw `count` hidden workloads of `problem` (see the module docstring for the rules).

    Returns the valid draws with notes on what was skipped; never an invalid workload.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    result = HiddenWorkloads()
    if count == 0:
        return result
    definition = problem.definition
    published = problem.workloads
    if not published:
        result.notes.append(f"{problem.name}: no published workload to draw hidden ones from")
        return result
    templates = [w for w in published if not uses_safetensors(w)]
    if not templates:
        result.notes.append(f"{problem.name}: every workload reads safetensors inputs (fixed data of fixed shapes); no hidden workload can be drawn")
        return result

    sizes = {w.uuid: size for w in published if (size := footprint_bytes(definition, w.axes)) is not None}
    template_sizes = [(w, sizes[w.uuid]) for w in templates if w.uuid in sizes]
    if not template_sizes:
        result.notes.append(f"{problem.name}: no template workload has valid axes; no hidden workload can be drawn")
        return result
    largest = max(sizes.values())
    ranges = axis_ranges(definition, published)
    scalar_values = published_float_scalars(definition, published)
    published_signatures = {signature(definition, w) for w in published}
    published_axes = {_axes_key(definition, w.axes) for w in published}
    taken_uuids = {w.uuid for w in published}
    drawn_signatures: set[Signature] = set()

    fallbacks: list[str] = []
    skipped: list[str] = []
    for index in range(count):
        rng = random.Random(_seed_for(problem.name, seed, index))
        drawn = _draw_fresh_axes(problem, rng, ranges, published, published_axes, template_sizes, largest, scalar_values,
                                 published_signatures, drawn_signatures)
        if drawn is None:  # published axes, other float scalars
            template = rng.choice([w for w, _ in template_sizes])
            candidate = _build(definition, template, dict(template.axes), rng, scalar_values)
            if signature(definition, candidate) in published_signatures or check_workload(definition, candidate, problem.root):
                skipped.append(str(index))
                continue
            fallbacks.append(f"{index} (axes of {template.uuid})")
        else:
            candidate, template = drawn
        workload = _with_uuid(candidate, index, problem.name, seed, taken_uuids)
        taken_uuids.add(workload.uuid)
        drawn_signatures.add(signature(definition, workload))
        result.workloads.append(workload)
        result.templates[workload.uuid] = template.uuid
    why = _why_no_fresh_axes(definition, ranges)
    if fallbacks:
        result.notes.append(f"{problem.name}: {why}; hidden workloads {', '.join(fallbacks)} reuse published axes with other float scalars")
    if skipped:
        result.notes.append(f"{problem.name}: {why}, and no float scalar input can take another value; "
                            f"hidden workloads {', '.join(skipped)} skipped")
    return result


UNALIGNED_PREFIX = "unaligned-"
HIDDEN_PREFIX = "hidden-"
HELD_OUT_PREFIXES = (HIDDEN_PREFIX, UNALIGNED_PREFIX)  # workloads drawn for one run, in no file: correctness only, never scored


def is_held_out(uuid: str) -> bool:
    return uuid.startswith(HELD_OUT_PREFIXES)


def unaligned_workload(problem: Problem, seed: int) -> tuple[Workload | None, str]:
    """One workload whose aligned var axes take a value off that alignment (a kernel that ignores edge
    tiles fails there), or None and why not. An axis qualifies when its published values share an
    alignment of at least 8 and no constraint of the definition names it with `%` (a declared
    alignment is the problem's to keep). The value is the smallest published one minus 1 (odd, so
    aligned to nothing), or plus 1 when that is 0; the template is the smallest template-able
    workload; constraints and the published footprint must hold, as for hidden draws."""
    definition = problem.definition
    templates = [w for w in problem.workloads if not uses_safetensors(w) and footprint_bytes(definition, w.axes) is not None]
    if not templates:
        return None, "no template-able published workload"
    declared = {name for constraint in definition.constraints if "%" in constraint for name in definition.var_axes if name in constraint}
    ranges = axis_ranges(definition, problem.workloads)
    aligned = [name for name, axis_range in ranges.items() if axis_range.step >= 8 and name not in declared]
    if not aligned:
        return None, "no var axis whose published values share an alignment of 8 or more (and none undeclared)"
    template = min(templates, key=lambda w: footprint_bytes(definition, w.axes) or 0)
    largest = max(footprint_bytes(definition, w.axes) or 0 for w in problem.workloads)
    axes = {name: value for name, value in template.axes.items() if name in definition.var_axes}
    for name in aligned:
        if name in axes:
            low = min(ranges[name].published)
            axes[name] = low - 1 if low > 1 else low + 1
    size = footprint_bytes(definition, axes)
    if size is None or size > largest:
        return None, "the unaligned sizes would need more memory than the published workloads"
    candidate = _build(definition, template, axes, random.Random(_seed_for(problem.name, seed, -1)), {})
    if check_workload(definition, candidate, problem.root):
        return None, "the unaligned sizes break a constraint of the definition"
    digest = hashlib.sha256(f"{problem.name}:{seed}:{candidate.model_dump_json(exclude={'uuid'})}".encode()).hexdigest()
    return candidate.model_copy(update={"uuid": f"{UNALIGNED_PREFIX}{digest[:10]}"}), f"axes {', '.join(aligned)} off their alignment"


# --- helpers --------------------------------------------------------------------------------


def uses_safetensors(workload: Workload) -> bool:
    """Safetensors inputs hold fixed data of fixed shapes: such a workload cannot take new sizes."""
    return any(isinstance(spec, SafetensorsInput) for spec in workload.inputs.values())


def shared_alignment(values: list[int], cap: int = ALIGNMENT_CAP) -> int:
    """The largest power of two dividing every value, at most `cap` (values of 0 divide by anything)."""
    common = math.gcd(*values)
    if common == 0:
        return cap
    return min(common & -common, cap)


def axis_ranges(definition: Definition, workloads: list[Workload]) -> dict[str, AxisRange]:
    """Per var axis: the range and alignment hidden values are drawn from (see the module docstring)."""
    ranges: dict[str, AxisRange] = {}
    for name in definition.var_axes:
        values = [w.axes[name] for w in workloads if name in w.axes]
        if not values:
            continue
        step = shared_alignment(values)
        low, high = min(values), max(values)
        if low == high:  # one published value: draw smaller ones only, to stay within memory and time
            low = max(1, high // 2)
        ranges[name] = AxisRange(low, high, step, frozenset(values))
    return ranges


def footprint_bytes(definition: Definition, given_axes: dict[str, int]) -> int | None:
    """Bytes of all tensor inputs and outputs at these var axis values; None when they are invalid."""
    axes, issues = definition.resolve_axes(given_axes)
    if issues:
        return None
    total = 0
    for tensor in [*definition.inputs.values(), *definition.outputs.values()]:
        if tensor.shape is not None:
            total += tensor.dtype.storage_bytes(math.prod(tensor.resolve_shape(axes)))
    return total


def published_float_scalars(definition: Definition, workloads: list[Workload]) -> dict[str, list[float]]:
    """Per floating-point scalar input: its published values (inputs with a non-finite one are left out)."""
    found: dict[str, list[float]] = {}
    for name, declared in definition.inputs.items():
        if not declared.dtype.is_floating:
            continue
        values = [float(spec.value) for w in workloads if isinstance(spec := w.inputs.get(name), ScalarInput)]
        if values and all(math.isfinite(v) for v in values):
            found[name] = values
    return found


def draw_float_scalar(rng: random.Random, published: list[float]) -> float:
    """A float within [min, max] of the published values, away from them; v * (0.5 .. 1.5) when all are v."""
    low, high = min(published), max(published)
    if low == high:
        change = rng.uniform(SCALAR_MIN_RELATIVE_CHANGE, 0.5) * rng.choice((-1, 1))
        return _rounded(low * (1 + change))
    value = low
    for _ in range(SCALAR_TRIES):
        value = min(max(_rounded(rng.uniform(low, high)), low), high)
        if all(abs(value - p) > SCALAR_MIN_RELATIVE_CHANGE * max(abs(p), abs(value)) for p in published):
            return value
    return value


def signature(definition: Definition, workload: Workload) -> Signature:
    """What a hard-coding solution can key on: the var axis values and the float scalar values."""
    scalars = tuple(
        (name, float(spec.value))
        for name, spec in sorted(workload.inputs.items())
        if isinstance(spec, ScalarInput) and name in definition.inputs and definition.inputs[name].dtype.is_floating
    )
    return _axes_key(definition, workload.axes), scalars


def _why_no_fresh_axes(definition: Definition, ranges: dict[str, AxisRange]) -> str:
    if not definition.var_axes:
        return "the problem has no var axis"
    if not any(axis_range.can_differ for axis_range in ranges.values()):
        return "no var axis can take a value other than the published ones"
    return f"no draw of fresh axes met the constraints and the size limit in {MAX_TRIES} tries"


def _draw_fresh_axes(problem: Problem, rng: random.Random, ranges: dict[str, AxisRange], published: list[Workload],
                     published_axes: set[tuple[tuple[str, int], ...]], template_sizes: list[tuple[Workload, int]], largest: int,
                     scalar_values: dict[str, list[float]], published_signatures: set[Signature],
                     drawn_signatures: set[Signature]) -> tuple[Workload, Workload] | None:
    """A valid workload with var axes unlike any published workload's, and its template; None if none is found."""
    definition = problem.definition
    changeable = [name for name, axis_range in ranges.items() if axis_range.can_differ]
    if not changeable:
        return None
    bases = [w for w in published if all(name in w.axes for name in ranges)]
    repeat: tuple[Workload, Workload] | None = None  # valid, but the same as an earlier hidden draw
    for attempt in range(MAX_TRIES):
        if attempt < MAX_TRIES // 2 or not bases:
            fresh = set(ranges)
            base_axes: dict[str, int] = {}
        else:  # keep some axes of a published workload: satisfies constraints that tie axes together
            fresh = set(rng.sample(changeable, rng.randint(1, len(changeable))))
            base_axes = rng.choice(bases).axes
        axes = {name: (ranges[name].draw(rng) if name in fresh else base_axes[name]) for name in ranges}
        if _axes_key(definition, axes) in published_axes:
            continue
        size = footprint_bytes(definition, axes)
        if size is None or size > largest:
            continue
        template = _nearest_in_size(template_sizes, size)
        candidate = _build(definition, template, axes, rng, scalar_values)
        if signature(definition, candidate) in published_signatures or check_workload(definition, candidate, problem.root):
            continue
        if signature(definition, candidate) not in drawn_signatures:
            return candidate, template
        repeat = repeat or (candidate, template)
    return repeat


def _nearest_in_size(template_sizes: list[tuple[Workload, int]], size: int) -> Workload:
    """The template whose bytes of inputs and outputs are closest to `size` on a log scale (first on a tie)."""
    return min(template_sizes, key=lambda pair: abs(math.log1p(pair[1]) - math.log1p(size)))[0]


def _build(definition: Definition, template: Workload, axes: dict[str, int], rng: random.Random,
           scalar_values: dict[str, list[float]]) -> Workload:
    """The template with these axes and freshly drawn float scalars; validated as a file would be."""
    data: dict[str, Any] = template.to_json_dict()
    bound = {name: axes[name] for name in definition.var_axes if name in axes}
    resolved, _ = definition.resolve_axes(bound)
    # the template may bind const and expr axes too (to the values they have): keep them, re-evaluated
    data["axes"] = {name: (bound[name] if name in bound else resolved.get(name, value)) for name, value in template.axes.items()}
    data["axes"].update(bound)
    inputs = dict(data.get("inputs", {}))
    for name, spec in template.inputs.items():
        if isinstance(spec, ScalarInput) and name in scalar_values:
            inputs[name] = {**inputs[name], "value": draw_float_scalar(rng, scalar_values[name])}
    data["inputs"] = inputs
    with warnings.catch_warnings():  # the template's spelling of fields was reported when it was read
        warnings.simplefilter("ignore", SpecWarning)
        return Workload.model_validate(data)


def _with_uuid(workload: Workload, index: int, problem_name: str, seed: int, taken: set[str]) -> Workload:
    """The workload named hidden-<index>-<hash of its content>, unlike any uuid in `taken`."""
    content = f"{problem_name}:{seed}:{index}:{workload.model_dump_json(exclude={'uuid'})}"
    digest = hashlib.sha256(content.encode()).hexdigest()
    uuid = f"{HIDDEN_PREFIX}{index}-{digest[:10]}"
    clash = 0
    while uuid in taken:  # a published uuid that happens to look like this one
        clash += 1
        uuid = f"{HIDDEN_PREFIX}{index}-{digest[:10]}{clash}"
    return workload.model_copy(update={"uuid": uuid})


def _axes_key(definition: Definition, axes: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """The var axis values (a workload may also bind const and expr axes, to the values they have anyway)."""
    return tuple(sorted((name, value) for name, value in axes.items() if name in definition.var_axes))


def _seed_for(problem_name: str, seed: int, index: int) -> int:
    digest = hashlib.sha256(f"hidden-workloads:{problem_name}:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def _log_uniform_integer(rng: random.Random, first: int, last: int) -> int:
    """An integer in [first, last], log-uniformly distributed (0 is never drawn when first is 0)."""
    low = max(first, 1)
    if low >= last:
        return last
    value = int(math.exp(rng.uniform(math.log(low), math.log(last + 1))))
    return min(max(value, low), last)


def _rounded(value: float) -> float:
    return float(f"{value:.{SCALAR_DIGITS}g}")
