"""`solbench dataset characterise | stats | sample`: the catalogue tools (solbench.dataset.catalog)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import _print_issue, console, error_console, reports_user_errors
from .dataset import dataset_app

DirArgument = Annotated[Path, typer.Argument(metavar="DIR", help="A folder of problems (problem folders, optionally in subset folders), or solbench:NAME for a bundled set.")]
HardwareOption = Annotated[str, typer.Option("--hardware", "-H", help="Hardware spec (name or YAML) on which compute- or memory-bound is judged.")]
JobsOption = Annotated[int, typer.Option("--jobs", "-j", min=0, help="Processes that analyse problems side by side (0: one per core, up to 4).")]
IndexOption = Annotated[Optional[Path], typer.Option("--index", help="The index file (default: index.json in the folder of problems).")]


def _note(line: str) -> None:
    error_console.print(line, style="dim", markup=False)


def _catalogue_folder(folder: Path | None) -> tuple[Path, bool]:
    """The folder of problems a tool reads (solbench:NAME resolved; none: the bundled problems) and whether it
    lies inside the installed package, where no index or figure is written unless the user names the file."""
    from solbench.dataset import bundled_problems_path, is_bundled, resolve_set_paths

    path = bundled_problems_path() if folder is None else resolve_set_paths([folder])[0]
    return path, is_bundled(path)


def _warn_issues(issues: list) -> None:
    for issue in issues:
        _print_issue(issue)


@dataset_app.command("characterise")
@reports_user_errors
def characterise_command(
    folder: DirArgument,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Index file to write (default: DIR/index.json).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the output file even if this tool did not write it.")] = False,
    hardware: HardwareOption = "H200",
    workload: Annotated[str, typer.Option("--workload", help="The representative workload that the SOL analysis prices: median, smallest or largest (by input bytes).")] = "median",
    fresh: Annotated[bool, typer.Option("--fresh", help="Analyse every problem again (default: reuse the rows of unchanged problems).")] = False,
    jobs: JobsOption = 0,
) -> None:
    """Characterise every problem of DIR (category, domain, precision, direction, arithmetic intensity, fusion, ...) into an index file."""
    from solbench.data.errors import SpecError
    from solbench.dataset.catalog.analyse import WORKLOAD_CHOICES
    from solbench.dataset.catalog.characterise import characterise, check_writable, index_path, is_ours, read_index, write_index

    if workload not in WORKLOAD_CHOICES:
        raise SpecError(f"expected one of {', '.join(WORKLOAD_CHOICES)}, got {workload!r}", field="--workload")
    folder, bundled = _catalogue_folder(folder)
    if bundled and output is None:
        raise SpecError("is inside the installed solbench package: name the index file to write with -o FILE", path=folder)
    path = index_path(folder, output)
    check_writable(path, force)  # before the slow part
    previous = read_index(path) if path.is_file() and is_ours(path) and not fresh else None
    started = time.monotonic()
    issues: list = []
    index = characterise(folder, hardware=hardware, choice=workload, jobs=jobs, previous=previous, progress=True, issues=issues)
    _warn_issues(issues)
    write_index(index, path, force=force)
    failed = [row for row in index.problems if row.error]
    known = {(row.path, row.digest) for row in previous.problems} if previous is not None else set()
    reused = sum(1 for row in index.problems if (row.path, row.digest) in known)
    for row in failed:
        console.print(f"{row.path}: analysis failed: {row.error}", style="yellow", markup=False)
    console.print(f"characterised {len(index.problems)} problems ({reused} unchanged, {len(failed)} with a failed analysis) "
                  f"in {time.monotonic() - started:.1f} s; wrote {path}", markup=False)


@dataset_app.command("stats")
@reports_user_errors
def stats_command(
    folder: Annotated[Optional[Path], typer.Argument(metavar="[DIR]", help="A folder of problems, or solbench:NAME (default: the bundled problems; a bundled set's index is kept in memory).")] = None,
    index_file: IndexOption = None,
    plot: Annotated[Optional[Path], typer.Option("--plot", help="Where the SVG figure goes (default: DIR/stats.svg; none for a bundled set unless given).")] = None,
    no_plot: Annotated[bool, typer.Option("--no-plot", help="Write no figure.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Replace the plot file even if this tool did not write it.")] = False,
    target: Annotated[Optional[list[str]], typer.Option("--target", help="Coverage target DIM=value:share[,value:share] (repeatable); exit code 1 when one is short.")] = None,
    hardware: HardwareOption = "H200",
    jobs: JobsOption = 0,
) -> None:
    """Counts and shares by category, domain, precision, direction and arithmetic-intensity band; a figure; coverage targets."""
    from solbench.data.errors import SpecError
    from solbench.data.files import write_atomically
    from solbench.dataset.catalog import plot as figure
    from solbench.dataset.catalog.characterise import index_for
    from solbench.dataset.catalog.stats import coverage, stats_table, targets_table
    from solbench.dataset.catalog.targets import parse_all

    targets = parse_all(target or [], "--target")  # a bad target is reported before any analysis
    folder, bundled = _catalogue_folder(folder)
    plot_path = None if no_plot else plot if plot is not None else (None if bundled else folder / "stats.svg")
    if plot_path is not None and plot_path.exists() and (plot_path.is_dir() or (not force and not figure.is_ours(plot_path))):
        raise SpecError("exists and is not a figure written by solbench dataset stats; refusing to overwrite it (pass --force)", path=plot_path)
    issues: list = []
    index = index_for(folder, output=index_file, write=not bundled or index_file is not None, hardware=hardware, jobs=jobs, progress=True,
                      on_note=_note, issues=issues)
    _warn_issues(issues)
    rows = index.problems
    console.print(f"{folder}: {len(rows)} problems (SOL of the {index.workload_choice} workload on {index.hardware})", markup=False)
    console.print(stats_table(rows))
    failed = sum(1 for row in rows if row.error)
    if failed:
        console.print(f"{failed} problems have no SOL analysis (intensity 'unknown'): see their 'error' in the index", style="yellow")
    if plot_path is not None:
        plot_path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(plot_path, figure.stats_svg(rows, f"{folder.name}: {len(rows)} problems"))
        console.print(f"wrote {plot_path}", markup=False)
    if targets:
        checks = coverage(rows, targets)
        console.print(targets_table(checks))
        short = [check for check in checks if not check.met]
        if short:
            for check in short:
                error_console.print(f"short of target: {check.dimension}={check.value} is {check.actual:.1%} "
                                    f"({check.problems} of {len(rows)}), target {check.target:.1%}", markup=False)
            raise typer.Exit(1)


@dataset_app.command("sample")
@reports_user_errors
def sample_command(
    pool: Annotated[Path, typer.Argument(metavar="POOL", help="A folder of problems to draw from, or solbench:NAME.")],
    n: Annotated[int, typer.Option("--n", help="Problems in the sample.")] = 120,
    strata: Annotated[str, typer.Option("--strata", help="Dimensions to stratify by, comma-separated (category, domain, precision, direction, intensity, ...).")] = "category",
    share: Annotated[Optional[list[str]], typer.Option("--share", help="Target shares DIM=value:share[,value:share] (repeatable); other values share the rest by size.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the draw: the same pool, options and seed give the same sample.")] = 0,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Folder to copy the chosen problem folders into (must not exist, or be empty).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the chosen problems, copy nothing.")] = False,
    duplicates: Annotated[str, typer.Option("--duplicates", help="What counts as a duplicate: structure (the same graph up to names and "
                                            "constants) or sizes (the same graph with the same constant axis values too: one layer of models of "
                                            "different widths stays).")] = "structure",
    index_file: IndexOption = None,
    hardware: HardwareOption = "H200",
    jobs: JobsOption = 0,
) -> None:
    """De-duplicate equivalent problems (same graph up to names and constants), then draw a stratified sample of N."""
    from solbench.data.errors import SpecError
    from solbench.dataset.catalog.characterise import index_for
    from solbench.dataset.catalog.copy import check_output, copy_problems
    from solbench.dataset.catalog.sample import deduplicate, draw, sample_sizes
    from solbench.dataset.catalog.targets import check_dimension, parse_all

    dimensions = [d.strip() for d in strata.split(",") if d.strip()]
    if not dimensions:
        raise SpecError("expected one or more dimensions, comma-separated", field="--strata")
    for dimension in dimensions:
        check_dimension(dimension, "--strata")
    shares = parse_all(share or [], "--share")
    if n < 1:
        raise SpecError(f"expected at least 1, got {n}", field="--n")
    if duplicates not in ("structure", "sizes"):
        raise SpecError(f"expected structure or sizes, got {duplicates!r}", field="--duplicates")
    if output is None and not dry_run:
        raise SpecError("say where the sample goes (-o OUT) or pass --dry-run", field="--output")
    if output is not None and not dry_run:
        check_output(output)
    pool, bundled = _catalogue_folder(pool)
    if not pool.is_dir():
        raise SpecError("does not exist: expected a folder of problems" if not pool.exists() else "is not a folder: expected a folder of problems", path=pool)
    issues: list = []
    index = index_for(pool, output=index_file, write=not bundled or index_file is not None, hardware=hardware, jobs=jobs, progress=True, on_note=_note, issues=issues)
    _warn_issues(issues)
    unique, groups = deduplicate(index.problems, sample_sizes(pool) if duplicates == "sizes" else None)
    if groups:
        what = "same graph up to names and constants" if duplicates == "structure" else "same graph and sizes, up to names"
        print(f"dropped {sum(len(d.dropped) for d in groups)} duplicates ({what}):")
        for group in groups:
            print(f"  kept {group.kept.path}, standing for {', '.join(r.path for r in group.dropped)}")
    sample = draw(unique, n, dimensions, shares, seed)
    for note in sample.notes:
        print(f"note: {note}")
    from rich.table import Table

    table = Table(title=f"sample of {len(sample.chosen)} from {len(unique)} distinct problems (seed {seed})")
    for column in (*dimensions, "pool", "wanted", "chosen"):
        table.add_column(column, justify="right" if column in {"pool", "wanted", "chosen"} else "left")
    for stratum in sample.strata:
        table.add_row(*stratum.key, str(len(stratum.rows)), f"{stratum.target:.1f}", str(stratum.allotted),
                      style="yellow" if stratum.short else None)
    console.print(table)
    if dry_run:
        for row in sample.chosen:
            print(row.path)
        return
    assert output is not None
    from solbench.dataset.catalog.analyse import relative_path
    from solbench.dataset.catalog.characterise import load_folder

    problems = {relative_path(problem, pool): problem for problem in load_folder(pool, [])}
    missing = [row.path for row in sample.chosen if row.path not in problems]
    if missing:
        raise SpecError(f"the index names problems the pool no longer has: {', '.join(missing[:5])}; characterise it again", path=pool)
    copy_problems(pool, [(row.path, problems[row.path]) for row in sample.chosen], output)
    console.print(f"copied {len(sample.chosen)} problems to {output}", markup=False)
