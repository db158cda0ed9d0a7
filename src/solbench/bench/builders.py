"""Builders: turn a Solution into a Python callable, inside the (untrusted) worker process.

`build(solution, cache_root=..., device=...)` writes the solution's sources into
``cache_root / build_key(solution, device)`` and then

- Python family (pytorch, triton, cute_dsl, cutile, cudnn_frontend): imports the entry file as a
  module under a unique name (``importlib.util.spec_from_file_location``) and takes the entry symbol.
  Sibling modules: for the duration of the import only, the entry file's folder and the build folder
  are put in front of ``sys.path``, and any module already in ``sys.modules`` under one of the
  solution's own top-level names (``helpers`` for ``helpers.py``, ``pkg`` for ``pkg/x.py``) is hidden.
  Afterwards the solution's own modules are taken out of ``sys.modules`` again and the hidden ones
  are put back, so two solutions that both ship a ``helpers.py`` never see each other's. The
  entry module stays registered under its unique name. Consequence: a solution must import its own
  modules at import time (module level); an ``import helpers`` that runs only later, inside a call,
  no longer finds the build folder on ``sys.path``.
- C++ family (cuda_cpp, cutlass, cudnn, cublas): compiles with ``torch.utils.cpp_extension.load``
  (ninja) in the build folder. Sources that define ``PYBIND11_MODULE`` are built as they are (their
  module name must be ``TORCH_EXTENSION_NAME``); otherwise a binding file is generated from the entry
  symbol's declaration, found in the (comment-stripped) sources: the return type, name, parameter
  list and enclosing namespaces / ``extern "C"`` blocks are copied into a ``.cpp`` that includes
  ``<torch/extension.h>`` and ``m.def``-s the symbol. Types must therefore come from
  ``torch/extension.h`` (``torch::Tensor``, ``at::Tensor``, ``int64_t``, ``double``, ``std::vector``,
  ``c10::optional`` ...); a function that is ``static`` or in an anonymous namespace cannot be bound.

A finished build is cached: a marker file is written into the build folder after the first
successful load, and a later build with the same key loads what is there (``cached=True``) without
compiling. Builds of one key are serialised by an ``flock`` on ``cache_root/<key>/lock``; a build
folder without the marker (a failed or killed build) is wiped and redone. Failed builds are never
marked, so they are never reused. The compile timeout is the caller's (it kills the worker).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import importlib.util
import itertools
import json
import os
import re
import shlex
import shutil
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterator

from solbench.data.solution import Solution

__all__ = ["BuildError", "Built", "build", "build_key", "target_arch", "MESSAGE_LIMIT"]

MESSAGE_LIMIT = 20_000
BUILDER_VERSION = 2  # bump when a change here makes old cached builds wrong
MARKER = ".solbench_build.json"
CPP_COMPILED = {".cu", ".cpp", ".cc", ".cxx"}
CUDA_SUFFIXES = {".cu"}

_IMPORT_LOCK = threading.RLock()
_COUNTER = itertools.count()


class BuildError(Exception):
    """A solution that cannot be turned into a callable; the message is the compiler's / importer's (bounded)."""

    def __init__(self, message: str):
        super().__init__(_bounded(message))

    @property
    def message(self) -> str:
        return str(self.args[0])


@dataclass
class Built:
    function: Callable[..., Any]
    build_dir: Path
    cached: bool  # True if a previous identical build was reused
    log: str  # build output (bounded)


# --- key and architecture ---------------------------------------------------------------------------


def build_key(solution: Solution, device: str) -> str:
    """sha256 over sources, entry point, languages, compile_options, torch version and target arch."""
    import torch

    spec = solution.spec
    payload = {
        "builder": BUILDER_VERSION,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "torch": torch.__version__,
        "arch": target_arch(device, spec.compile_options),
        "languages": [language.value for language in spec.language_list],
        "entry_point": spec.entry_point,
        "compile_options": spec.compile_options,
        "sources": [[source.path, source.content] for source in solution.sources],
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def target_arch(device: str, compile_options: dict | None) -> str | None:
    """The CUDA arch to build for ("9.0"; "9.0a" when the options ask for sm_90a); None off the GPU.

    The device's compute capability comes from torch.cuda.get_device_capability. An arch named in
    compile_options (key "arch", e.g. "sm_90a" / "90a" / "9.0a", or an sm_XX / compute_XX inside
    "cuda_cflags") adds its suffix ("a", "f") when it names the device's own capability, and wins
    outright when it names another one (the solution asked for it explicitly).
    """
    import torch

    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError):
        kind = str(device).split(":", 1)[0]
    if kind != "cuda" or not torch.cuda.is_available():
        return None
    try:
        major, minor = torch.cuda.get_device_capability(device)
    except (RuntimeError, AssertionError, ValueError):
        return None
    own = f"{major}.{minor}"
    requested = _requested_arch(compile_options)
    if requested is None:
        return own
    number, suffix = requested
    return own + suffix if number == own else number + suffix


def _requested_arch(options: dict | None) -> tuple[str, str] | None:
    if not options:
        return None
    for key in ("arch", "cuda_arch", "target_arch"):
        value = options.get(key)
        if isinstance(value, str):
            parsed = _parse_arch(value.strip())
            if parsed:
                return parsed
    for flag in _flag_list(options.get("cuda_cflags")):
        found = re.search(r"(?:sm|compute)_(\d{2,3})([af]?)\b", flag)
        if found:
            digits = found[1]
            return f"{digits[:-1]}.{digits[-1]}", found[2]
    return None


def _parse_arch(text: str) -> tuple[str, str] | None:
    dotted = re.fullmatch(r"(?:sm_|compute_)?(\d{1,2})\.(\d)([af]?)", text)
    if dotted:
        return f"{dotted[1]}.{dotted[2]}", dotted[3]
    packed = re.fullmatch(r"(?:sm_|compute_)?(\d{2,3})([af]?)", text)
    if packed:
        digits = packed[1]
        return f"{digits[:-1]}.{digits[-1]}", packed[2]
    return None


# --- build ------------------------------------------------------------------------------------------


def key_folder(cache_root: Path, solution: Solution, device: str) -> Path:
    """Everything of one build key lives in cache_root / key: the build in `build/` and its lock. A
    sandboxed solution worker is given this folder, and no other part of the cache, to write."""
    return Path(cache_root).absolute() / build_key(solution, device)


def build(solution: Solution, *, cache_root: Path, device: str, verbose: bool = False) -> Built:
    """The solution's entry point as a callable, built (or reused) in cache_root / build_key / build."""
    key = build_key(solution, device)
    folder = Path(cache_root).absolute() / key
    build_dir = folder / "build"
    relative_paths = [_safe_relative(source.path) for source in solution.sources]
    if (build_dir / MARKER).is_file():
        return _load_cached(solution, key, build_dir, verbose)
    folder.mkdir(parents=True, exist_ok=True)
    with _key_lock(folder / "lock"):
        if (build_dir / MARKER).is_file():  # someone else finished it while we waited
            return _load_cached(solution, key, build_dir, verbose)
        if build_dir.exists():  # a failed or killed build: start again
            shutil.rmtree(build_dir)
        build_dir.mkdir()
        try:
            for source, relative in zip(solution.sources, relative_paths):
                target = build_dir / relative
                if not _inside(target, build_dir):
                    raise BuildError(f"source path {source.path!r} leaves the build directory")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(source.content, encoding="utf-8", newline="")
            started = time.perf_counter()
            if solution.spec.family == "python":
                function, info = _load_python(solution, key, build_dir)
                log = f"imported {solution.spec.entry_point} from {build_dir} in {time.perf_counter() - started:.2f} s"
            else:
                function, info, log = _build_cpp(solution, key, build_dir, device)
                log += f"\nbuilt and loaded in {time.perf_counter() - started:.1f} s"
            log = _bounded(log)
            _write_marker(build_dir, {"key": key, "entry_point": solution.spec.entry_point, "log": log, **info})
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise
    if verbose:
        print(log, file=sys.stderr)
    return Built(function=function, build_dir=build_dir, cached=False, log=log)


def _load_cached(solution: Solution, key: str, build_dir: Path, verbose: bool) -> Built:
    try:
        marker = json.loads((build_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BuildError(f"cached build {build_dir} has an unreadable marker: {exc}") from None
    if solution.spec.family == "python":
        function, _ = _load_python(solution, key, build_dir)
    else:
        module = _import_extension(str(marker["module"]), build_dir / str(marker["library"]))
        function = _entry_symbol(module, solution.spec.entry_symbol, solution.spec.entry_file)
    log = _bounded(f"reused cached build {build_dir}\n{marker.get('log', '')}")
    if verbose:
        print(log, file=sys.stderr)
    return Built(function=function, build_dir=build_dir, cached=True, log=log)


@contextlib.contextmanager
def _key_lock(path: Path) -> Iterator[None]:
    """An exclusive flock held for the build of one key (released by the kernel if the process dies)."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no cross-process lock; builds of one key may race
        yield
        return
    handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(handle, fcntl.LOCK_UN)
        os.close(handle)


def _write_marker(build_dir: Path, content: dict[str, Any]) -> None:
    temporary = build_dir / f"{MARKER}.{os.getpid()}.tmp"
    temporary.write_text(json.dumps(content, indent=1), encoding="utf-8")
    os.replace(temporary, build_dir / MARKER)


def _safe_relative(path: str) -> PurePosixPath:
    pure = PurePosixPath(path)
    if not path or "\\" in path or pure.is_absolute() or ".." in pure.parts or str(pure) in ("", "."):
        raise BuildError(f"source path {path!r} must be a plain relative path (no '..', no leading '/')")
    if pure.parts[0] == MARKER or pure.name.startswith(MARKER):
        raise BuildError(f"source path {path!r} is reserved by the builder")
    return pure


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


# --- Python family ----------------------------------------------------------------------------------


def _load_python(solution: Solution, key: str, build_dir: Path) -> tuple[Callable[..., Any], dict[str, Any]]:
    spec = solution.spec
    entry = build_dir / spec.entry_file
    module_name = f"solbench_solution_{key[:16]}_{next(_COUNTER)}"
    own_names = _top_level_modules(source.path for source in solution.sources)
    build_root = build_dir.resolve()
    with _IMPORT_LOCK:
        hidden = {name: sys.modules.pop(name) for name in list(sys.modules) if name.split(".", 1)[0] in own_names}
        inserted = [str(path) for path in dict.fromkeys([entry.parent, build_dir])]
        sys.path[:0] = inserted
        before = set(sys.modules)
        importlib.invalidate_caches()
        try:
            module_spec = importlib.util.spec_from_file_location(module_name, entry)
            if module_spec is None or module_spec.loader is None:
                raise BuildError(f"cannot import {spec.entry_file!r} as a Python module")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            try:
                module_spec.loader.exec_module(module)
            except BaseException as exc:
                sys.modules.pop(module_name, None)
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise BuildError(f"importing {spec.entry_file} failed:\n{_format_exception(exc)}") from None
        finally:
            for path in inserted:
                with contextlib.suppress(ValueError):
                    sys.path.remove(path)
            for name in set(sys.modules) - before:
                if name != module_name and (name.split(".", 1)[0] in own_names or _file_under(sys.modules.get(name), build_root)):
                    sys.modules.pop(name, None)
            sys.modules.update(hidden)
    return _entry_symbol(module, spec.entry_symbol, spec.entry_file), {"module": module_name}


def _top_level_modules(paths: Iterator[str] | Any) -> set[str]:
    names = set()
    for path in paths:
        parts = PurePosixPath(path).parts
        if len(parts) > 1:
            names.add(parts[0])
        elif parts[0].endswith(".py"):
            names.add(parts[0][:-3])
    return {name for name in names if name.isidentifier()}


def _file_under(module: Any, root: Path) -> bool:
    file = getattr(module, "__file__", None)
    if not file:
        return False
    try:
        Path(file).resolve().relative_to(root)
    except (ValueError, OSError):
        return False
    return True


def _entry_symbol(module: Any, symbol: str, entry_file: str) -> Callable[..., Any]:
    if not hasattr(module, symbol):
        public = sorted(name for name in dir(module) if not name.startswith("_"))
        shown = ", ".join(public[:30]) + (" ..." if len(public) > 30 else "")
        raise BuildError(f"entry symbol {symbol!r} was not found in {entry_file} (it defines: {shown or 'nothing public'})")
    function = getattr(module, symbol)
    if not callable(function):
        raise BuildError(f"entry symbol {symbol!r} in {entry_file} is not callable (it is a {type(function).__name__})")
    return function


def _format_exception(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    # Drop the frames of this module and of importlib: the solution's own frames are what matter.
    kept = [line for line in lines if not (line.lstrip().startswith("File ") and ("importlib._bootstrap" in line or __file__ in line))]
    text = "".join(kept)
    return text[-MESSAGE_LIMIT:]


# --- C++ family -------------------------------------------------------------------------------------


def _build_cpp(solution: Solution, key: str, build_dir: Path, device: str) -> tuple[Callable[..., Any], dict[str, Any], str]:
    import torch

    spec = solution.spec
    options = spec.compile_options or {}
    module_name = f"solbench_ext_{key[:16]}_{os.getpid()}_{next(_COUNTER)}"
    entry = spec.entry_file
    compiled = [source.path for source in solution.sources if PurePosixPath(source.path).suffix in CPP_COMPILED]
    compiled.sort(key=lambda path: path != entry)  # the entry file first, the rest in their order
    cuda_sources = [path for path in compiled if PurePosixPath(path).suffix in CUDA_SUFFIXES]
    if cuda_sources and torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
        raise BuildError(
            f"CUDA is not available: this PyTorch ({torch.__version__}) was built without CUDA, "
            f"so the CUDA sources ({', '.join(cuda_sources)}) cannot be compiled"
        )
    log_lines = [f"extension {module_name}: compiling {', '.join(compiled)}"]
    stripped = {source.path: _strip_comments(source.content) for source in solution.sources}
    if not any(re.search(r"\bPYBIND11_MODULE\s*\(", text) for text in stripped.values()):
        binding_name = f"solbench_binding_{key[:12]}.cpp"
        if binding_name in stripped:
            raise BuildError(f"source path {binding_name!r} is reserved by the builder")
        binding, included = _generate_binding(solution, stripped, set(compiled) - set(cuda_sources))
        (build_dir / binding_name).write_text(binding, encoding="utf-8")
        compiled = [path for path in compiled if path != included] + [binding_name]
        log_lines.append(f"no PYBIND11_MODULE in the sources: generated {binding_name}:\n{binding}")
    else:
        log_lines.append("the sources define PYBIND11_MODULE: built as they are")
    cflags = ["-O3", *_flag_list(options.get("cflags"))]
    cuda_cflags = ["-O3", *_flag_list(options.get("cuda_cflags"))]
    ldflags = _flag_list(options.get("ld_flags", options.get("ldflags")))
    include_paths = [str(build_dir)]
    for path in _flag_list(options.get("include_paths")):
        include_paths.append(path if os.path.isabs(path) else str(build_dir / path))
    arch = target_arch(device, spec.compile_options)
    log_lines.append(f"cflags={cflags} cuda_cflags={cuda_cflags} ldflags={ldflags} include_paths={include_paths} arch={arch}")
    from torch.utils import cpp_extension

    try:
        with _environment("TORCH_CUDA_ARCH_LIST", arch):
            module = cpp_extension.load(
                name=module_name,
                sources=[str(build_dir / path) for path in compiled],
                extra_cflags=cflags,
                extra_cuda_cflags=cuda_cflags,
                extra_ldflags=ldflags,
                extra_include_paths=include_paths,
                build_directory=str(build_dir),
                verbose=False,  # verbose=True sends the compiler's output to fd 1 and keeps it out of the error
            )
    except BuildError:
        raise
    except Exception as exc:  # noqa: BLE001 - compiler, linker, loader: all are compile errors here
        raise BuildError(_compiler_message(exc)) from None
    sys.modules[module_name] = module
    library = Path(module.__file__).name if getattr(module, "__file__", None) else f"{module_name}.so"
    function = _entry_symbol(module, spec.entry_symbol, entry)
    return function, {"module": module_name, "library": library}, "\n".join(log_lines)


def _import_extension(module_name: str, library: Path) -> Any:
    import torch  # noqa: F401 - the extension links against libtorch, which must be loaded first

    existing = sys.modules.get(module_name)
    if existing is not None and getattr(existing, "__file__", None) == str(library):
        return existing
    try:
        loader = importlib.machinery.ExtensionFileLoader(module_name, str(library))
        module_spec = importlib.util.spec_from_file_location(module_name, library, loader=loader)
        assert module_spec is not None
        module = importlib.util.module_from_spec(module_spec)
        loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001
        raise BuildError(f"loading the cached extension {library} failed: {type(exc).__name__}: {exc}") from None
    sys.modules[module_name] = module
    return module


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    if value is None:
        yield
        return
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _flag_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return shlex.split(value)
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    raise BuildError(f"compile option {value!r} must be a string or a list of strings")


def _bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    return text if len(text) <= limit else "...\n" + text[-(limit - 4):]


def _compiler_message(exc: Exception, limit: int = MESSAGE_LIMIT) -> str:
    """The compiler's / linker's / loader's message: its error lines first, then the whole output (bounded).

    GCC's typographic quotes (a UTF-8 locale's ‘x’) are turned into plain ones ('x').
    """
    text = f"{type(exc).__name__}: {exc}".replace("\u2018", "'").replace("\u2019", "'")
    if "module export function" in text or "PyInit_" in text:
        text += "\n(hint: PYBIND11_MODULE must name the module TORCH_EXTENSION_NAME)"
    errors = [line[:1000] for line in text.splitlines() if re.search(r"\b(?:error|undefined reference|undefined symbol)\b", line, re.IGNORECASE)]
    errors = [line for line in errors if not line.startswith(("RuntimeError: Error building extension", "FAILED:"))][:20]
    head = ("build failed:\n" + "\n".join(errors) + "\n\nfull output:\n") if errors else ""
    if len(head) + len(text) <= limit:
        return head + text
    return head + "...\n" + text[-(limit - len(head) - 4):]


# --- binding generation -----------------------------------------------------------------------------


def _strip_comments(text: str) -> str:
    """The text with comments replaced by spaces (newlines kept), so that offsets do not move."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            out[i:j] = " " * (j - i)
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out[i:j] = [ch if ch == "\n" else " " for ch in text[i:j]]
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return "".join(out)


def _mask(text: str, strings: bool = True) -> str:
    """Comment-stripped text with preprocessor lines (and, if asked, string/char literal contents) blanked.

    A blanked preprocessor line starts with ';' so that it ends a declaration scanned backwards.
    """
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if at_line_start and c == "#":
            j = i
            while True:  # the directive runs to an end of line that is not escaped
                k = text.find("\n", j)
                if k < 0:
                    k = n
                    break
                if text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out[i:k] = [ch if ch == "\n" else " " for ch in text[i:k]]
            out[i] = ";"
            i = k
            continue
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if strings:
                for k in range(i + 1, min(j, n)):
                    out[k] = " "
            i = j + 1
            continue
        i += 1
    return "".join(out)


_STRIP_SPECIFIERS = re.compile(r"\b(?:static|inline|__inline__|__forceinline__|__host__|__noinline__|constexpr|TORCH_INLINE)\b\s*")
_BAD_PREFIX = re.compile(r"\b(?:return|else|do|case|throw|new|delete|co_return|sizeof|typedef|using|goto|if|while|for|switch)\b|=|<<|\.|->")


@dataclass
class _Declaration:
    text: str
    namespaces: list[str]
    extern_c: bool
    path: str


def _generate_binding(solution: Solution, stripped: dict[str, str], host_compiled: set[str]) -> tuple[str, str | None]:
    """The binding's source, and the source it includes (None: it declares the entry symbol instead).

    Where the symbol is found in a C++ source compiled by the host compiler, the binding includes that
    source and is compiled in its place: one translation unit parses torch's headers (about 25 s of CPU
    each) where two did. Otherwise (a header, a CUDA source) it declares the symbol and links against it."""
    symbol = solution.spec.entry_symbol
    order = sorted(stripped, key=lambda path: path != solution.spec.entry_file)
    problems: list[str] = []
    for path in order:
        found = _find_declaration(stripped[path], symbol, path, problems)
        if found is not None:
            break
    else:
        detail = "; ".join(dict.fromkeys(problems))
        raise BuildError(
            f"the entry symbol {symbol!r} was not found: no function declaration or definition of {symbol!r} "
            f"in the sources ({', '.join(stripped)}), and they define no PYBIND11_MODULE to bind it"
            + (f" ({detail})" if detail else "")
        )
    qualified = "::".join([*found.namespaces, symbol])
    included = found.path if found.path in host_compiled and '"' not in found.path else None
    if included is not None:
        # first, as if compiled alone (its own macros come before torch's headers); not declared again, since a
        # definition's default arguments may not be declared twice
        header = f'#include "{included}"\n#include <torch/extension.h>'
    else:
        declaration = found.text
        if found.extern_c:
            declaration = f'extern "C" {{ {declaration} }}'
        for namespace in reversed(found.namespaces):
            declaration = f"namespace {namespace} {{\n{declaration}\n}}"
        header = f"#include <torch/extension.h>\n\n{declaration}"
    return (
        f"// Generated by solbench: binds {symbol} (declared in {found.path}) as a Python function.\n"
        f"{header}\n\n"
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {\n"
        f'  m.def("{symbol}", &{qualified}, "{symbol} (solbench-generated binding)");\n'
        "}\n"
    ), included


def _find_declaration(text: str, symbol: str, path: str, problems: list[str]) -> _Declaration | None:
    code = _mask(text, strings=False)
    masked = _mask(text)
    for match in re.finditer(rf"(?<![\w:.>~])\b{re.escape(symbol)}\s*\(", masked):
        open_at = match.end() - 1
        close_at = _matching_paren(masked, open_at)
        if close_at is None:
            continue
        # What follows the parameter list: qualifiers, a trailing return type, then '{' or ';'.
        rest = masked[close_at + 1:]
        tail = re.match(r"\s*((?:noexcept\b\s*|throw\s*\(\s*\)\s*)*(?:->\s*[^{;]+?)?)\s*([{;])", rest)
        if tail is None:
            continue
        start = max(masked.rfind(ch, 0, match.start()) for ch in ";{}") + 1
        prefix = code[start:match.start()].strip()
        if not prefix or _BAD_PREFIX.search(_mask(prefix)):
            continue  # a call or an expression, not a declaration
        if re.search(r"\btemplate\b", prefix):
            problems.append(f"{symbol} in {path} is a template")
            continue
        if re.search(r"\b__global__\b|\b__device__\b", prefix):
            problems.append(f"{symbol} in {path} is a CUDA kernel / device function, not a host function")
            continue
        if not re.fullmatch(r"[\w\s:<>,*&\[\]()\"]+", prefix) or re.fullmatch(r"[\w:]+\s*:", prefix):
            continue
        scope = _scope(code, masked, match.start())
        if scope is None:
            continue  # inside a function or class body
        namespaces, extern_c = scope
        if "" in namespaces:
            problems.append(f"{symbol} in {path} is in an anonymous namespace and cannot be bound from another file")
            continue
        if re.search(r"\bstatic\b", prefix):
            problems.append(f"{symbol} in {path} is static and cannot be bound from another file")
            continue
        prefix = _STRIP_SPECIFIERS.sub("", prefix).strip()
        if not prefix:
            continue
        params = code[open_at + 1:close_at]
        trailer = code[close_at + 1:close_at + 1 + tail.end(1)].strip()
        declaration = f"{prefix} {symbol}({' '.join(params.split())}){(' ' + ' '.join(trailer.split())) if trailer else ''};"
        return _Declaration(declaration, namespaces, extern_c, path)
    return None


def _matching_paren(text: str, open_at: int) -> int | None:
    depth = 0
    for index in range(open_at, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index
    return None


def _scope(text: str, masked: str, position: int) -> tuple[list[str], bool] | None:
    """The namespaces around position and whether it is in an extern "C" block; None inside any other braces."""
    stack: list[tuple[str, str]] = []  # (kind, name)
    previous_end = 0
    for index in range(position):
        ch = masked[index]
        if ch == "{":
            before = text[previous_end:index]
            named = re.search(r"\bnamespace\s+([\w:]*)\s*$", before)
            if named:
                stack.append(("namespace", named[1]))
            elif re.search(r'\bextern\s+"C(?:\+\+)?"\s*$', before):
                stack.append(("extern", ""))
            else:
                stack.append(("other", ""))
            previous_end = index + 1
        elif ch == "}":
            if stack:
                stack.pop()
            previous_end = index + 1
        elif ch == ";":
            previous_end = index + 1
    if any(kind == "other" for kind, _ in stack):
        return None
    namespaces: list[str] = []
    for kind, name in stack:
        if kind == "namespace":
            namespaces.extend(name.split("::") if name else [""])
    return namespaces, any(kind == "extern" for kind, _ in stack)
