"""Reading and writing JSON / JSONL files, with errors located to file and line."""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any, Iterable, TypeVar

from pydantic import BaseModel, ValidationError

from solbench.data.errors import Issue, SpecError, SpecWarning, issues_from_validation_error

Model = TypeVar("Model", bound=BaseModel)


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror or exc}", path=path) from None
    except UnicodeDecodeError:
        raise SpecError("not UTF-8 text", path=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=exc.lineno) from None


def read_jsonl(path: Path) -> Iterable[tuple[int, Any | SpecError]]:
    """(line number, parsed object or the error for that line) for each non-blank line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read: {exc.strerror or exc}", path=path) from None
    except UnicodeDecodeError:
        raise SpecError("not UTF-8 text", path=path) from None
    # Split on "\n" only: str.splitlines() would also break inside strings at U+2028 and friends.
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, SpecError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number)


def parse_model(model: type[Model], data: Any, *, path: Path | None = None, line: int | None = None, prefix: str | None = None) -> tuple[Model | None, list[Issue]]:
    """Validate data as model; return it (or None) with every error and warning, located."""
    if not isinstance(data, dict):
        what = prefix or model.__name__
        return None, [Issue(f"expected a JSON object for {what}, got {type(data).__name__}", path, line, prefix)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SpecWarning)
        try:
            result = model.model_validate(data)
            issues: list[Issue] = []
        except ValidationError as exc:
            result, issues = None, issues_from_validation_error(exc, prefix)
        except SpecError as exc:
            result, issues = None, [i.located(prefix=prefix) for i in exc.issues]
    for warning in caught:
        if issubclass(warning.category, SpecWarning):
            issues.append(Issue(str(warning.message), field=prefix, severity="warning"))
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return result, [i.located(path, line) for i in issues]


def write_text_safely(path: Path, text: str, *, overwrite: bool = False) -> None:
    """Write atomically; refuse to replace an existing file unless asked to."""
    if path.exists() and not overwrite:
        raise SpecError("exists already; refusing to overwrite it (pass overwrite to replace it)", path=path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)


def write_atomically(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder, so that a reader never sees half a file."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as stream:
            stream.write(text)
        os.chmod(temporary, 0o666 & ~_umask())  # mkstemp makes owner-only files; use the usual mode
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def dump_jsonl(rows: Iterable[Any]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def append_jsonl(path: Path, row: Any) -> None:
    """Append one line and flush it to disk, so that a crash loses nothing already known."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as stream:
        stream.write(json.dumps(row, ensure_ascii=False) + "\n")
        stream.flush()
        os.fsync(stream.fileno())
