"""The typed row that `solbench dataset characterise` writes for each problem, and the index file.

Every field says how it is derived; the `*_source` fields name the evidence a rule used, so that a
surprising value can be traced back to the word or op that produced it.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from solbench.dataset.catalog.rules import Category

INDEX_FORMAT = "solbench-catalog-index"  # marks an index this tool wrote (and may therefore rewrite)
INDEX_VERSION = 1


class SolFacts(BaseModel):
    """solbench's SOL analysis of the representative workload (solbench.sol.analysis), priced on `hardware`."""

    model_config = ConfigDict(extra="forbid")

    workload: str = Field(description="uuid of the representative workload")
    workload_choice: str = Field(description="how it was chosen: median (median total input bytes), smallest or largest")
    hardware: str
    flops: float = Field(description="FLOPs over every execution unit")
    bytes: float = Field(description="DRAM bytes of the cache-aware bound (the bytes that T_SOL pays)")
    intensity: Optional[float] = Field(description="flops / bytes; None when no byte moves")
    bound: Literal["compute", "memory"] = Field(description="which side of the roofline sets T_SOL on this hardware")
    bottleneck: str = Field(description="the unit that sets T_SOL (memory, or the busiest execution unit)")
    t_sol_ms: float = Field(description="max(roofline, latency floor) (solbench.sol.analysis)")
    t_roofline_ms: Optional[float] = Field(None, description="the cache-aware roofline (None in catalogues from before the latency floor)")
    t_floor_ms: Optional[float] = Field(None, description="the hardware's latency floor for this workload (0: none)")
    partial: bool = Field(description="some ops have no cost rule: FLOPs and bytes are lower bounds")


class ProblemRow(BaseModel):
    """The dimensions of one problem (those of the SOL-ExecBench paper, plus what sampling needs)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    path: str = Field(description="the problem folder relative to the dataset folder (posix)")
    subset: Optional[str] = Field(description="the subset folder it is in (L1, L2, ...), if any")
    digest: str = Field(description="sha256 of definition.json + workload.jsonl: a changed problem is characterised again")
    op_type: Optional[str]
    hf_id: Optional[str] = Field(description="the source model, as the definition names it")
    category: Category = Field(description="rules.CATEGORY_RULES over op_type, then name; else the captured aten ops (rules.GRAPH_RULES)")
    category_source: str
    domain: str = Field(description="rules.DOMAIN_RULES over hf_id, then name, then description; 'unknown' if none matches")
    domain_source: str
    precision: str = Field(description="the dtype holding most bytes among the tensor inputs at the representative workload")
    fp8: bool = Field(description="an input or output is fp8 (e4m3 / e5m2)")
    fp4: bool = Field(description="an input or output is fp4 (e2m1, logical or packed)")
    quantised: Literal["none", "fp8", "fp4"] = Field(description="fp4 if any fp4 tensor, else fp8 if any fp8 tensor, else none")
    direction: Literal["forward", "backward"] = Field(description="rules.direction_of: name/op_type/tags, description, output names, backward aten ops")
    direction_source: str
    workloads: int
    var_axes: int
    custom_inputs: bool = Field(description="a custom_inputs_entrypoint, or an input of type custom in some workload")
    sol: Optional[SolFacts] = None
    ops: Optional[list[str]] = Field(default=None, description="distinct non-trivial aten ops of the capture (no views, casts, copies or fills)")
    distinct_ops: Optional[int] = Field(default=None, description="len(ops)")
    fusion: Optional[bool] = Field(default=None, description="more than one distinct non-trivial op")
    data_dependent: Optional[bool] = Field(default=None, description="the capture found ops whose sizes or values depend on data (analyse.data_dependent_ops)")
    data_dependent_ops: list[str] = Field(default_factory=list)
    capture: Optional[str] = Field(default=None, description="how the graph was captured: symbolic, fake or real")
    capture_note: Optional[str] = Field(default=None, description="why the capture could not be symbolic, as solbench.sol.capture says")
    fingerprint: Optional[str] = Field(default=None, description="fingerprint.graph_fingerprint of the capture (equal graphs up to names and constants)")
    error: Optional[str] = Field(default=None, description="why the SOL analysis failed; the fields above it still hold")

    def value(self, dimension: str) -> str:
        """The row's value of a dimension that stats and sample group by (see DIMENSIONS)."""
        return DIMENSIONS[dimension](self)


def intensity_band(row: ProblemRow) -> str:
    """log10 bands of arithmetic intensity (FLOP/byte); 'unknown' without an analysis."""
    if row.sol is None:
        return "unknown"
    value = row.sol.intensity
    if value is None:  # no byte moves: all compute, or nothing at all
        return ">=1000" if row.sol.flops > 0 else "<1"
    for upper, label in ((1, "<1"), (10, "1-10"), (100, "10-100"), (1000, "100-1000")):
        if value < upper:
            return label
    return ">=1000"


INTENSITY_BANDS = ("<1", "1-10", "10-100", "100-1000", ">=1000", "unknown")

DIMENSIONS = {
    "category": lambda row: row.category,
    "domain": lambda row: row.domain,
    "precision": lambda row: row.precision,
    "quantised": lambda row: row.quantised,
    "direction": lambda row: row.direction,
    "intensity": intensity_band,
    "bound": lambda row: row.sol.bound if row.sol is not None else "unknown",
    "fusion": lambda row: "unknown" if row.fusion is None else ("fusion" if row.fusion else "single-op"),
    "custom_inputs": lambda row: "yes" if row.custom_inputs else "no",
    "data_dependent": lambda row: "unknown" if row.data_dependent is None else ("yes" if row.data_dependent else "no"),
    "subset": lambda row: row.subset or "none",
    "hf_id": lambda row: row.hf_id or "none",
}


class Index(BaseModel):
    """The index file: which tool wrote it, how, and a row per problem (sorted by path)."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["solbench-catalog-index"] = INDEX_FORMAT
    version: int = INDEX_VERSION
    hardware: str
    workload_choice: str
    problems: list[ProblemRow]
