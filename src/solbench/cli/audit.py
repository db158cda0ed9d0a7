"""`solbench audit`: the static analysis of solutions' sources."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .app import app, console, reports_user_errors


@app.command()
@reports_user_errors
def audit(
    solutions: Annotated[list[Path], typer.Argument(help="Solution JSON files.")],
    policy: Annotated[str, typer.Option(help="Precision policy the solutions would be evaluated under: relaxed (precision flags are warnings) or strict (they are refused).")] = "relaxed",
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON list: per solution its path, refused, and the findings (rule, severity, file, line, message).")] = False,
) -> None:
    """Static analysis of solutions' sources: every finding with its rule, file and line; exit code 1
    if any solution has a finding that the evaluator would refuse (REWARD_HACK)."""
    import json

    from solbench.bench.guards.static import analyze_solution
    from solbench.data.loaders import load_solution

    if policy not in {"strict", "relaxed"}:
        raise typer.BadParameter(f"expected strict or relaxed, got {policy!r}", param_hint="--policy")
    report = []
    for path in solutions:
        findings = analyze_solution(load_solution(path), policy)
        rejects = [f for f in findings if f.severity == "reject"]
        report.append({"path": str(path), "refused": bool(rejects),
                       "findings": [{"rule": f.rule, "severity": f.severity, "file": f.path, "line": f.line, "message": f.message} for f in findings]})
        if as_json:
            continue
        for finding in findings:
            print(f"{path}: {finding.path}:{finding.line}: {finding.severity} [{finding.rule}] {finding.message}")
        console.print(f"{path}: {'refused' if rejects else 'accepted'} ({len(rejects)} reject, {len(findings) - len(rejects)} warn)",
                      style="red" if rejects else "green")
    if as_json:
        print(json.dumps(report, indent=1))
    if any(entry["refused"] for entry in report):
        raise typer.Exit(1)


