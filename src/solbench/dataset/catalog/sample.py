"""`solbench dataset sample`: de-duplicate a pool of problems, then draw a stratified sample.

1. De-duplication: problems with the same graph fingerprint (fingerprint.py: same ops, dataflow,
   dtypes and symbolic shapes, up to names and constants) are one problem; the first by path is
   kept and stands for the others. Problems whose analysis failed have no fingerprint and are kept.
   With `sizes` given (a problem's constant axis values, e.g. from sample_sizes), equal graphs count as
   one only where their sizes are equal too: the same layer of two models of different widths stays.
2. Allocation: each problem gets a weight, uniform at first and then raked (iterative proportional
   fitting) so that the weight of each value with a target share is that share in every such
   dimension at once (values without a share split what is left in proportion to their size). A stratum
   (one combination of the strata dimensions' values) is allotted N * its weight / all weight, in
   whole problems by largest remainder. A stratum with too few problems gives all it has and the
   rest is handed to the others in proportion to their weight, and this is reported.
3. Draw: within a stratum, problems (sorted by path) are drawn without replacement by a numpy
   generator seeded by the seed and the stratum, so the same pool, options and seed give the same sample.
"""

from __future__ import annotations

import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from solbench.data.errors import SpecError
from solbench.dataset.catalog.row import ProblemRow


@dataclass
class Duplicates:
    kept: ProblemRow
    dropped: list[ProblemRow]


def deduplicate(rows: list[ProblemRow], sizes: Callable[[ProblemRow], str] | None = None) -> tuple[list[ProblemRow], list[Duplicates]]:
    """(unique rows in path order, the groups that had duplicates)."""
    groups: dict[str, list[ProblemRow]] = defaultdict(list)
    unique: list[ProblemRow] = []
    for row in sorted(rows, key=lambda r: r.path):
        if row.fingerprint is None:
            unique.append(row)
            continue
        key = row.fingerprint if sizes is None else f"{row.fingerprint}:{sizes(row)}"
        if not groups[key]:
            unique.append(row)
        groups[key].append(row)
    found = [Duplicates(group[0], group[1:]) for group in groups.values() if len(group) > 1]
    return unique, sorted(found, key=lambda d: d.kept.path)


def sample_sizes(pool: Path) -> Callable[[ProblemRow], str]:
    """A row's constant axis values, read from its definition.json in the pool ("" where it has none)."""
    import json

    def sizes(row: ProblemRow) -> str:
        try:
            axes = json.loads((pool / row.path / "definition.json").read_text()).get("axes", {})
        except (OSError, ValueError):
            return ""
        return json.dumps({name: axis.get("value") for name, axis in sorted(axes.items()) if axis.get("type") == "const"})

    return sizes


@dataclass
class Stratum:
    key: tuple[str, ...]
    rows: list[ProblemRow]
    weight: float = 0.0
    target: float = 0.0  # the fractional allotment before capping
    allotted: int = 0
    chosen: list[ProblemRow] = field(default_factory=list)

    @property
    def short(self) -> bool:
        return self.target > len(self.rows) + 1e-9


@dataclass
class Sample:
    chosen: list[ProblemRow]
    strata: list[Stratum]
    notes: list[str]


def weights(rows: list[ProblemRow], shares: dict[str, dict[str, float]], rounds: int = 200) -> list[float]:
    """Each row's weight, summing to 1: uniform without shares; with shares, raked (iterative proportional
    fitting) until the weight of each listed value is its share in every dimension at once, values without a
    share splitting what is left in proportion to their weight."""
    import numpy as np

    weight = np.full(len(rows), 1.0 / max(1, len(rows)))
    columns = {dimension: np.array([row.value(dimension) for row in rows], dtype=object) for dimension in shares}
    for _ in range(rounds if shares else 0):
        for dimension, wanted in shares.items():
            values = columns[dimension]
            listed = np.isin(values, list(wanted))
            for value, share in wanted.items():
                mask = values == value
                total = weight[mask].sum()
                if total > 0:
                    weight[mask] *= share / total
            rest, left = weight[~listed].sum(), max(0.0, 1.0 - sum(wanted.values()))
            if rest > 0:
                weight[~listed] *= left / rest
        if weight.sum() > 0:
            weight /= weight.sum()
    return weight.tolist()


def allot(strata: list[Stratum], n: int) -> list[str]:
    """Whole allotments summing to min(n, pool), capped at each stratum's size; the notes say what was redistributed."""
    notes: list[str] = []
    total = sum(s.weight for s in strata)
    if total <= 0:
        raise SpecError("the shares leave no problem of the pool any weight", field="share")
    for stratum in strata:
        stratum.target = n * stratum.weight / total
    wanted = min(n, sum(len(s.rows) for s in strata))
    _fill([s for s in strata if s.weight > 0], wanted, lambda s: s.weight)
    for stratum in strata:
        if stratum.short:
            notes.append(f"stratum {'/'.join(stratum.key)}: wanted {stratum.target:.1f}, has only {len(stratum.rows)}; took all, "
                         f"the rest went to the other strata")
    left = wanted - sum(s.allotted for s in strata)
    if left:  # the weighted strata ran out: the rest comes from those the shares gave nothing, by size
        notes.append(f"the strata with a share hold too few problems: {left} more drawn from the others")
        _fill([s for s in strata if s.allotted < len(s.rows)], left, lambda s: len(s.rows) - s.allotted)
    return notes


def _fill(strata: list[Stratum], amount: int, weight: Callable[[Stratum], float]) -> None:
    """Add `amount` to the allotments in proportion to weight, none beyond its stratum's size (largest remainder, ties by key)."""
    open_strata = list(strata)
    base = {id(s): weight(s) for s in open_strata}
    while open_strata and amount > 0:
        total = sum(base[id(s)] for s in open_strata)
        exact = {id(s): amount * base[id(s)] / total for s in open_strata}
        capped = [s for s in open_strata if exact[id(s)] >= len(s.rows) - s.allotted]
        if not capped:
            whole = {id(s): int(exact[id(s)]) for s in open_strata}
            left = amount - sum(whole.values())
            ranked = sorted(open_strata, key=lambda s: (-(exact[id(s)] - whole[id(s)]), s.key))
            for stratum in open_strata:
                stratum.allotted += whole[id(stratum)]
            for stratum in ranked[:left]:
                stratum.allotted += 1
            return
        for stratum in capped:
            amount -= len(stratum.rows) - stratum.allotted
            stratum.allotted = len(stratum.rows)
            open_strata.remove(stratum)


def draw(rows: list[ProblemRow], n: int, strata_dimensions: list[str], shares: dict[str, dict[str, float]] | None = None,
         seed: int = 0) -> Sample:
    """A stratified sample of n of the (already de-duplicated) rows."""
    if n < 1:
        raise SpecError(f"the sample size must be at least 1, got {n}", field="n")
    shares = shares or {}
    notes: list[str] = []
    if n > len(rows):
        notes.append(f"the pool has {len(rows)} distinct problems, fewer than {n}: took them all")
    for dimension, wanted in shares.items():
        present = {row.value(dimension) for row in rows}
        for value, share in wanted.items():
            if value not in present and share > 0:
                notes.append(f"{dimension}={value}: no problem of the pool has it; its share {share:.0%} went to the others")
    ordered = sorted(rows, key=lambda r: r.path)
    by_key: dict[tuple[str, ...], list[ProblemRow]] = defaultdict(list)
    for row in ordered:
        by_key[tuple(row.value(d) for d in strata_dimensions)].append(row)
    weight_of = dict(zip((r.path for r in ordered), weights(ordered, shares)))
    strata = [Stratum(key, members, sum(weight_of[r.path] for r in members)) for key, members in sorted(by_key.items())]
    notes += allot(strata, n)
    import numpy as np

    chosen: list[ProblemRow] = []
    for stratum in strata:
        if stratum.allotted:
            generator = np.random.default_rng([seed & 0xFFFFFFFF, zlib.crc32("\0".join(stratum.key).encode())])
            picks = sorted(generator.choice(len(stratum.rows), size=stratum.allotted, replace=False).tolist())
            stratum.chosen = [stratum.rows[i] for i in picks]
            chosen += stratum.chosen
    return Sample(sorted(chosen, key=lambda r: r.path), strata, notes)
