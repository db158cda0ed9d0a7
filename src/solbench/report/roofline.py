"""The roofline of each problem: the chip's roofs (DRAM bandwidth and each compute unit's peak) and
every workload of the reference, the baseline T_b, the bound T_SOL and each solution, placed by
arithmetic intensity (FLOPs per byte of compulsory DRAM traffic) and attained TFLOP/s.

All the problems of one run share their roofs and their series (reference, T_b, T_SOL, one per
solution set), so one figure is built once and only its points, limits and title change from
problem to problem: this keeps a report of hundreds of problems within seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import matplotlib
import numpy as np

from solbench.report.figures import RC, log_axes, new_figure, series_id, solution_set_of, solution_styles, to_svg
from solbench.score.summary import WorkloadScore

PASSED = "PASSED"
ROOF_MERGE = 0.03  # roofs within 3% of each other are one line with a joint label
REFERENCE, BASELINE, BOUND = "reference", "baseline T_b", "T_SOL"
_FIXED_STYLES = {REFERENCE: ("o", "#555555", True), BASELINE: ("x", "#000000", False), BOUND: ("*", "#d62728", False)}
_X_SPAN = (1e-4, 1e7)  # roof lines are drawn over this range of intensities once; each problem zooms in


MARKER_GLYPHS = {"o": "●", "s": "■", "^": "▲", "v": "▼", "D": "◆", "P": "✚", "X": "✖", "<": "◀", ">": "▶", "h": "⬢", "x": "✕", "*": "★"}


@dataclass(frozen=True)
class LegendEntry:
    label: str
    glyph: str  # the marker as a character, for a legend in text
    colour: str


@dataclass(frozen=True)
class Roof:
    label: str
    tflops: float


def roofs_of(roofs: dict[str, float]) -> tuple[float | None, list[Roof]]:
    """The DRAM bandwidth (TB/s) and the compute roofs (highest first) of a summary's `roofs`,
    near-equal ones merged (tensor_fp16 and tensor_bf16 -> one line 'tensor fp16/bf16')."""
    bandwidth = roofs.get("dram_tbps")
    peaks = sorted(((key[: -len("_tflops")], value) for key, value in roofs.items() if key.endswith("_tflops") and value and value > 0),
                   key=lambda item: -item[1])
    merged: list[tuple[list[str], float]] = []
    for unit, value in peaks:
        if merged and merged[-1][1] <= value * (1 + ROOF_MERGE):
            merged[-1][0].append(unit)
        else:
            merged.append(([unit], value))
    return (bandwidth if bandwidth and bandwidth > 0 else None), [Roof(_joint_label(units), value) for units, value in merged]


def _joint_label(units: list[str]) -> str:
    """['tensor_fp16', 'tensor_bf16'] -> 'tensor fp16/bf16'."""
    heads = {unit.split("_", 1)[0] for unit in units}
    if len(heads) == 1 and all("_" in unit for unit in units):
        return f"{heads.pop()} {'/'.join(unit.split('_', 1)[1] for unit in units)}"
    return "/".join(unit.replace("_", " ") for unit in units)


def attained_tflops(flops: float, milliseconds: float | None) -> float | None:
    if milliseconds is None or milliseconds <= 0:
        return None
    return flops / milliseconds / 1e9


def roofline_points(workloads: Iterable[WorkloadScore]) -> tuple[dict[str, list[tuple[float, float]]], list[str]]:
    """The points of one problem, by series label (reference, T_b, T_SOL, then each solution set):
    (FLOP/byte, TFLOP/s) for every workload with known FLOPs and bytes; and a note for each kind of
    workload that could not be placed."""
    points: dict[str, list[tuple[float, float]]] = {REFERENCE: [], BASELINE: [], BOUND: []}
    seen: set[str] = set()
    data_only: set[str] = set()
    unknown: set[str] = set()
    failed = 0
    for row in workloads:
        if not row.bytes or row.bytes <= 0 or row.flops is None or row.flops <= 0:
            (data_only if row.flops == 0 and row.bytes else unknown).add(row.workload)
            continue
        intensity = row.flops / row.bytes
        if row.workload not in seen:  # a workload's reference, T_b and T_SOL are shared by its solutions
            seen.add(row.workload)
            for label, milliseconds in ((REFERENCE, row.reference_ms), (BASELINE, row.baseline_ms), (BOUND, row.sol_ms)):
                rate = attained_tflops(row.flops, milliseconds)
                if rate is not None:
                    points[label].append((intensity, rate))
        label = solution_set_of(row)
        if label == REFERENCE and row.reference_ms is not None:
            continue  # the reference solution is the reference series already
        rate = attained_tflops(row.flops, row.latency_ms) if row.status == PASSED else None
        if rate is None:
            failed += row.status != PASSED
            continue
        points.setdefault(label, []).append((intensity, rate))
    notes = []
    if data_only:
        notes.append(f"{len(data_only)} workload(s) do no FLOPs (data movement only): not on the roofline")
    if unknown:
        notes.append(f"{len(unknown)} workload(s) without FLOPs/bytes from the SOL analysis: not placed")
    if failed:
        notes.append(f"{failed} failed solution workload(s): not placed")
    return {label: found for label, found in points.items() if found}, notes


class RooflinePlotter:
    """Draws the rooflines of one run on one reused figure (see the module docstring)."""

    def __init__(self, roofs: dict[str, float], solution_sets: Iterable[str]):
        self.bandwidth, self.compute = roofs_of(roofs)
        self.styles: dict[str, LegendEntry] = {}
        self.last_labels: list[str] = []
        with matplotlib.rc_context(RC):
            self.figure = new_figure(5.8, 3.4, (0.6, 0.45, 1.45, 0.3))
            self.ax = ax = self.figure.add_subplot()
            log_axes(ax)
            ax.set_xlabel("arithmetic intensity (FLOP / byte of compulsory DRAM traffic)")
            ax.set_ylabel("attained TFLOP/s")
            self.title = ax.text(0.0, 1.03, "", transform=ax.transAxes, fontsize=9, ha="left", va="bottom")
            self._draw_roofs()
            self.scatters: dict[str, matplotlib.collections.PathCollection] = {}
            for label, (marker, colour, hollow) in _FIXED_STYLES.items():
                self._add_series(label, marker, colour, hollow)
            for label, (marker, colour) in solution_styles(s for s in solution_sets if s != REFERENCE).items():
                self._add_series(label, marker, colour, False)
            self._known = set(self.scatters)  # series of every problem; others are added for one problem and removed after it

    def _draw_roofs(self) -> None:
        self.dram_label = None
        if self.bandwidth is None:
            return
        low, high = _X_SPAN
        for roof in self.compute:
            ridge = roof.tflops / self.bandwidth
            xs = [low, ridge, high] if low < ridge < high else [low, high]
            self.ax.plot(xs, [min(roof.tflops, self.bandwidth * x) for x in xs], color="#8c8c8c", linewidth=0.9, zorder=1)
            self.ax.annotate(f"{roof.label} {roof.tflops:g}", xy=(1.0, roof.tflops), xycoords=("axes fraction", "data"), xytext=(3, 0),
                             textcoords="offset points", va="center", fontsize=6.5, color="#555555", annotation_clip=False)
        self.dram_label = self.ax.text(0, 0, f"DRAM {self.bandwidth:g} TB/s", fontsize=6.5, color="#555555")

    def _add_series(self, label: str, marker: str, colour: str, hollow: bool) -> None:
        self.styles[label] = LegendEntry(label, "○" if hollow and marker == "o" else MARKER_GLYPHS.get(marker, "●"), colour)
        colours = {"facecolors": "none", "edgecolors": colour} if hollow else {"color": colour}
        self.scatters[label] = self.ax.scatter(np.empty((0,)), np.empty((0,)), marker=marker, s=26, label=label, zorder=3, linewidths=1.0,
                                               gid=series_id(label), **colours)

    def legend(self, labels: Iterable[str]) -> list[LegendEntry]:
        """The legend of a roofline drawn with these series. The page shows it beside the figure
        rather than in it: laying out a legend is a third of the time matplotlib takes per figure."""
        return [self.styles[label] for label in labels if label in self.styles]

    def svg(self, problem: str, workloads: Iterable[WorkloadScore], key: str) -> tuple[str | None, list[str]]:
        """The roofline of one problem as SVG (None when no workload can be placed) and its notes;
        `legend(labels)` of the labels drawn (`last_labels`) says what its markers mean."""
        points, notes = roofline_points(workloads)
        self.last_labels = [label for label in self.scatters if label in points] + [label for label in points if label not in self.scatters]
        if not points:
            return None, notes
        if self.bandwidth is None or not self.compute:
            notes.append("no roofs: the run has no hardware spec")
        with matplotlib.rc_context(RC):
            for label in [label for label in self.scatters if label not in self._known and label not in points]:
                self.scatters.pop(label).remove()
            if any(label not in self.scatters for label in points):
                extra = solution_styles([*self.scatters, *points])
                for label in points:
                    if label not in self.scatters:
                        self._add_series(label, *extra[label], False)
            for label, scatter in self.scatters.items():
                scatter.set_offsets(np.array(points.get(label, []), dtype=float).reshape(-1, 2))
            self._zoom([xy for found in points.values() for xy in found])
            self.title.set_text(problem)
            return to_svg(self.figure, key), notes

    def _zoom(self, placed: list[tuple[float, float]]) -> None:
        intensities = [x for x, _ in placed]
        rates = [y for _, y in placed]
        ridges = [roof.tflops / self.bandwidth for roof in self.compute] if self.bandwidth else []
        low, high = min(intensities + ridges) / 4, max(intensities + ridges) * 4
        top = max(rates + [roof.tflops for roof in self.compute]) * 2
        bottom = min(rates + ([self.bandwidth * low] if self.bandwidth else [])) / 2
        self.ax.set_xlim(low, high)
        self.ax.set_ylim(bottom, top)
        if self.dram_label is not None:
            self.dram_label.set_position((low * 1.3, self.bandwidth * low * 1.6))


@dataclass(frozen=True)
class Roofline:
    svg: str | None
    notes: list[str]
    legend: list[LegendEntry]


def draw_rooflines(roofs: dict[str, float], solution_sets: list[str], problems: list[tuple[str, list[WorkloadScore]]], first_key: int = 0) -> list[Roofline]:
    """The rooflines of several problems on one plotter; SVG ids are salted by position
    (first_key + index) so that chunks drawn apart still share a page."""
    plotter = RooflinePlotter(roofs, solution_sets)
    found = []
    for index, (name, workloads) in enumerate(problems):
        svg, notes = plotter.svg(name, workloads, key=f"roofline-{first_key + index}")
        found.append(Roofline(svg, notes, plotter.legend(plotter.last_labels) if svg else []))
    return found
