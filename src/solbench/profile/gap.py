"""The gap decomposition: T / T_SOL of one call as a product of factors, each one thing to fix.

T is the measured latency (the evaluator's CUPTI span of a call), T_SOL the speed-of-light time of the
workload, B the busy time of the call (the union of its kernels', copies' and memsets' intervals in the
CUPTI timeline), D the DRAM bytes the kernels moved (Nsight Compute: read + write, L2 cold), C the
compulsory bytes of the SOL analysis (the cache-aware bound's bytes), BW the hardware spec's DRAM
bandwidth and u the utilisation of the bound unit's pipe while the kernels ran (Nsight Compute, a
share of its peak, weighted by kernel duration).

    gaps       g = span / B of a representative call (the median one)     >= 1; B' = T / g
    memory-bound (T_SOL's bottleneck is DRAM):
      extra bytes  x = D / C
      bandwidth    e = BW * B' / D        (peak over the bandwidth achieved while kernels ran)
    compute-bound (the bottleneck is an execution unit):
      pipe         e = 1 / u
    remainder      r = (T / T_SOL) / (g * x * e)

so that g * x * e * r = T / T_SOL exactly. For a memory bound r = C / (BW * T_SOL): the terms of the bound
itself (outputs that fit in the L2 priced at the on-chip write rate: r > 1; a latency floor above the
roofline: r < 1), 1 where T_SOL is C / BW. For a compute bound r = B' * u / T_SOL: work on the pipe
beyond the compulsory FLOPs (extra instructions, a pipe peak below the spec's rate) and the floor.
A factor whose measurement is missing is left out (1), and what it would have explained lands in the
next one (no D: the bandwidth factor is taken against C, and holds the extra bytes; no timeline: the
gaps are in the bandwidth or pipe factor; no u: everything after the gaps is the remainder); a note
says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MEMORY = "memory"


@dataclass(frozen=True)
class GapInputs:
    latency_s: float  # T
    sol_s: float  # T_SOL
    bound: str  # "memory" or the bound unit (SolResult.bottleneck)
    compulsory_bytes: float  # C
    peak_bandwidth: float  # BW, bytes per second
    dram_bytes: float | None = None  # D; None: not measured
    span_over_busy: float | None = None  # g from the timeline; None: no timeline
    pipe_utilisation: float | None = None  # u in (0, 1]; None: not measured for this unit
    floor_bound: bool = False  # T_SOL is the latency floor, not the roofline


@dataclass(frozen=True)
class Factor:
    name: str  # gaps | extra_bytes | bandwidth | pipe | remainder
    value: float
    meaning: str


@dataclass
class Decomposition:
    t_over_t_sol: float
    bound: str
    factors: list[Factor]
    notes: list[str] = field(default_factory=list)

    @property
    def product(self) -> float:
        return math.prod(factor.value for factor in self.factors)

    def values(self) -> dict[str, float]:
        """{"t_over_t_sol": ..., factor name: value, ...} (what the optimiser's feedback takes)."""
        return {"t_over_t_sol": self.t_over_t_sol, **{factor.name: factor.value for factor in self.factors}}


def decompose(given: GapInputs) -> Decomposition:
    """The factors of T / T_SOL (see the module docstring); ValueError where T or T_SOL is not positive."""
    if not (given.latency_s > 0 and given.sol_s > 0):
        raise ValueError(f"a gap decomposition needs a positive latency and T_SOL, got T={given.latency_s!r} s, T_SOL={given.sol_s!r} s")
    ratio = given.latency_s / given.sol_s
    factors: list[Factor] = []
    notes: list[str] = []
    gaps = 1.0
    if given.span_over_busy is not None and given.span_over_busy > 0:
        gaps = max(1.0, given.span_over_busy)
        factors.append(Factor("gaps", gaps, "launch and idle gaps between kernels: span / busy time of the call (CUPTI timeline)"))
    else:
        notes.append("no CUPTI timeline of the call: the gaps between kernels are not separated (they are in the next factor)")
    busy = given.latency_s / gaps
    if given.bound == MEMORY:
        factors += _memory_factors(given, busy, notes)
    elif given.pipe_utilisation is not None and given.pipe_utilisation > 0:
        factors.append(Factor("pipe", 1.0 / min(1.0, given.pipe_utilisation),
                              f"the {given.bound} pipe's peak over its utilisation while the kernels ran (Nsight Compute)"))
    else:
        notes.append(f"the utilisation of the {given.bound} pipe is not measured: the pipe's efficiency is in the remainder")
    explained = math.prod(factor.value for factor in factors)
    meaning = ("compulsory bytes at peak bandwidth over T_SOL: the bound's own terms (outputs priced at the on-chip write rate, the latency floor)"
               if given.bound == MEMORY else
               "the pipe's active time over T_SOL: work beyond the compulsory FLOPs (extra instructions, a pipe peak below the spec's rate)")
    factors.append(Factor("remainder", ratio / explained, meaning))
    if given.floor_bound:
        notes.append("T_SOL is the hardware's latency floor, not the roofline: the remainder is below 1 by the floor's excess over the roofline")
    return Decomposition(ratio, given.bound, factors, notes)


def _memory_factors(given: GapInputs, busy: float, notes: list[str]) -> list[Factor]:
    compulsory, bandwidth = given.compulsory_bytes, given.peak_bandwidth
    if given.dram_bytes is not None and given.dram_bytes > 0 and compulsory > 0:
        return [Factor("extra_bytes", given.dram_bytes / compulsory, "DRAM bytes the kernels moved / the compulsory bytes of the SOL analysis"),
                Factor("bandwidth", bandwidth * busy / given.dram_bytes, "the spec's DRAM bandwidth / the bandwidth achieved while the kernels ran")]
    if compulsory > 0:
        notes.append("DRAM bytes not measured: the bandwidth factor is taken against the compulsory bytes and holds the extra bytes")
        return [Factor("bandwidth", bandwidth * busy / compulsory, "the spec's DRAM bandwidth / the compulsory bytes' bandwidth while the kernels ran")]
    notes.append("no compulsory bytes: nothing to measure the bandwidth against; everything after the gaps is the remainder")
    return []
