"""Static analysis of solution sources: the first guard against reward hacking, before anything runs.

Python sources are read as an AST (names resolved through imports, aliases, getattr/importlib/
__import__ with constant strings); C, C++ and CUDA sources by token and regex rules on
comment-stripped text; C++ held in Python strings (load_inline) by the C++ rules too. Each finding
names a stable rule id (see RULES), a severity ("reject": the solution is refused as REWARD_HACK;
"warn": reported, not refused), the file and the 1-based line.

The rules are written so that legitimate solutions (Triton kernels, torch library calls,
torch.compile, CUDA C++ with its own PYBIND11_MODULE, load_inline, several kernels per call, side
streams joined before returning, lru_cache'd config lookups on shapes) get no reject finding.
Static analysis cannot prove a solution honest; it removes the cheap attacks and makes the others
visible. The evaluator's run-time checks stay in force.
"""

from __future__ import annotations

from posixpath import splitext
from typing import TYPE_CHECKING

from solbench.bench.guards._cpp import analyze_cpp
from solbench.bench.guards._model import RULES, Collector, Finding, text_blob
from solbench.bench.guards._python import _analyze_python, analyze_python

if TYPE_CHECKING:
    from solbench.spec.solution import Solution

__all__ = ["Finding", "RULES", "analyze_solution", "analyze_python", "analyze_cpp"]

PYTHON_SUFFIXES = {".py", ".pyi"}
CPP_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".c++", ".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".inc",
                ".ipp", ".tcc", ".tpp"}
BINARY_SUFFIXES = {".so", ".o", ".a", ".obj", ".lib", ".cubin", ".fatbin", ".fatbin.c", ".bin", ".pyc", ".pyo", ".pyd",
                   ".dll", ".dylib", ".exe", ".elf", ".module_id"}


def analyze_solution(solution: Solution) -> list[Finding]:
    """Findings of every source of the solution, sorted by (path, line)."""
    own_paths = frozenset(source.path for source in solution.sources)
    findings: list[Finding] = []
    for source in solution.sources:
        findings.extend(_analyze_file(source.path, source.content, own_paths))
    return sorted(findings, key=lambda f: (f.path, f.line, f.rule))


def _analyze_file(path: str, content: str, own_paths: frozenset[str]) -> list[Finding]:
    suffix = splitext(path)[1].lower()
    if suffix in BINARY_SUFFIXES or path.lower().endswith(".fatbin.c"):
        out = Collector(path)
        out.add("SRC-BINARY", 1, f"a source file with the binary suffix {suffix!r}: only sources are accepted")
        return out.sorted()
    if suffix in PYTHON_SUFFIXES:
        return _analyze_python(content, path, own_paths)
    if suffix in CPP_SUFFIXES:
        return analyze_cpp(content, path)
    kind = text_blob(content)
    if kind:
        out = Collector(path)
        out.add("SRC-BINARY", 1, f"the file holds {kind}")
        return out.sorted()
    return []
