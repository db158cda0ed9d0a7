"""Errors and warnings about user-supplied files, each locatable to one file, line and field."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from pydantic import ValidationError


@dataclass(frozen=True)
class Issue:
    """One problem found in a user's file: where it is and what is wrong."""

    message: str
    path: Path | None = None
    line: int | None = None
    field: str | None = None
    severity: str = "error"  # "error" or "warning"

    def located(self, path: Path | None = None, line: int | None = None, prefix: str | None = None) -> Issue:
        """The same issue with a file, a line or an outer field path filled in where missing."""
        field = self.field
        if prefix:
            field = f"{prefix}.{field}" if field else prefix
        return Issue(
            self.message,
            self.path if self.path is not None else path,
            self.line if self.line is not None else line,
            field,
            self.severity,
        )

    def __str__(self) -> str:
        where = str(self.path) if self.path is not None else "<input>"
        if self.line is not None:
            where += f":{self.line}"
        field = f" {self.field}:" if self.field else ""
        label = "warning: " if self.severity == "warning" else ""
        return f"{where}:{field} {label}{self.message}"


class SpecError(Exception):
    """A user-supplied file (or several) failed validation; carries every issue found."""

    def __init__(self, issues: Iterable[Issue] | str, *, path: Path | None = None, line: int | None = None, field: str | None = None):
        if isinstance(issues, str):
            issues = [Issue(issues, path, line, field)]
        else:
            issues = [i.located(path, line) for i in issues]
        self.issues: list[Issue] = list(issues)
        super().__init__("\n".join(str(i) for i in self.issues))

    def located(self, path: Path | None = None, line: int | None = None, prefix: str | None = None) -> SpecError:
        return SpecError([i.located(path, line, prefix) for i in self.issues])


class SpecWarning(UserWarning):
    """Something was accepted but deserves the user's attention (an alias, a guess avoided)."""


def issues_from_validation_error(error: ValidationError, prefix: str | None = None) -> list[Issue]:
    """Turn pydantic's errors into one Issue per error, with a dotted field path."""
    found = []
    for err in error.errors(include_url=False):
        loc = ".".join(str(part) for part in err["loc"] if not _is_union_tag(part))
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        message = err["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        if err["type"] in {"missing", "extra_forbidden"} or "input" not in err or repr(err["input"]) in message:
            found.append(Issue(message, field=loc or None))
        else:
            found.append(Issue(f"{message} (got {_short(err['input'])})", field=loc or None))
    return found


def _is_union_tag(part: object) -> bool:
    # pydantic puts the chosen member of a tagged union in the location; our tags read "type=...".
    return isinstance(part, str) and part.startswith(("function-", "type="))


def _short(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
