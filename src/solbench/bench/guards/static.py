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

import ast
import re
from posixpath import dirname, splitext
from typing import TYPE_CHECKING
from urllib.parse import unquote

from solbench.bench.guards._cpp import analyze_cpp
from solbench.bench.guards._model import RULES, Collector, Finding, text_blob
from solbench.bench.guards._python import _analyze_python, analyze_python

if TYPE_CHECKING:
    from solbench.data.solution import Solution

__all__ = ["Finding", "RULES", "analyze_solution", "analyze_python", "analyze_cpp"]

PYTHON_SUFFIXES = {".py", ".pyi"}
CPP_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".c++", ".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".inc",
                ".ipp", ".tcc", ".tpp"}
BINARY_SUFFIXES = {".so", ".o", ".a", ".obj", ".lib", ".cubin", ".fatbin", ".fatbin.c", ".bin", ".pyc", ".pyo", ".pyd",
                   ".dll", ".dylib", ".exe", ".elf", ".module_id"}


PRECISION_RULES = frozenset({"PY-PRECISION", "CPP-PRECISION"})


def analyze_solution(solution: Solution, policy: str = "strict") -> list[Finding]:
    """Findings of every source of the solution, sorted by (path, line). Under the relaxed precision
    policy a precision flag is no reason to refuse (any precision that meets the tolerance is
    allowed; the run-time precision checks judge the outputs): its findings are warnings."""
    own_paths = frozenset(source.path for source in solution.sources)
    import_roots = tuple(dict.fromkeys(["", dirname(solution.spec.entry_file)]))  # both are on sys.path while it is imported
    findings: list[Finding] = []
    for source in solution.sources:
        entry = solution.spec.entry_symbol if source.path == solution.spec.entry_file else ""
        findings.extend(_analyze_file(source.path, source.content, own_paths, import_roots, entry))
    if policy == "relaxed":  # any precision that meets the tolerance is allowed: no note on downcasts
        findings = [_allowed_when_relaxed(f) if f.rule in PRECISION_RULES else f for f in findings if f.rule != "PY-DOWNCAST"]
    return sorted(findings, key=lambda f: (f.path, f.line, f.rule))


def _allowed_when_relaxed(finding: Finding) -> Finding:
    return Finding(finding.rule, "warn", finding.path, finding.line, f"{finding.message} (allowed under the relaxed precision policy)")


def _analyze_file(path: str, content: str, own_paths: frozenset[str], import_roots: tuple[str, ...] = ("",), entry: str = "run") -> list[Finding]:
    suffix = splitext(path)[1].lower()
    if suffix in BINARY_SUFFIXES or path.lower().endswith(".fatbin.c"):
        out = Collector(path)
        out.add("SRC-BINARY", 1, f"a source file with the binary suffix {suffix!r}: only sources are accepted")
        return out.sorted()
    if suffix in PYTHON_SUFFIXES:
        return _analyze_python(content, path, own_paths, import_roots, entry)
    if suffix in CPP_SUFFIXES:
        return analyze_cpp(content, path)
    out = Collector(path)
    kind = text_blob(content)
    if kind:
        out.add("SRC-BINARY", 1, f"the file holds {kind}")
    for line, tag in yaml_python_tags(content):
        out.add("PY-DECODE", line, f"YAML tag {tag[:80]!r}: a YAML loader other than the safe one builds Python objects from it "
                                   "(calls, module attributes), which runs code")
    if _is_python_code(content):  # importlib's loaders take a module from a file of any name: Python is judged as Python
        out.extend(_analyze_python(content, path, own_paths, import_roots, ""))
    return out.sorted()


_CODE_NODES = (ast.Import, ast.ImportFrom, ast.Call, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _is_python_code(content: str) -> bool:
    """Whether a text of no Python suffix is a Python module that does something (imports, calls, definitions):
    data that happens to parse (numbers, a dict, JSON, `key: value` lines) is not."""
    if "import" not in content and "(" not in content:
        return False
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return any(isinstance(node, _CODE_NODES) for node in ast.walk(tree))


# --- YAML data files ----------------------------------------------------------------------------------
# Any data file can be handed to a YAML loader whatever its name, so every source that is neither Python nor C++ is
# read for the tags with which PyYAML's unsafe loaders build objects: python/object (also /apply and /new: calls),
# python/name and python/module (any module's attributes). Harmless value tags (python/tuple, python/str, ...) are
# not reported. The text is read line by line (tags percent-decoded: `!!%70ython/object` is `!!python/object`), and
# YAML's own parser resolves the tags of %TAG directives and named handles.

_PY_TAG = "tag:yaml.org,2002:python/"
_PY_TAG_KINDS = re.compile(r"(?:object|name|module|apply)(?=$|[/:\[\]{},\s])")
_TAG_TEXT = re.compile(r"(?:![\w-]*!|tag:yaml\.org,2002:)python/(?:object|name|module|apply)(?=$|[/:\[\]{},\s])[^\s,\[\]{}>]*")
_TAG_DIRECTIVE = re.compile(r"%TAG\s+(\S+)\s+(\S+)")
YAML_PARSE_LIMIT = 1_000_000  # characters; above it the line-by-line reading alone


def yaml_python_tags(text: str) -> list[tuple[int, str]]:
    """(1-based line, tag) of every YAML tag in `text` with which an unsafe loader builds Python objects or reaches
    modules, and of %TAG directives that map a handle into the python/ tags."""
    if "!" not in text:
        return []  # every explicit tag, and the handle of every %TAG directive, starts with "!"
    found: dict[int, str] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = unquote(raw) if "%" in raw else raw
        if "python/" in line:
            match = _TAG_TEXT.search(line)
            if match:
                found.setdefault(number, match.group())
                continue
        if "%TAG" in line:
            for directive in _TAG_DIRECTIVE.finditer(line):
                rest = directive.group(2)
                if rest.startswith("tag:yaml.org,2002:"):
                    tail = rest[len("tag:yaml.org,2002:"):]
                    if tail and ("python/".startswith(tail) or tail.startswith("python/")):
                        found.setdefault(number, f"%TAG {directive.group(1)} {rest}")
    if len(text) <= YAML_PARSE_LIMIT:
        for number, tag in _parsed_python_tags(text):
            found.setdefault(number, tag)
    return sorted(found.items())


def _parsed_python_tags(text: str) -> list[tuple[int, str]]:
    """The tags as YAML's parser resolves them (handles from %TAG directives, escapes); the events before a syntax error
    count, as a loader of several documents builds the ones before it."""
    import yaml  # a dependency of solbench; imported here so that the analysis of code alone does not load it

    tags: list[tuple[int, str]] = []
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            tag = getattr(event, "tag", None)
            if tag and tag.startswith(_PY_TAG) and _PY_TAG_KINDS.match(tag, len(_PY_TAG)):
                tags.append((text.count("\n", 0, event.start_mark.index) + 1, tag))  # lines as read above (YAML also breaks at U+2028)
    except Exception:  # noqa: BLE001 - not YAML (or not past this point): what was read so far is what a loader sees
        pass
    return tags
