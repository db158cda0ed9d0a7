"""Solution: someone's implementation of a definition, with its sources inline."""

from __future__ import annotations

import re
from enum import Enum
from pathlib import PurePosixPath
from typing import Any

from pydantic import Field, model_validator

from solbench.data.base import SpecModel
from solbench.data.definition import NAME_PATTERN
from solbench.data.errors import Issue, SpecError


class Language(str, Enum):
    pytorch = "pytorch"
    triton = "triton"
    cute_dsl = "cute_dsl"
    cutile = "cutile"
    cudnn_frontend = "cudnn_frontend"
    cuda_cpp = "cuda_cpp"
    cutlass = "cutlass"
    cudnn = "cudnn"
    cublas = "cublas"

    @property
    def family(self) -> str:
        return "python" if self in PYTHON_LANGUAGES else "cpp"


PYTHON_LANGUAGES = {Language.pytorch, Language.triton, Language.cute_dsl, Language.cutile, Language.cudnn_frontend}
ENTRY_EXTENSIONS = {"python": {".py"}, "cpp": {".cu", ".cpp", ".cc", ".cxx"}}
ENTRY_POINT = re.compile(r"^(?P<file>[^:]+)::(?P<symbol>[A-Za-z_][A-Za-z0-9_]*)$")


class SourceFile(SpecModel):
    path: str = Field(min_length=1)
    content: str


class SolutionSpec(SpecModel):
    languages: list[Language] | Language
    target_hardware: list[str] = Field(default_factory=list)
    entry_point: str
    dependencies: list[str] = Field(default_factory=list)
    destination_passing_style: bool = True
    compile_options: dict[str, Any] | None = None

    @property
    def language_list(self) -> list[Language]:
        return self.languages if isinstance(self.languages, list) else [self.languages]

    @property
    def family(self) -> str:
        return self.language_list[0].family

    @property
    def entry_file(self) -> str:
        return self.entry_point.split("::", 1)[0]

    @property
    def entry_symbol(self) -> str:
        return self.entry_point.split("::", 1)[1]


class Solution(SpecModel):
    name: str = Field(pattern=NAME_PATTERN)
    definition: str = Field(min_length=1)
    author: str = ""
    description: str = ""
    spec: SolutionSpec
    sources: list[SourceFile] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Solution:
        issues = self.semantic_issues()
        if issues:
            raise SpecError(issues)
        return self

    def semantic_issues(self) -> list[Issue]:
        issues: list[Issue] = []
        languages = self.spec.language_list
        if not languages:
            issues.append(Issue("at least one language is needed", field="spec.languages"))
        elif len({lang.family for lang in languages}) > 1:
            names = ", ".join(lang.value for lang in languages)
            issues.append(Issue(f"languages mix the Python and C++ families ({names}); a solution uses one", field="spec.languages"))
        seen: set[str] = set()
        for index, source in enumerate(self.sources):
            field = f"sources.{index}.path"
            path = PurePosixPath(source.path)
            if path.is_absolute() or ".." in path.parts or "\\" in source.path or str(path) != source.path or path.name in ("", "."):
                issues.append(Issue(f"{source.path!r} must be a plain relative path (no '..', no leading '/', normalised)", field=field))
            if source.path in seen:
                issues.append(Issue(f"{source.path!r} appears twice", field=field))
            seen.add(source.path)
        match = ENTRY_POINT.match(self.spec.entry_point)
        if match is None:
            issues.append(Issue(f"entry_point {self.spec.entry_point!r} must read 'file::symbol'", field="spec.entry_point"))
        else:
            entry_file = match["file"]
            if entry_file not in seen:
                issues.append(Issue(f"entry file {entry_file!r} is not among the sources ({', '.join(sorted(seen))})", field="spec.entry_point"))
            if languages and len({lang.family for lang in languages}) == 1:
                allowed = ENTRY_EXTENSIONS[languages[0].family]
                if PurePosixPath(entry_file).suffix not in allowed:
                    issues.append(Issue(f"a {languages[0].family} solution's entry file must end in {', '.join(sorted(allowed))}, got {entry_file!r}", field="spec.entry_point"))
        return issues

    def source(self, path: str) -> str:
        for source in self.sources:
            if source.path == path:
                return source.content
        raise KeyError(path)
