"""`solbench new`: write a solution skeleton for a problem."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from .app import app, console, reports_user_errors


def resolve_problem(given: str):
    """The one problem named by `given`: a path (problem folder, definition.json, ...) or a bundled problem's name."""
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_problems
    from solbench.dataset import bundled_problems_path

    path = Path(given)
    if path.exists():
        problems = load_problems([path])
        if len(problems) != 1:
            names = ", ".join(p.name for p in problems[:8]) + (" ..." if len(problems) > 8 else "")
            raise SpecError(f"holds {len(problems)} problems ({names}); name one problem folder or definition.json", path=path)
        return problems[0]
    bundled = {p.name: p for p in load_problems([bundled_problems_path()])}
    if given in bundled:
        return bundled[given]
    raise SpecError(f"is neither a path nor a bundled problem ({', '.join(sorted(bundled))}; `solbench show` lists them)", path=given)


@app.command("new")
@reports_user_errors
def new_command(
    problem: Annotated[str, typer.Argument(metavar="PROBLEM", help="A bundled problem's name (see `solbench show`) or a problem folder / definition.json.")],
    language: Annotated[str, typer.Option("--language", "-l", help="pytorch, triton or cuda_cpp.")] = "pytorch",
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Folder to write into (default: ./<problem>_<language>); existing files are never overwritten.")] = None,
    style: Annotated[str, typer.Option(help="dps (outputs preallocated and passed after the inputs), returning, or auto (dps unless an output is a Python scalar).")] = "auto",
) -> None:
    """Write a solution skeleton: solution.json (what `solbench eval --solution` reads) and its sources as files."""
    from solbench.data.errors import SpecError
    from solbench.data.skeletons import LANGUAGES, STYLES, SkeletonError, skeleton

    if language not in LANGUAGES:
        raise typer.BadParameter(f"expected one of {', '.join(LANGUAGES)}, got {language!r}", param_hint="--language")
    if style not in STYLES:
        raise typer.BadParameter(f"expected one of {', '.join(STYLES)}, got {style!r}", param_hint="--style")
    chosen = resolve_problem(problem)
    try:
        made = skeleton(chosen, language, style)
    except SkeletonError as exc:
        raise SpecError(str(exc), path=chosen.source, field="--style") from None
    folder = output if output is not None else Path(f"{chosen.name}_{language}")
    described = made.solution.to_json_dict()
    described["sources"] = [{"path": source.path} for source in made.solution.sources]  # read from the files beside it
    files = {folder / "solution.json": json.dumps(described, indent=2) + "\n"}
    files |= {folder / source.path: source.content for source in made.solution.sources}
    existing = [path for path in files if path.exists()]
    if existing:
        raise SpecError("exists already (solbench new never overwrites); choose another folder with -o", path=existing[0])
    if folder.exists() and not folder.is_dir():
        raise SpecError("is a file, not a folder", path=folder)
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as handle:  # "x": fails rather than overwrite a file made meanwhile
            handle.write(content)
    solution_file = folder / "solution.json"
    console.print(f"wrote {', '.join(str(path) for path in files)}", markup=False)
    print(f"{solution_file} names its sources by path: eval, audit and run read the files beside it, so edit them in place")
    for note in made.notes:
        print(note)
    source = chosen.source if chosen.source is not None else problem
    print(f"next: solbench eval {source} --solution {solution_file}")
