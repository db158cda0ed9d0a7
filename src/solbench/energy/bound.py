"""E_SOL: the least energy a workload can take on a chip, from the same SOL analysis as T_SOL.

    E_SOL = k x (B x (e_DRAM + e_L2) + sum over units of FLOPs_u x e_u) + P_static x T_SOL

B is the workload's compulsory DRAM traffic (`bytes_cache_aware`: inputs as far as they are read,
outputs, and the re-reads any tiling must pay); every such byte also passes the L2 on its way to or
from the SMs. Outputs that the time bound prices at the on-chip write rate are priced at DRAM here:
they are written back after the call, and the measured window (a loop of calls with an L2 flush before
each) pays for that write-back. FLOPs per unit are priced at the energy per operation of the way of
doing them that costs least under the precision policy (an fp32 contraction under strict: the fp32
vector units, or 3xTF32 on the tensor units; under relaxed also the 16-bit tensor rate), mirroring
HardwareSpec.rate. A unit the calibration did not measure is priced at the least energy per operation
of any measured unit (never more than a real kernel could pay), with a note. P_static is the idle
power measured before the calibration: a call that takes T_SOL pays at least that much over it.
k (EnergyFigures.envelope, at most 1) is the fit's lower envelope: the least measured/fitted joules of
its calibration kernels, so that the dynamic part is never above what any of them measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from solbench.energy.figures import EnergyFigures


@dataclass(frozen=True)
class EnergyBound:
    joules: float
    parts: dict[str, float]  # joules of: dram, l2, compute, static
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"e_sol_j": self.joules, "e_sol_parts_j": dict(self.parts), "e_sol_notes": list(self.notes)}


def no_figures_note(spec: Any) -> str:
    return (f"no E_SOL: the hardware spec {spec.name} has no energy figures (datasheet only); `solbench hw calibrate --energy` "
            "measures them on the GPU")


def ways(unit: str, policy: str, relaxed_unit: str) -> list[tuple[str, float]]:
    """(unit, operations per FLOP) of each way of doing the work counted on `unit` under the policy."""
    found = [(unit, 1.0)]
    if unit == "tensor_fp32":
        found = [("tensor_fp32", 1.0), ("vector_fp32", 1.0), ("tensor_tf32", 3.0)]  # 3xTF32: three tf32 products per fp32 one
        if policy == "relaxed":
            found.append((relaxed_unit, 1.0))
    elif unit == "vector_fp32" and policy == "relaxed":
        found.append(("vector_fp16", 1.0))
    return found


def unit_energy_j(unit: str, figures: EnergyFigures, policy: str, relaxed_unit: str = "tensor_bf16") -> tuple[float, str | None]:
    """Joules per FLOP counted on `unit`: the cheapest measured way of doing it, else the least measured
    energy per operation of any unit (with a note), else 0 (with a note)."""
    priced = [figures.op_pj[name] * factor for name, factor in ways(unit, policy, relaxed_unit) if name in figures.op_pj]
    if priced:
        return min(priced) * 1e-12, None
    if figures.op_pj:
        least = min(figures.op_pj, key=figures.op_pj.get)
        return figures.op_pj[least] * 1e-12, (f"no energy figure for {unit}: priced at the least measured energy per operation "
                                              f"({least}, {figures.op_pj[least]:.3g} pJ)")
    return 0.0, f"no energy figure for {unit} nor any other unit: its FLOPs cost nothing in E_SOL"


def energy_bound(result: Any, figures: EnergyFigures, relaxed_unit: str = "tensor_bf16") -> EnergyBound:
    """E_SOL of one workload from its SolResult (flops_by_unit, bytes_cache_aware, t_sol_s, policy)."""
    moved = float(result.bytes_cache_aware)
    notes: list[str] = []
    compute = 0.0
    for unit, flops in sorted(result.flops_by_unit.items()):
        if not flops:
            continue
        joules, note = unit_energy_j(unit, figures, result.policy, relaxed_unit)
        compute += flops * joules
        if note:
            notes.append(note)
    envelope = figures.envelope()
    parts = {
        "dram": envelope * moved * figures.dram_pj_per_byte * 1e-12,
        "l2": envelope * moved * figures.l2_pj_per_byte * 1e-12,
        "compute": envelope * compute,
        "static": figures.static_power_w * float(result.t_sol_s),
    }
    return EnergyBound(sum(parts.values()), parts, notes)


def bound_for_spec(result: Any, spec: Any) -> tuple[EnergyBound | None, str | None]:
    """E_SOL on a spec, or None and the reason (the spec has no energy figures)."""
    if getattr(spec, "energy", None) is None:
        return None, no_figures_note(spec)
    return energy_bound(result, spec.energy, spec.relaxed_contraction_unit), None
