"""Sources of a solution file given by path only: a source entry without `content` is read from the file of
that path beside the solution JSON, so a solution can be edited as ordinary files (`solbench new` writes it so)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from solbench.data.errors import Issue


def read_source_files(data: Any, path: Path) -> list[Issue]:
    """Fill in, in place, the `content` of each source that has none from the file beside `path`. Only plain
    relative paths inside the solution's folder are read (no '..', no absolute path, no link leading out)."""
    sources = data.get("sources") if isinstance(data, dict) else None
    if not isinstance(sources, list):
        return []
    folder = path.parent.resolve()
    issues: list[Issue] = []
    for index, source in enumerate(sources):
        if not isinstance(source, dict) or "content" in source or not isinstance(source.get("path"), str):
            continue
        relative = PurePosixPath(source["path"])
        field = f"sources.{index}.content"
        if relative.is_absolute() or ".." in relative.parts or "\\" in source["path"]:
            continue  # the model's own check names the path
        target = (folder / relative).resolve()
        if not target.is_relative_to(folder):
            issues.append(Issue(f"no content, and {source['path']!r} leads outside the solution's folder", path, field=field))
            continue
        try:
            source["content"] = target.read_text(encoding="utf-8")
        except FileNotFoundError:
            issues.append(Issue(f"no content, and there is no file {source['path']!r} beside the solution to read it from", path, field=field))
        except (OSError, UnicodeDecodeError) as exc:
            issues.append(Issue(f"no content, and {source['path']!r} cannot be read as UTF-8 text: {exc}", path, field=field))
    return issues
