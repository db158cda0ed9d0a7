"""Python rules, on the AST.

Names are resolved the way Python binds them: a first pass builds the scopes (module, functions,
lambdas, classes, comprehensions) and records every binding of every name (imports, assignments,
parameters, definitions); a name then resolves to the dotted name of what it was bound to
(``import torch as t`` -> ``t`` is ``torch``; ``from os import system as s`` -> ``s`` is
``os.system``; ``m = importlib.import_module("socket")`` -> ``m`` is ``socket``). Calls of
``getattr(x, "c")``, ``__import__("c")``, ``importlib.import_module("c")``, ``vars(x)["c"]`` and
``x.__dict__["c"]`` with constant (or constant-folded) names resolve too, and so do modules held in
containers (``[time][0]``, ``{"t": time}["t"]``), class attributes (``class H: m = time`` ->
``H.m``) and parameter defaults (``def f(m=time)``). Builtins resolve to ``builtins.<name>``
unless the solution binds the name itself. A name bound to several things resolves to the first
that resolves (so re-binding cannot hide an alias).

The second pass walks every node with the rules below. Each finding is reported once per (rule, line).
"""

from __future__ import annotations

import ast
import builtins
import posixpath
import re
import sys
from collections.abc import Iterable

from solbench.bench.guards._cpp import _analyze_cpp
from solbench.bench.guards._model import (
    Collector, Finding, SYSTEM_PATH, byte_sequence_kind, binary_kind, bytes_opaque, path_escape_reason, scrambled_kind, text_blob,
    text_opaque,
)

# --- what is banned, by dotted name -------------------------------------------------------------------
# A dotted name matches an entry when it equals it or starts with it followed by a dot.

_BANS: dict[str, tuple[str, str]] = {}


def _ban(rule: str, why: str, *names: str) -> None:
    for name in names:
        _BANS[name] = (rule, why)


_ban("PY-NET", "network access", "socket", "urllib", "urllib2", "urllib3", "http", "requests", "httpx", "aiohttp", "ftplib",
     "smtplib", "ssl", "websockets", "websocket", "poplib", "imaplib", "nntplib", "telnetlib", "xmlrpc", "socketserver",
     "asyncio.open_connection", "asyncio.start_server", "asyncio.open_unix_connection", "asyncio.start_unix_server",
     "paramiko", "grpc", "zmq", "pycurl", "webbrowser", "smtpd", "asyncore", "torch.distributed", "torch.hub",
     "torch.utils.model_zoo", "huggingface_hub", "fsspec", "gcsfs", "s3fs", "boto3", "botocore", "pip", "ensurepip")
_ban("PY-PROC", "starts a process", "subprocess", "multiprocessing", "_posixsubprocess", "pty", "os.system", "os.popen",
     "os.fork", "os.forkpty", "os.posix_spawn", "os.posix_spawnp", "os.startfile", "os.register_at_fork",
     "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell", "pexpect", "sh", "plumbum", "_winapi")
_ban("PY-THREAD", "starts threads that can keep working after the call returns", "threading.Thread", "threading.Timer",
     "_thread", "concurrent.futures", "asyncio.to_thread", "threading._start_new_thread", "threading._start_joinable_thread")
_ban("PY-SIGNAL", "installs a signal handler, a timer or sends a signal", "signal.signal", "signal.alarm", "signal.setitimer",
     "signal.pthread_kill", "signal.raise_signal", "signal.siginterrupt", "signal.set_wakeup_fd", "signal.pthread_sigmask",
     "signal.sigwait", "signal.sigtimedwait", "os.kill", "os.killpg", "faulthandler.dump_traceback_later")
_ban("PY-EXIT", "ends the worker process or hooks its end", "atexit", "os._exit", "os.abort", "sys.exit",
     "builtins.exit", "builtins.quit")
_ban("PY-FFI", "foreign code", "ctypes", "_ctypes", "cffi", "_cffi_backend", "mmap", "numpy.ctypeslib", "torch.ops.load_library",
     "torch.classes.load_library", "importlib.machinery.ExtensionFileLoader", "_imp.create_dynamic", "_imp.load_dynamic")
_ban("PY-DECODE", "decodes or unpacks embedded data", "base64", "binascii", "zlib", "bz2", "lzma", "gzip", "zipfile", "tarfile",
     "zipimport", "marshal", "pickle", "_pickle", "cPickle", "pickletools", "shelve", "dill", "cloudpickle", "codecs", "_codecs",
     "builtins.bytes.fromhex", "builtins.bytearray.fromhex", "quopri", "uu", "joblib")
# YAML loaders that build Python objects from python/* tags (python/object/apply calls anything, python/name and
# python/module reach any module): deserialisation that runs code, like pickle. yaml.load/load_all are judged on their
# Loader (_YAML_SAFE_LOADERS); the safe ones (safe_load, SafeLoader, CSafeLoader, BaseLoader) stay allowed.
_ban("PY-DECODE", "a YAML loader that builds Python objects from python/* tags, which runs code",
     "yaml.unsafe_load", "yaml.unsafe_load_all", "yaml.full_load", "yaml.full_load_all", "yaml.Loader", "yaml.UnsafeLoader",
     "yaml.FullLoader", "yaml.CLoader", "yaml.CUnsafeLoader", "yaml.CFullLoader", "yaml.loader.Loader", "yaml.loader.UnsafeLoader",
     "yaml.loader.FullLoader", "yaml.cyaml.CLoader", "yaml.cyaml.CUnsafeLoader", "yaml.cyaml.CFullLoader",
     "yaml.constructor.Constructor", "yaml.constructor.UnsafeConstructor", "yaml.constructor.FullConstructor")
# The same in ruamel.yaml (its YAML(typ="unsafe"/"full") is judged where it is called), and jsonpickle, whose decode
# builds any object named in the data.
_ban("PY-DECODE", "a deserialiser that builds arbitrary Python objects from the data, which runs code", "jsonpickle",
     "ruamel.yaml.load", "ruamel.yaml.load_all", "ruamel.yaml.unsafe_load", "ruamel.yaml.Loader", "ruamel.yaml.UnsafeLoader",
     "ruamel.yaml.loader.Loader", "ruamel.yaml.loader.UnsafeLoader", "ruamel.yaml.constructor.Constructor",
     "ruamel.yaml.constructor.UnsafeConstructor", "ruamel.yaml.constructor.FullConstructor")
_ban("PY-EXEC", "runs code built at run time", "builtins.exec", "builtins.eval", "builtins.compile", "runpy", "code.interact",
     "code.InteractiveInterpreter", "code.InteractiveConsole", "codeop")
_ban("PY-PATCH", "patches code it does not own", "unittest.mock")
_ban("PY-HARNESS", "the harness is off limits to a solution", "solbench", "__main__")
_ban("PY-SYSMODULES", "touches the import system", "sys.modules", "sys.meta_path", "sys.path_hooks", "sys.path_importer_cache",
     "importlib.reload", "importlib._bootstrap", "importlib._bootstrap_external")
_ban("PY-INTROSPECT", "inspects or hooks the interpreter (frames, tracing, the objects of the harness)",
     "sys.settrace", "sys.setprofile", "sys._getframe", "sys._getframemodulename", "sys._current_frames", "sys._current_exceptions",
     "sys.addaudithook", "sys.monitoring", "sys.call_tracing", "sys.remote_exec", "threading.settrace", "threading.setprofile",
     "threading.settrace_all_threads", "threading.setprofile_all_threads", "inspect.stack", "inspect.currentframe",
     "inspect.getouterframes", "inspect.getinnerframes", "inspect.trace", "gc.get_objects", "gc.get_referrers",
     "gc.get_referents", "gc.callbacks", "traceback.walk_stack", "traceback.walk_tb", "traceback.extract_stack",
     "traceback.StackSummary", "_testcapi", "_xxsubinterpreters")
_ban("PY-PROFILER", "controls the profiler the timing relies on", "cupti", "cupti_python", "torch.profiler.profile",
     "torch.profiler._KinetoProfile", "torch.autograd.profiler.profile", "torch.autograd.profiler.emit_itt",
     "torch.autograd.profiler._disable_profiler", "torch.autograd.profiler._enable_profiler", "torch._C._autograd",
     "torch._C._profiler", "torch.cuda.profiler", "torch.cuda.cudart")
_ban("PY-DEVICE", "controls the GPU through NVML", "pynvml", "nvidia_smi", "py3nvml", "pynvml_utils")
_ban("PY-DISPATCH", "intercepts every torch call", "torch.overrides.TorchFunctionMode", "torch.utils._python_dispatch",
     "torch._C._set_torch_function_mode", "torch._C._push_on_torch_dispatch_stack", "torch._C._push_on_torch_function_stack")
_ban("PY-ENV", "writes the process environment", "os.putenv", "os.unsetenv")
_ban("PY-ENV-READ", "reads the process environment", "os.getenv", "os.getenvb", "os.environb")
_ban("PY-FILE-WRITE", "writes, moves or deletes files", "shutil", "tempfile", "sqlite3", "dbm", "torch.save",
     "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "os.remove", "os.unlink", "os.rename", "os.renames",
     "os.replace", "os.makedirs", "os.mkdir", "os.rmdir", "os.removedirs", "os.symlink", "os.link", "os.chmod", "os.lchmod",
     "os.chown", "os.lchown", "os.truncate", "os.ftruncate", "os.utime", "os.mkfifo", "os.mknod", "os.chdir", "os.fchdir",
     "os.chroot", "os.write", "os.dup2", "os.fchmod", "os.fchown", "os.pwrite", "os.writev", "os.sendfile", "os.copy_file_range",
     "safetensors.torch.save_file", "safetensors.torch.save", "logging.FileHandler", "logging.handlers")

_ALLOWED = {"multiprocessing.cpu_count", "http.HTTPStatus"}
_OS_PROCESS = re.compile(r"(?:exec|spawn)\w*|fork\w*|popen\w*|system")
_LOADER_NAMES = {"cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx", "cuModuleLoadFatBinary", "cuLibraryLoadData",
                 "cuLibraryLoadFromFile", "cudaLibraryLoadData", "cudaLibraryLoadFromFile", "load_binary", "cuLinkAddData",
                 "cuLinkAddFile"}
_L2_NAME = re.compile(r"(?i)accesspolicywindow|persistingl2|persisting_l2|streamsetattribute|access_?property_?persisting|"
                      r"resetpersisting")
_MODULE_ALIASES = {"posix": "os", "nt": "os", "_io": "io", "_socket": "socket", "_ssl": "ssl", "_signal": "signal",
                   "__builtin__": "builtins", "_posixshmem": "mmap", "_pickle": "pickle", "cPickle": "pickle", "_thread": "_thread",
                   "_multiprocessing": "multiprocessing", "_operator": "operator", "_functools": "functools"}
# attribute loads that reach frames, globals or code of others, whatever the object
_FRAME_ATTRS = {"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame", "gi_frame", "cr_frame",
                "ag_frame", "__globals__", "__subclasses__", "__closure__", "__code__", "__builtins__", "gi_code", "cr_code"}
# attribute stores that change what an object is or how a function behaves, whatever the object
_IDENTITY_ATTRS = {"__class__", "__code__", "__globals__", "__bases__", "__defaults__", "__kwdefaults__", "__dict__", "__call__"}
# modules where a computed getattr is as good as an import of anything
_SENSITIVE = {"os", "sys", "builtins", "importlib", "ctypes", "subprocess", "socket", "gc", "inspect", "signal", "io", "shutil",
              "threading", "multiprocessing", "marshal", "pickle", "types", "operator", "_thread", "torch._C", "pathlib",
              "atexit", "codecs", "base64", "zlib", "runpy", "_imp", "traceback", "mmap", "cffi", "functools", "solbench", "yaml"}
# global configuration objects whose attributes a solution may set
_CONFIG_OK = ("torch.backends.", "torch._dynamo.config.", "torch._inductor.config.", "torch._functorch.config.",
              "torch._export.config.", "torch.fx.experimental._config.", "torch._logging.")
_PRECISION_FLAGS = {
    "torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_fp16_accumulation",
}
_PRECISION_CALL = re.compile(r"^torch\._C\._set_\w*(?:tf32|precision|reduced|accumulation)\w*$")
_ENV_WRITE_METHODS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__", "__ior__", "__init__"}
_MUTATORS = {"update", "setdefault", "pop", "popitem", "clear", "__setitem__", "__delitem__", "append", "extend", "insert",
             "remove", "add", "discard", "__setattr__", "__delattr__", "__ior__", "__iadd__"}
_TENSOR_ATTRS = {"data_ptr", "contiguous", "is_contiguous", "is_cuda", "device", "dtype", "numel", "stride", "view", "reshape",
                 "cuda", "float", "half", "bfloat16", "to", "clone", "copy_", "zero_", "fill_", "element_size", "storage_offset",
                 "untyped_storage", "unsqueeze", "squeeze", "transpose", "permute", "T", "mT", "matmul", "nelement",
                 "is_floating_point", "requires_grad", "grad", "shape", "size", "ndim", "dim", "item", "tolist", "detach",
                 "expand", "flatten", "sum", "mean", "narrow", "new_empty", "new_zeros"}
_IDENTITY_FUNCS = {"builtins.id", "builtins.hash"}
_IDENTITY_METHODS = {"data_ptr", "untyped_storage", "storage", "_cdata", "_typed_storage"}
_CPP_HINT = re.compile(r"#\s*include\b|__global__|__device__|PYBIND11_MODULE|\btorch::|\bat::Tensor|\bextern\s+\"C\"|"
                       r"\basm\s+(?:volatile\s*)?\(|\bcuda[A-Z]\w*\s*\(|\bcu[A-Z]\w+\s*\(|\bstd::\w+")
_BUILTIN_NAMES = frozenset(dir(builtins)) | {"__import__", "__build_class__"}
_CONTAINER_CALLS = {"builtins.dict", "builtins.list", "builtins.set", "collections.OrderedDict", "collections.defaultdict",
                    "collections.deque", "collections.Counter", "weakref.WeakKeyDictionary", "weakref.WeakValueDictionary",
                    "weakref.WeakSet"}
_WEAK_CALLS = {"weakref.WeakKeyDictionary", "weakref.WeakValueDictionary", "weakref.WeakSet"}
_STDLIB = frozenset(sys.stdlib_module_names) | {"builtins", "__main__"}
_KNOWN_LIBRARIES = {"torch", "triton", "numpy", "cutlass", "cuda", "cupy", "jax", "jaxlib", "flashinfer", "einops", "tilelang",
                    "cudnn", "nvmath", "pycuda", "numba", "safetensors", "transformers", "apex", "xformers", "flash_attn",
                    "deep_gemm", "vllm", "sgl_kernel", "liger_kernel", "quack", "solbench", "cuda_python", "nvidia", "cupti",
                    "pynvml", "scipy", "tvm", "thunderkittens", "helion", "torchao"}
_SCOPED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
_PATH_CONSTANTS = {"os.sep": "/", "os.path.sep": "/", "os.altsep": "/", "os.path.altsep": "/", "os.curdir": ".",
                   "os.path.curdir": ".", "os.pardir": "..", "os.path.pardir": "..", "os.extsep": "."}
# builtins and operator functions that write attributes or items: passed as values (functools.partial, map), they patch
_WRITERS = {"builtins.setattr", "builtins.delattr", "builtins.object.__setattr__", "builtins.object.__delattr__",
            "builtins.type.__setattr__", "operator.setitem", "operator.delitem", "operator.__setitem__", "operator.__delitem__"}
_CACHE_DECORATORS = {"functools.lru_cache", "functools.cache"}
_DYNAMIC_IMPORTS = {"builtins.__import__", "importlib.import_module", "importlib.__import__", "importlib.util.find_spec"}
_YAML_LOADS = {"yaml.load", "yaml.load_all"}
# Loaders of yaml.load that build only plain data (no python/* tags)
_YAML_SAFE_LOADERS = {"yaml.SafeLoader", "yaml.CSafeLoader", "yaml.BaseLoader", "yaml.CBaseLoader", "yaml.loader.SafeLoader",
                      "yaml.loader.BaseLoader", "yaml.cyaml.CSafeLoader", "yaml.cyaml.CBaseLoader"}
# names that `from m import *` is followed to although they are not banned (their calls are judged on their arguments)
_STAR_NAMES = _YAML_LOADS | _YAML_SAFE_LOADERS
# Libraries a solution's own file must never stand for (see _LIBRARY_NAMES, built at the end of this module from every
# table here): besides the ones the tables name, what torch, Triton and the harness import lazily.
_MORE_LIBRARIES = {"yaml", "cupti", "pynvml", "ctypes", "cffi", "requests", "sympy", "mpmath", "networkx", "jinja2",
                   "markupsafe", "filelock", "fsspec", "typing_extensions", "packaging", "setuptools", "pkg_resources",
                   "distutils", "_distutils_hack", "importlib_metadata", "psutil", "tqdm", "ninja", "pybind11", "pydantic",
                   "pydantic_core", "annotated_types", "typer", "click", "rich", "pygments", "google", "six", "pytest",
                   "_pytest", "pluggy", "tensorrt", "onnx", "onnxruntime", "cuda_bindings", "cuda_core", "nvtx",
                   "opt_einsum", "functorch", "torchgen", "torchvision", "torchaudio", "triton_kernels"}


def banned_module(name: str) -> str | None:
    """Why importing the dotted module `name` is banned (also used for C++'s py::module_::import), or None."""
    hit = _match(_normalise(name))
    return f"{hit[1]} ({hit[0]})" if hit and hit[0] != "PY-ENV-READ" else None


def _normalise(dotted: str) -> str:
    head, dot, rest = dotted.partition(".")
    head = _MODULE_ALIASES.get(head, head)
    dotted = head + dot + rest
    if dotted == "io.open" or dotted.startswith("io.open."):
        dotted = "builtins.open" + dotted[len("io.open"):]
    return dotted


def _match(dotted: str) -> tuple[str, str] | None:
    parts = dotted.split(".")
    prefixes = [".".join(parts[: index + 1]) for index in range(len(parts))]
    if any(prefix in _ALLOWED for prefix in prefixes):
        return None
    for index, (part, prefix) in enumerate(zip(parts, prefixes)):
        hit = _BANS.get(prefix)
        if hit:
            return hit
        if index >= 1 and part in _LOADER_NAMES:
            return ("PY-FFI", f"{part} loads a foreign GPU binary")
        if index >= 1 and _L2_NAME.search(part):
            return ("PY-L2", f"{part}: L2 persistence keeps data in L2 across the harness's flush")
    if len(parts) >= 2 and parts[0] == "os" and _OS_PROCESS.fullmatch(parts[1]):
        return ("PY-PROC", "starts or manages a process")
    return None


# --- scopes -------------------------------------------------------------------------------------------

_LOCAL = ("local",)


class _Scope:
    __slots__ = ("kind", "parent", "bindings", "globals", "nonlocals", "stars", "node")

    def __init__(self, kind: str, parent: _Scope | None, node: ast.AST):
        self.kind = kind
        self.parent = parent
        self.node = node
        self.bindings: dict[str, list[tuple]] = {}
        self.globals: set[str] = set()
        self.nonlocals: set[str] = set()
        self.stars: list[str] = []

    def bind(self, name: str, binding: tuple) -> None:
        self.bindings.setdefault(name, []).append(binding)


class _Unanalyzable(Exception):
    pass


def analyze_python(source: str, path: str) -> list[Finding]:
    """Findings of one Python source (rules PY-*, and CPP-* for C++ held in its strings)."""
    return _analyze_python(source, path, frozenset())


MAX_SOURCE_CHARS = 2_000_000


def _analyze_python(source: str, path: str, own_paths: frozenset[str], import_roots: tuple[str, ...] = ("",)) -> list[Finding]:
    """import_roots: the solution's folders that are on sys.path while it is imported (its root, and the entry
    point's folder when that is a subfolder), relative to its root."""
    findings = _analyze_source(source, path, own_paths)
    shadowed = next((found for root in import_roots if (found := _shadowed_library(posixpath.relpath(path, root or "."))) is not None), None)
    if shadowed is None:
        return findings
    module, library = shadowed
    out = Collector(path)
    out.extend(findings)
    out.add("PY-SHADOW", 1, f"the solution's file is importable as {module!r}, named like the library module {library!r}: while "
                            f"the solution is imported it can stand in for {library!r} in any module imported then, and elsewhere "
                            f"`import {library}` is the library (its calls are judged as the library's); rename the file")
    return out.sorted()


def _shadowed_library(path: str) -> tuple[str, str] | None:
    """(module name, library) when the Python file `path` (relative to the solution's folder, which is on sys.path while
    the solution is imported) is importable under the top-level name of a library module (os.py, ctypes/__init__.py,
    urllib/request.py, torch/x.py), else None."""
    if not path.endswith(".py"):
        return None
    parts = path[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or parts[0] not in _LIBRARY_NAMES:
        return None
    return ".".join(parts), parts[0]


def _analyze_source(source: str, path: str, own_paths: frozenset[str]) -> list[Finding]:
    if len(source) > MAX_SOURCE_CHARS:
        out = Collector(path)
        out.add("ANALYZER-LIMIT", 1, f"{len(source)} characters: too large to analyse (limit {MAX_SOURCE_CHARS})")
        return out.sorted()
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return []  # the build reports it
    except (RecursionError, MemoryError):
        out = Collector(path)
        out.add("ANALYZER-LIMIT", 1, "the file is nested too deeply to parse")
        return out.sorted()
    try:
        return _Analyzer(tree, path, own_paths).run()
    except Exception as error:  # fail closed: a file the analyser cannot read is not waved through
        out = Collector(path)
        out.add("ANALYZER-LIMIT", 1, f"could not be analysed ({type(error).__name__}: {str(error)[:80]})")
        return out.sorted()


class _Analyzer:
    def __init__(self, tree: ast.Module, path: str, own_paths: frozenset[str]):
        self.tree = tree
        self.path = path
        self.own_paths = own_paths
        self.depth_in_solution = path.count("/")
        # modules that are files of the solution: imports of them are local (unless the name is a library's or banned:
        # a solution's own `ctypes.py` or `os.py` may lose to the real one, see _import_binding)
        self.own_modules: set[str] = set()
        for own in own_paths:
            if own.endswith(".py"):
                parts = own[:-3].split("/")
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                for end in range(1, len(parts) + 1):
                    self.own_modules.add(".".join(parts[:end]))
        self.out = Collector(path)
        self.module = _Scope("module", None, tree)
        self._qcache: dict[int, str | None] = {}
        self._ncache: dict[tuple[str, int], object] = {}
        self._depth = 0
        self._bind_all()

    # ---- pass 1: scopes and bindings ------------------------------------------------------------------

    def _bind_all(self) -> None:
        stack: list[tuple[ast.AST, _Scope, ast.AST | None]] = [(self.tree, self.module, None)]
        functions: list[_Scope] = []
        order = self.order = []  # every node, in source order (earlier aliases resolve first and are cached)
        push = stack.append
        record = order.append
        AST = ast.AST
        while stack:
            node, scope, parent = stack.pop()
            node._sbp = parent  # type: ignore[attr-defined]
            node._sbs = scope  # type: ignore[attr-defined]
            record(node)
            kind = type(node)
            if kind is ast.Name:
                if isinstance(node.ctx, ast.Store):
                    scope.bind(node.id, _LOCAL)
                continue
            if kind in _SCOPED:
                # these push their children themselves (in their own scopes); popped in source order
                mark = len(stack)
                self._bind_scoped(node, kind, scope, functions, push)
                stack[mark:] = stack[mark:][::-1]
                continue
            if kind is ast.Import:
                for alias in node.names:
                    full = _normalise(alias.name)
                    if alias.asname:
                        scope.bind(alias.asname, self._import_binding(full))
                    else:
                        head = alias.name.split(".")[0]
                        scope.bind(head, self._import_binding(_normalise(head)))
            elif kind is ast.ImportFrom:
                for alias in node.names:
                    if node.level or not node.module:
                        if alias.name != "*":
                            scope.bind(alias.asname or alias.name, _LOCAL)
                        continue
                    if alias.name == "*":
                        scope.stars.append(_normalise(node.module))
                    else:
                        scope.bind(alias.asname or alias.name, self._import_binding(_normalise(node.module + "." + alias.name)))
            elif kind is ast.Assign:
                for target in node.targets:
                    self._bind_target(target, node.value, scope)
            elif kind is ast.AnnAssign:
                if node.value is not None and type(node.target) is ast.Name:
                    scope.bind(node.target.id, ("expr", node.value, scope))
            elif kind is ast.NamedExpr:
                home = scope
                while home.kind == "comp" and home.parent is not None:
                    home = home.parent
                if type(node.target) is ast.Name:
                    home.bind(node.target.id, ("expr", node.value, scope))
                push((node.value, scope, node))
                node.target._sbp, node.target._sbs = node, home  # type: ignore[attr-defined]
                continue
            elif kind is ast.Global:
                scope.globals.update(node.names)
            elif kind is ast.Nonlocal:
                scope.nonlocals.update(node.names)
            elif kind is ast.ExceptHandler:
                if node.name:
                    scope.bind(node.name, _LOCAL)
            elif kind in (ast.MatchAs, ast.MatchStar):
                if node.name:
                    scope.bind(node.name, _LOCAL)
            elif kind is ast.MatchMapping:
                if node.rest:
                    scope.bind(node.rest, _LOCAL)
            children = []
            for field in node._fields:
                if field == "ctx":
                    continue
                value = getattr(node, field, None)
                if value.__class__ is list:
                    for item in value:
                        if isinstance(item, AST):
                            children.append((item, scope, node))
                elif isinstance(value, AST):
                    children.append((value, scope, node))
            children.reverse()
            stack.extend(children)
        # `global x` / `nonlocal x` move the function's bindings of x to where x lives
        for scope in functions:
            for name in scope.globals:
                for binding in scope.bindings.pop(name, []):
                    self.module.bind(name, binding)
            for name in scope.nonlocals:
                target = scope.parent
                while target is not None and (target.kind == "class" or name not in target.bindings) and target.parent is not None:
                    target = target.parent
                for binding in scope.bindings.pop(name, []):
                    (target or self.module).bind(name, binding)

    def _bind_scoped(self, node, kind, scope: _Scope, functions: list[_Scope], push) -> None:
        if kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            if kind is not ast.Lambda:
                scope.bind(node.name, _LOCAL)
                for item in node.decorator_list:
                    push((item, scope, node))
                if node.returns is not None:
                    push((node.returns, scope, node))
            inner = _Scope("function", scope, node)
            functions.append(inner)
            node._sb_inner = inner  # type: ignore[attr-defined]
            args = node.args
            args._sbp, args._sbs = node, inner  # type: ignore[attr-defined]
            for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg):
                if arg is None:
                    continue
                arg._sbp, arg._sbs = args, inner  # type: ignore[attr-defined]
                inner.bind(arg.arg, _LOCAL)
                if arg.annotation is not None:
                    push((arg.annotation, scope, arg))
            for default in (*args.defaults, *args.kw_defaults):
                if default is not None:
                    push((default, scope, args))
            # a parameter with a default may be that default (`def f(m=time): m.perf_counter = ...`)
            positional = [*args.posonlyargs, *args.args]
            for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
                inner.bind(arg.arg, ("expr", default, scope))
            for arg, default in zip(args.kwonlyargs, args.kw_defaults):
                if default is not None:
                    inner.bind(arg.arg, ("expr", default, scope))
            body = node.body if kind is not ast.Lambda else [node.body]
            for item in body:
                push((item, inner, node))
            return
        if kind is ast.ClassDef:
            scope.bind(node.name, ("class", node))
            for item in (*node.decorator_list, *node.bases, *node.keywords):
                push((item, scope, node))
            inner = _Scope("class", scope, node)
            node._sb_inner = inner  # type: ignore[attr-defined]
            for item in node.body:
                push((item, inner, node))
            return
        if kind in (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp):
            inner = _Scope("comp", scope, node)
            for index, gen in enumerate(node.generators):
                gen._sbp, gen._sbs = node, inner  # type: ignore[attr-defined]
                push((gen.target, inner, gen))
                push((gen.iter, scope if index == 0 else inner, gen))
                for cond in gen.ifs:
                    push((cond, inner, gen))
            for field in ("elt", "key", "value"):
                child = getattr(node, field, None)
                if child is not None:
                    push((child, inner, node))
            return

    def _import_binding(self, dotted: str) -> tuple:
        top = dotted.split(".")[0]
        # A solution's own file named like a library (os.py, subprocess.py, ctypes/__init__.py, yaml.py, torch/...) does not
        # make the import local: builtin and frozen modules (os, sys, time, io, ...) always win over it, and an import that
        # runs inside a call, after the build folder has left sys.path, gets the library again. Whichever it is at run
        # time, its calls are judged as the library's; the file itself gets PY-SHADOW.
        if top in self.own_modules and top not in _LIBRARY_NAMES and not _match(dotted):
            return _LOCAL
        return ("import", dotted)

    def _bind_target(self, target: ast.AST, value: ast.AST | None, scope: _Scope) -> None:
        kind = type(target)
        if kind is ast.Name:
            scope.bind(target.id, ("expr", value, scope) if value is not None else _LOCAL)
        elif kind in (ast.Tuple, ast.List):
            values = value.elts if type(value) in (ast.Tuple, ast.List) and len(value.elts) == len(target.elts) else None
            for index, element in enumerate(target.elts):
                self._bind_target(element, values[index] if values else None, scope)
        elif kind is ast.Starred:
            self._bind_target(target.value, None, scope)

    # ---- resolution ---------------------------------------------------------------------------------

    def _enter(self) -> None:
        self._depth += 1
        if self._depth > 150:
            raise _Unanalyzable("names are aliased or nested too deeply")

    def lookup(self, name: str, scope: _Scope) -> tuple[_Scope, list[tuple]] | None:
        """The scope that binds `name` as seen from `scope`, and its bindings; None when unbound."""
        current: _Scope | None = scope
        first = True
        while current is not None:
            if name in current.globals:
                current = self.module
            if current.kind == "class" and not first:
                current = current.parent
                continue
            bindings = current.bindings.get(name)
            if bindings:
                return current, bindings
            first = False
            current = current.parent
        return None

    def resolve_name(self, name: str, scope: _Scope) -> str | None:
        key = (name, id(scope))
        cached = self._ncache.get(key, _LOCAL)
        if cached is not _LOCAL:
            return cached  # type: ignore[return-value]
        self._ncache[key] = None  # cycles resolve to nothing
        found = self.lookup(name, scope)
        result: str | None = None
        if found is None:
            if name in _BUILTIN_NAMES:
                result = "builtins." + name
            elif name == "__builtins__":
                result = "builtins"
            else:
                for module in self.module.stars:
                    candidate = module + "." + name
                    if _match(candidate) or candidate in _STAR_NAMES:
                        result = candidate
                        break
        else:
            for binding in found[1]:
                if binding[0] == "import":
                    result = binding[1]
                    break
                if binding[0] == "expr":
                    self._enter()
                    try:
                        result = self.qualname(binding[1])
                    finally:
                        self._depth -= 1
                    if result is not None:
                        break
        self._ncache[key] = result
        return result

    def value_of(self, node: ast.AST) -> ast.AST | None:
        """The expression a Name was assigned (first assignment), or None."""
        if type(node) is not ast.Name:
            return None
        found = self.lookup(node.id, node._sbs)  # type: ignore[attr-defined]
        if not found:
            return None
        for binding in found[1]:
            if binding[0] == "expr":
                return binding[1]
        return None

    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name of what `node` denotes, when it denotes a module, a module's member or a builtin."""
        cache = self._qcache
        key = id(node)
        if key in cache:
            return cache[key]
        chain: list[ast.Attribute] = []
        current = node
        while type(current) is ast.Attribute:
            if id(current) in cache:
                break
            chain.append(current)
            current = current.value
        if type(current) is ast.Attribute:
            base = cache[id(current)]
        else:
            base = self._qbase(current)
            cache[id(current)] = base
        chain.reverse()
        if base is None and chain and type(current) is ast.Name:
            # `Holder.mod` where `class Holder: mod = time`: the class attribute's value
            base = self._class_attribute(current, chain[0].attr)
            cache[id(chain[0])] = base
            chain = chain[1:]
        for attribute in chain:
            base = None if base is None else base + "." + attribute.attr
            cache[id(attribute)] = base
        return cache[key]

    def _class_attribute(self, name: ast.Name, attr: str) -> str | None:
        found = self.lookup(name.id, name._sbs)  # type: ignore[attr-defined]
        if not found:
            return None
        for binding in found[1]:
            if binding[0] == "class":
                inner = binding[1]._sb_inner
                for value in inner.bindings.get(attr, ()):
                    if value[0] == "expr":
                        self._enter()
                        try:
                            result = self.qualname(value[1])
                        finally:
                            self._depth -= 1
                        if result is not None:
                            return result
        return None

    def _qbase(self, node: ast.AST) -> str | None:
        kind = type(node)
        if kind is ast.Name:
            return self.resolve_name(node.id, node._sbs)  # type: ignore[attr-defined]
        if kind is ast.Call:
            if type(node.func) is ast.Call and node.args and len(node.func.args) == 1:
                maker = self.qualname(node.func.func)
                if maker == "operator.attrgetter":
                    base = self.qualname(node.args[0])
                    attr = self.fold(node.func.args[0])
                    return None if base is None or attr is None else base + "." + attr
            func = self.qualname(node.func)
            if func in _DYNAMIC_IMPORTS and node.args:
                name = self.fold(node.args[0])
                if name is None or name.startswith("."):
                    return None
                has_fromlist = len(node.args) >= 4 or any(k.arg == "fromlist" for k in node.keywords)
                if func == "builtins.__import__" and not has_fromlist:
                    name = name.split(".")[0]
                return _normalise(name)
            if func == "builtins.getattr" and len(node.args) >= 2:
                base = self.qualname(node.args[0])
                attr = self.fold(node.args[1])
                if base is not None and attr is not None:
                    return base + "." + attr
                return None
            if func == "builtins.vars" and len(node.args) == 1:
                base = self.qualname(node.args[0])
                return None if base is None else base + ".__dict__"
            if func in ("builtins.globals", "builtins.locals"):
                return "<globals>"
            if func == "builtins.type" and len(node.args) == 1:
                return None
            return None
        if kind is ast.Subscript:
            element = self._element(node)
            if element is not None:
                self._enter()
                try:
                    return self.qualname(element)
                finally:
                    self._depth -= 1
            base = self.qualname(node.value)
            if base is None:
                return None
            key = self.fold(node.slice)
            if key is None:
                return None
            if base.endswith(".__dict__"):
                return base[: -len(".__dict__")] + "." + key
            if base == "__dict__":
                return key
            if base == "sys.modules":
                return _normalise(key)
            if base == "builtins" or base == "builtins.__dict__":
                return "builtins." + key
            if base == "<globals>":
                return self.resolve_name(key, self.module)
            return None
        if kind is ast.Attribute:  # pragma: no cover - handled by qualname
            return self.qualname(node)
        return None

    def _element(self, node: ast.Subscript) -> ast.AST | None:
        """The element a constant subscript picks from a list/tuple/dict literal (directly or through a name)."""
        container = node.value
        if type(container) is ast.Name:
            container = self.value_of(container)
        if type(node.slice) is not ast.Constant:
            return None
        key = node.slice.value
        if type(container) in (ast.List, ast.Tuple) and isinstance(key, int) and not isinstance(key, bool):
            if -len(container.elts) <= key < len(container.elts) and type(container.elts[key]) is not ast.Starred:
                return container.elts[key]
        elif type(container) is ast.Dict:
            for dict_key, value in zip(container.keys, container.values):
                if type(dict_key) is ast.Constant and dict_key.value == key:
                    return value
        return None

    def fold(self, node: ast.AST | None, depth: int = 0) -> str | None:
        """The constant string an expression evaluates to, when it is built from constants."""
        if node is None or depth > 40:
            return None
        kind = type(node)
        if kind is ast.Constant:
            value = node.value
            if isinstance(value, str):
                return value
            if isinstance(value, bytes):
                try:
                    return value.decode("latin-1")
                except Exception:  # pragma: no cover
                    return None
            return None
        if kind is ast.BinOp and isinstance(node.op, ast.Add):
            left = self.fold(node.left, depth + 1)
            right = self.fold(node.right, depth + 1) if left is not None else None
            return left + right if right is not None else None
        if kind is ast.BinOp and isinstance(node.op, ast.Mult):
            text = self.fold(node.left, depth + 1)
            if text is not None and type(node.right) is ast.Constant and isinstance(node.right.value, int) and 0 <= node.right.value < 64:
                return text * node.right.value
            return None
        if kind is ast.JoinedStr:
            parts = []
            for value in node.values:
                if type(value) is ast.Constant:
                    parts.append(str(value.value))
                elif type(value) is ast.FormattedValue and value.format_spec is None and value.conversion in (-1, 115):
                    folded = self.fold(value.value, depth + 1)
                    if folded is None:
                        return None
                    parts.append(folded)
                else:
                    return None
            return "".join(parts)
        if kind is ast.Name:
            value = self.value_of(node)
            return self.fold(value, depth + 1) if value is not None else None
        if kind is ast.Attribute:
            return _PATH_CONSTANTS.get(self.qualname(node) or "")
        if kind is ast.Subscript and type(node.slice) is ast.Slice:
            text = self.fold(node.value, depth + 1)
            if text is None:
                return None
            bounds = []
            for part in (node.slice.lower, node.slice.upper, node.slice.step):
                if part is None:
                    bounds.append(None)
                elif type(part) is ast.Constant and isinstance(part.value, int):
                    bounds.append(part.value)
                elif type(part) is ast.UnaryOp and isinstance(part.op, ast.USub) and type(part.operand) is ast.Constant and isinstance(part.operand.value, int):
                    bounds.append(-part.operand.value)
                else:
                    return None
            try:
                return text[slice(*bounds)]
            except ValueError:
                return None
        if kind is ast.Call:
            func = node.func
            if type(func) is ast.Attribute:
                if func.attr == "join" and len(node.args) == 1 and not node.keywords:
                    sep = self.fold(func.value, depth + 1)
                    seq = node.args[0]
                    if sep is not None and type(seq) in (ast.List, ast.Tuple):
                        items = [self.fold(item, depth + 1) for item in seq.elts]
                        if all(item is not None for item in items):
                            return sep.join(items)  # type: ignore[arg-type]
                    if sep is not None and type(seq) is ast.Call and self.qualname(seq.func) == "builtins.reversed" and seq.args:
                        inner = self.fold(seq.args[0], depth + 1)
                        return None if inner is None else sep.join(reversed(inner))
                    return None
                if func.attr in ("lower", "upper", "strip", "lstrip", "rstrip", "decode", "encode", "swapcase", "title", "capitalize") and not node.args:
                    text = self.fold(func.value, depth + 1)
                    return None if text is None else (text if func.attr in ("decode", "encode") else getattr(text, func.attr)())
                if func.attr == "replace" and len(node.args) == 2:
                    text, old, new = (self.fold(x, depth + 1) for x in (func.value, *node.args))
                    if None not in (text, old, new):
                        return text.replace(old, new)  # type: ignore[union-attr,arg-type]
                    return None
                if func.attr == "format" and not node.keywords:
                    text = self.fold(func.value, depth + 1)
                    items = [self.fold(item, depth + 1) for item in node.args]
                    if text is not None and all(item is not None for item in items):
                        try:
                            return text.format(*items)
                        except (IndexError, KeyError, ValueError):
                            return None
                    return None
            name = self.qualname(func)
            if name in ("builtins.bytes", "builtins.bytearray") and len(node.args) == 1 and type(node.args[0]) in (ast.List, ast.Tuple):
                values = [item.value for item in node.args[0].elts if type(item) is ast.Constant and isinstance(item.value, int)]
                if len(values) == len(node.args[0].elts) and all(0 <= v < 256 for v in values):
                    return bytes(values).decode("latin-1")
                return None
            if name in ("builtins.str", "builtins.bytes") and len(node.args) == 1:
                return self.fold(node.args[0], depth + 1)
            if name == "builtins.chr" and len(node.args) == 1 and type(node.args[0]) is ast.Constant and isinstance(node.args[0].value, int):
                try:
                    return chr(node.args[0].value)
                except (ValueError, OverflowError):
                    return None
            if name in ("builtins.bytes", "builtins.bytearray") and len(node.args) == 1 and type(node.args[0]) in (ast.List, ast.Tuple):
                values = [item.value for item in node.args[0].elts if type(item) is ast.Constant and isinstance(item.value, int)]
                if len(values) == len(node.args[0].elts) and all(0 <= v < 256 for v in values):
                    return bytes(values).decode("latin-1")
            return None
        return None

    # ---- pass 2: rules -------------------------------------------------------------------------------

    def run(self) -> list[Finding]:
        self.module_containers = self._module_containers()
        handlers = {
            ast.Import: self._on_import, ast.ImportFrom: self._on_import, ast.Name: self._on_name,
            ast.Attribute: self._on_attribute, ast.Call: self._on_call, ast.Subscript: self._on_subscript,
            ast.Assign: self._on_assign, ast.AugAssign: self._on_assign, ast.AnnAssign: self._on_assign,
            ast.Delete: self._on_assign, ast.Raise: self._on_raise, ast.Constant: self._on_constant,
            ast.JoinedStr: self._on_constant, ast.List: self._on_sequence, ast.Tuple: self._on_sequence,
            ast.Set: self._on_sequence, ast.FunctionDef: self._on_function, ast.AsyncFunctionDef: self._on_function,
            ast.Compare: self._on_compare, ast.BinOp: self._on_binop,
        }
        for node in self.order:
            handler = handlers.get(type(node))
            if handler is not None:
                handler(node)
        return self.out.sorted()

    def add(self, rule: str, node: ast.AST, message: str) -> None:
        self.out.add(rule, getattr(node, "lineno", 1), message)

    def _ban_check(self, dotted: str | None, node: ast.AST, how: str) -> None:
        if not dotted:
            return
        hit = _match(dotted)
        if hit:
            self.add(hit[0], node, f"{how} {dotted}: {hit[1]}")

    # imports

    def _on_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if type(node) is ast.Import:
            for alias in node.names:
                self._ban_check(_normalise(alias.name), node, "imports")
            return
        if node.level or not node.module:
            return
        module = _normalise(node.module)
        for alias in node.names:  # `from m import x` is judged by m.x (m.cpu_count may be fine where m is not)
            self._ban_check(module if alias.name == "*" else module + "." + alias.name, node, "imports")

    # names and attributes

    def _on_name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        dotted = self.qualname(node)
        if dotted is None:
            return
        self._ban_check(dotted, node, "uses")
        self._special_objects(dotted, node)
        self._writer_as_value(dotted, node)

    def _writer_as_value(self, dotted: str, node: ast.AST) -> None:
        """setattr/operator.setitem handed to functools.partial, map, ...: a write these checks cannot follow."""
        if dotted not in _WRITERS:
            return
        parent = node._sbp  # type: ignore[attr-defined]
        if type(parent) is ast.Call and parent.func is node:
            return
        if type(parent) is ast.Attribute:  # object.__setattr__ is judged on the Attribute node
            return
        self.add("PY-PATCH", node, f"{dotted} passed as a value (functools.partial, map, ...): an attribute or item write that cannot be followed")

    def _on_attribute(self, node: ast.Attribute) -> None:
        if node.attr in _FRAME_ATTRS and isinstance(node.ctx, ast.Load):
            self.add("PY-INTROSPECT", node, f"reads .{node.attr}: reaches frames, globals or code of the harness")
        dotted = self.qualname(node)
        if dotted is None:
            if _L2_NAME.search(node.attr):
                self.add("PY-L2", node, f".{node.attr}: L2 persistence keeps data in L2 across the harness's flush")
            return
        self._ban_check(dotted, node, "uses")
        self._special_objects(dotted, node)
        self._writer_as_value(dotted, node)

    def _special_objects(self, dotted: str, node: ast.AST) -> None:
        """os.environ and sys.path: what is done with them decides the rule."""
        if dotted not in ("os.environ", "sys.path"):
            return
        parent = node._sbp  # type: ignore[attr-defined]
        writes = False
        if type(parent) is ast.Attribute and parent.value is node:
            writes = parent.attr in (_ENV_WRITE_METHODS if dotted == "os.environ" else _MUTATORS)
        elif type(parent) is ast.Subscript and parent.value is node:
            writes = not isinstance(parent.ctx, ast.Load)
        if dotted == "os.environ":
            if writes:
                self.add("PY-ENV", node, "writes os.environ: changes the environment of the worker")
            else:
                self.add("PY-ENV-READ", node, "reads os.environ")
        elif writes:
            self.add("PY-SYSPATH", node, "changes sys.path")

    def _on_subscript(self, node: ast.Subscript) -> None:
        dotted = self.qualname(node)
        if dotted is not None:
            self._ban_check(dotted, node, "uses")
            self._special_objects(dotted, node)
        self._identity_key(node.slice, node, "a subscript key")

    # calls

    def _folded_path(self, node: ast.AST) -> None:
        """A system path assembled at run time ("/".join, os.sep.join, "/" + "proc", chr(...))."""
        parent = node._sbp  # type: ignore[attr-defined]
        if type(parent) in (ast.BinOp, ast.JoinedStr):
            return  # judged on the outermost expression
        text = self.fold(node)
        if text is not None and SYSTEM_PATH.fullmatch(text):
            self.add("PY-PATH-ESCAPE", node, f"builds the system path {text[:60]!r}: outside the solution")

    def _on_binop(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Add):
            self._folded_path(node)

    def _on_call(self, node: ast.Call) -> None:
        if type(node.func) is ast.Attribute and node.func.attr in ("join", "format", "replace", "decode"):
            self._folded_path(node)
        func = self.qualname(node.func)
        resolved = self.qualname(node)
        if resolved is not None and resolved != func:
            self._ban_check(resolved, node, "reaches")
        if func in _DYNAMIC_IMPORTS:
            name = self.fold(node.args[0]) if node.args else None
            if name is None:
                self.add("PY-DYNAMIC", node, f"{func}() with a computed module name: defeats the static checks")
            elif not name.startswith("."):
                self._ban_check(_normalise(name), node, "imports")
        elif func in ("builtins.getattr", "builtins.hasattr", "builtins.setattr", "builtins.delattr",
                      "builtins.object.__setattr__", "builtins.type.__setattr__", "builtins.object.__delattr__",
                      "builtins.object.__getattribute__", "builtins.type.__getattribute__"):
            self._on_attr_call(node, func)
        elif type(node.func) is ast.Attribute and node.func.attr in ("__setattr__", "__delattr__", "__getattribute__") and node.args:
            base = self.qualname(node.func.value)
            if base is not None:
                name = self.fold(node.args[0])
                if node.func.attr == "__getattribute__":
                    if name is None:
                        self._computed_getattr(base, node)
                else:
                    value = node.args[1] if len(node.args) > 1 else None
                    self._store(f"{base}.{name if name is not None else '<computed>'}", node, value, "sets")
        if type(node.func) is ast.Call and node.args and self.qualname(node.func.func) in _CACHE_DECORATORS:
            self._cached_by_call(node, node.args[0])
        if func is not None:
            self._call_rules(node, func)
        if type(node.func) is ast.Attribute:
            self._method_rules(node, node.func)

    def _computed_getattr(self, base: str, node: ast.AST) -> None:
        top = base.split(".")[0]
        if top in _SENSITIVE or base in _SENSITIVE or base.startswith("torch._C"):
            self.add("PY-DYNAMIC", node, f"attribute of {base} looked up with a computed name: defeats the static checks")
        else:
            self.add("PY-GETATTR", node, f"attribute of {base} looked up with a computed name")

    def _on_attr_call(self, node: ast.Call, func: str) -> None:
        if len(node.args) < 2:
            return
        target = node.args[0]
        base = self.qualname(target)
        name = self.fold(node.args[1])
        short = func.rsplit(".", 1)[-1]
        if name is not None and name in _FRAME_ATTRS:
            self.add("PY-INTROSPECT", node, f"{short}(..., {name!r}): reaches frames, globals or code of the harness")
        if short in ("getattr", "hasattr", "__getattribute__"):
            if base is not None and name is None:
                self._computed_getattr(base, node)
            return
        if base is None:
            if name is not None and name in _IDENTITY_ATTRS and short in ("setattr", "__setattr__"):
                self.add("PY-PATCH", node, f"{short}(..., {name!r}, ...): changes what an object is")
            elif self._reaches_class(target):
                self.add("PY-PATCH", node, f"{short}(<class of an object>, ...): patches a class it did not define")
            return
        value = node.args[2] if len(node.args) > 2 else None
        self._store(f"{base}.{name if name is not None else '<computed>'}", node, value, "deletes" if "del" in short else "sets")

    def _call_rules(self, node: ast.Call, func: str) -> None:
        args = node.args
        if func in ("builtins.open", "io.open", "io.FileIO", "os.fdopen", "codecs.open", "gzip.open", "bz2.open", "lzma.open"):
            path = self._arg(node, 0, "file")
            mode = self._arg(node, 1, "mode")
            mode_text = "r" if mode is None else self.fold(mode)
            self._file_access(node, path, write=mode_text is None or any(c in mode_text for c in "wax+"), what=f"open(mode={mode_text!r})")
        elif func == "os.open":
            flags = self._arg(node, 1, "flags")
            names = {n.attr for n in ast.walk(flags) if type(n) is ast.Attribute} | {n.id for n in ast.walk(flags) if type(n) is ast.Name} if flags is not None else set()
            write = bool(names & {"O_WRONLY", "O_RDWR", "O_CREAT", "O_APPEND", "O_TRUNC"})
            self._file_access(node, self._arg(node, 0, "path"), write=write, what="os.open")
        elif func in _READ_FUNCS:
            index, keyword = _READ_FUNCS[func]
            self._file_access(node, self._arg(node, index, keyword), write=False, what=func)
            unpickle = {"torch.load": "weights_only", "numpy.load": "allow_pickle"}.get(func)
            if unpickle is not None:
                flag = next((k.value for k in node.keywords if k.arg == unpickle), None)
                if flag is not None and (unpickle == "weights_only") == _is_false(flag):
                    self.add("PY-DECODE", node, f"{func}({unpickle}={ast.unparse(flag)}): unpickles arbitrary objects, which runs code")
        elif func in _YAML_LOADS:
            self._yaml_load(node, func)
        elif func in ("ruamel.yaml.YAML", "ruamel.yaml.main.YAML"):
            typ = next((k.value for k in node.keywords if k.arg == "typ"), None)
            value = "rt" if typ is None else self.fold(typ)
            if value not in ("rt", "safe", "base") or any(item.arg is None for item in node.keywords):
                shown = "**kwargs" if value == "rt" and typ is None else value if value is not None else " ".join(ast.unparse(typ).split())[:60]
                self.add("PY-DECODE", node, f"{func}(typ={shown!r}): only typ 'rt', 'safe' or 'base' are certainly safe; 'unsafe' "
                                            "and 'full' build Python objects from python/* tags, which runs code")
        elif func in _PATH_WRITE_FUNCS:
            index, keyword = _PATH_WRITE_FUNCS[func]
            path = self._arg(node, index, keyword)
            if path is not None:
                self._escape_only(node, path, func)
        elif func == "torch.set_float32_matmul_precision":
            value = self.fold(self._arg(node, 0, "precision"))
            if value != "highest":
                self.add("PY-PRECISION", node, f"torch.set_float32_matmul_precision({value!r}): fp32 matmuls in lower precision for everyone in the process")
        elif _PRECISION_CALL.match(func):
            arg = self._arg(node, 0, None)
            if not _is_false(arg):
                self.add("PY-PRECISION", node, f"{func}: flips a global precision flag")
        elif func.endswith(".inline_asm_elementwise") and func.startswith("triton"):
            text = self.fold(self._arg(node, 0, "asm")) or ""
            summary = " ".join(text.split())[:60]
            self.add("PY-ASM", node, f"inline PTX through {func}: {summary!r}; reviewed by hand")
        elif func in ("torch.backends.cudnn.flags", "torch.backends.cuda.sdp_kernel"):
            for keyword in node.keywords:
                if keyword.arg == "allow_tf32" and not _is_false(keyword.value):
                    self.add("PY-PRECISION", node, f"{func}(allow_tf32=...): TF32 for everyone in the process")
        elif func in ("torch.library.Library", "torch.library.impl", "torch.library.register_kernel", "torch.library.register_fake",
                      "torch.library.register_autograd", "torch.library.register_torch_dispatch", "torch.library.custom_op",
                      "torch.library.define", "torch.library._impl", "torch.library.impl_abstract"):
            target = self.fold(args[0]) if args else None
            if target is not None and re.match(r"^(?:aten|prims|prim|_c10d_functional|c10d|cuda)(?:$|::|\.)", target):
                self.add("PY-PATCH", node, f"{func}({target!r}): overrides a built-in torch operator")
        elif func in ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline"):
            build_dir = self._arg(node, 99, "build_directory")
            if build_dir is not None:
                info = self.path_info(build_dir)
                if info[3] and not info[1]:
                    self.add("PY-PATH-ESCAPE", node, f"{func}(build_directory=...) with {info[3]}")
        elif func in _CACHE_DECORATORS and args:
            self._cached_by_call(node, args[0])
        elif func in ("operator.setitem", "operator.delitem", "operator.__setitem__", "operator.__delitem__") and len(args) >= 2:
            base = self.qualname(args[0])
            if base is not None:
                key = self.fold(args[1])
                value = args[2] if len(args) > 2 else None
                verb = "deletes" if "del" in func else "sets"
                if base.endswith(".__dict__"):
                    self._store(base[: -len(".__dict__")] + "." + (key or "<computed>"), node, value, verb)
                elif base != "<globals>":
                    self._store(base + "[" + (repr(key) if key is not None else "...") + "]", node, value, verb)
        elif func == "numpy.memmap":
            mode = self._arg(node, 2, "mode")
            mode_text = "r+" if mode is None else self.fold(mode)  # numpy's default mode is r+ (read-write)
            write = mode_text not in ("r", "readonly", "c", "copyonwrite")
            self._file_access(node, self._arg(node, 0, "filename"), write=write, what=f"numpy.memmap(mode={mode_text!r})")

    def _yaml_load(self, node: ast.Call, func: str) -> None:
        """yaml.load / yaml.load_all: code-running deserialisation unless the Loader is certainly a safe one."""
        loader = self._arg(node, 1, "Loader")
        if loader is None:
            if any(type(arg) is ast.Starred for arg in node.args) or any(item.arg is None for item in node.keywords):
                self.add("PY-DECODE", node, f"{func}() with its Loader passed through *args/**kwargs: may build arbitrary Python "
                                            "objects from python/* tags, which runs code")
            else:
                self.add("PY-DECODE", node, f"{func}() without a Loader (FullLoader before PyYAML 6): builds Python objects from "
                                            "python/* tags; use yaml.safe_load")
            return
        if not self._safe_yaml_loader(loader):
            shown = " ".join(ast.unparse(loader).split())[:60]
            self.add("PY-DECODE", node, f"{func}(Loader={shown}): not one of yaml's safe loaders (SafeLoader, CSafeLoader, "
                                        "BaseLoader); python/* tags build arbitrary objects, which runs code")

    def _safe_yaml_loader(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Whether a Loader is certainly one of yaml's safe loaders, or a class of the solution derived only from them. A
        name must be so in every binding (a parameter or anything unresolved is not); a conditional in both branches."""
        if node is None or depth > 20:
            return False
        kind = type(node)
        if kind is ast.IfExp:
            return self._safe_yaml_loader(node.body, depth + 1) and self._safe_yaml_loader(node.orelse, depth + 1)
        if kind is ast.Call and len(node.args) == 3 and not node.keywords and self.qualname(node.func) == "builtins.getattr":
            # getattr(yaml, "CSafeLoader", yaml.SafeLoader): the attribute (resolved below) and the default
            if not self._safe_yaml_loader(node.args[2], depth + 1):
                return False
        elif kind is ast.Name:
            found = self.lookup(node.id, node._sbs)  # type: ignore[attr-defined]
            if found is not None:
                # an assignment binds its value and, through its target, an unknown ("local") value: each assignment
                # accounts for one of those; any other (a parameter, a loop or `with` target, ...) is not known
                unknown = 0
                for binding in found[1]:
                    if binding[0] == "import":
                        safe = binding[1] in _YAML_SAFE_LOADERS
                    elif binding[0] == "expr":
                        safe = self._safe_yaml_loader(binding[1], depth + 1)
                        unknown -= _assigned(binding[1])
                    elif binding[0] == "class":
                        bases = binding[1].bases
                        safe = bool(bases) and not binding[1].keywords and all(self._safe_yaml_loader(b, depth + 1) for b in bases)
                    else:
                        safe = True
                        unknown += 1
                    if not safe:
                        return False
                return unknown <= 0
        return self.qualname(node) in _YAML_SAFE_LOADERS

    def _cached_by_call(self, node: ast.Call, wrapped: ast.AST) -> None:
        """functools.cache(fn) / functools.lru_cache(maxsize=None)(fn): the call form of the decorator."""
        if type(wrapped) is not ast.Name:
            return
        found = self.lookup(wrapped.id, node._sbs)  # type: ignore[attr-defined]
        if not found:
            return
        for definition in ast.walk(found[0].node):
            if type(definition) in (ast.FunctionDef, ast.AsyncFunctionDef) and definition.name == wrapped.id:
                self._check_cached_function(definition, node)
                return

    def _method_rules(self, node: ast.Call, func: ast.Attribute) -> None:
        name = func.attr
        if name in ("run_in_executor", "set_default_executor"):
            self.add("PY-THREAD", node, f".{name}(): runs work on an executor's threads, which can outlive the call")
        if name in ("read_text", "read_bytes"):
            self._file_access(node, func.value, write=False, what=f".{name}()")
        elif name in ("write_text", "write_bytes", "symlink_to", "hardlink_to", "tofile"):
            self._file_access(node, func.value, write=True, what=f".{name}()")
        elif name in ("unlink", "rmdir", "touch", "mkdir", "rename", "replace", "chmod", "lchmod", "open", "iterdir", "glob", "rglob", "walk"):
            if not self.is_path_object(func.value):
                return
            if name == "open":
                mode = self._arg(node, 0, "mode")
                mode_text = "r" if mode is None else self.fold(mode)
                self._file_access(node, func.value, write=mode_text is None or any(c in mode_text for c in "wax+"), what=f".open({mode_text!r})")
            elif name in ("iterdir", "glob", "rglob", "walk"):
                self._file_access(node, func.value, write=False, what=f".{name}()")
            else:
                self._file_access(node, func.value, write=True, what=f".{name}()")
        elif name in _MUTATORS and name not in ("__setattr__", "__delattr__"):
            base = self.qualname(func.value)
            if base is not None and base.endswith(".__dict__"):
                self._store(base[: -len(".__dict__")] + ".<computed>", node, None, f"mutates ({name})")
        self._identity_call(node, func)

    def _arg(self, node: ast.Call, index: int, keyword: str | None) -> ast.AST | None:
        if keyword is not None:
            for item in node.keywords:
                if item.arg == keyword:
                    return item.value
        if index < len(node.args) and type(node.args[index]) is not ast.Starred:
            return node.args[index]
        return None

    # files

    def path_info(self, node: ast.AST | None, depth: int = 0) -> tuple[bool, bool, int, str | None]:
        """(is a path, derives from the solution's own location, parent steps taken from __file__, escape reason)."""
        nothing = (False, False, 0, None)
        if node is None or depth > 30:
            return nothing
        kind = type(node)
        if kind in (ast.Call, ast.BinOp, ast.Attribute, ast.JoinedStr):
            folded = self.fold(node)
            if folded is not None:  # a path assembled from constants at run time ("/".join, os.sep, chr, ...)
                node, kind = ast.Constant(folded), ast.Constant
        if kind is ast.Constant:
            if not isinstance(node.value, (str, bytes)):
                return nothing
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            reason = path_escape_reason(text)
            own = reason is None and (text in self.own_paths or posixpath.normpath(posixpath.join(posixpath.dirname(self.path), text)) in self.own_paths)
            return (True, own, 0, reason)
        if kind is ast.Name:
            if node.id == "__file__":
                return (True, True, 0, None)
            value = self.value_of(node)
            return self.path_info(value, depth + 1) if value is not None else nothing
        if kind is ast.Attribute:
            if node.attr == "parent":
                is_path, own, ups, reason = self.path_info(node.value, depth + 1)
                return self._ups(is_path, own, ups + 1, reason)
            if node.attr in ("name", "stem", "suffix", "parts", "anchor", "root"):
                return nothing
            dotted = self.qualname(node)
            if dotted is not None:
                return nothing
            return self.path_info(node.value, depth + 1)
        if kind is ast.Subscript:
            if type(node.value) is ast.Attribute and node.value.attr == "parents":
                is_path, own, ups, reason = self.path_info(node.value.value, depth + 1)
                step = node.slice.value if type(node.slice) is ast.Constant and isinstance(node.slice.value, int) else 99
                return self._ups(is_path, own, ups + step + 1, reason)
            return nothing
        if kind is ast.BinOp:
            left = self.path_info(node.left, depth + 1)
            right = self.path_info(node.right, depth + 1)
            if isinstance(node.op, ast.Div):
                reason = left[3] or right[3]
                return (left[0] or right[0], left[1] and not reason, left[2], reason)
            if isinstance(node.op, (ast.Add, ast.Mod)):
                right_reason = right[3] if right[3] and "'..'" in right[3] else None
                reason = left[3] or right_reason
                return (left[0] or right[0], (left[1] or right[1]) and not reason, left[2], reason)
            return nothing
        if kind is ast.JoinedStr:
            own, reason, first = False, None, True
            for value in node.values:
                if type(value) is ast.Constant:
                    text = str(value.value)
                    part_reason = path_escape_reason(text)
                    if part_reason and (first or "'..'" in part_reason):
                        reason = reason or part_reason
                else:
                    info = self.path_info(value.value, depth + 1)
                    own = own or info[1]
                    reason = reason or info[3]
                first = False
            return (True, own and not reason, 0, reason)
        if kind is ast.Call:
            func = self.qualname(node.func)
            args = node.args
            if func in ("os.path.expanduser", "pathlib.Path.home", "os.path.expandvars"):
                return (True, False, 0, "the home folder or environment variables")
            if func in ("os.getcwd", "pathlib.Path.cwd", "os.getcwdb"):
                return (True, False, 0, None)
            if func == "os.path.dirname" and args:
                is_path, own, ups, reason = self.path_info(args[0], depth + 1)
                return self._ups(is_path, own, ups + 1, reason)
            if func in ("os.path.abspath", "os.path.realpath", "os.path.normpath", "os.fspath", "builtins.str", "os.fsencode",
                        "os.fsdecode") and args:
                return self.path_info(args[0], depth + 1)
            if func in ("os.path.join", "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.PurePosixPath",
                        "pathlib.WindowsPath", "pathlib.PureWindowsPath"):
                return self._join([*args], depth)
            if type(node.func) is ast.Attribute:
                method = node.func.attr
                receiver = self.path_info(node.func.value, depth + 1)
                if method in ("joinpath", "with_name", "with_suffix", "with_stem", "__truediv__") and receiver[0]:
                    return self._join([node.func.value, *args], depth)
                if method in ("resolve", "absolute", "as_posix", "__fspath__") and receiver[0]:
                    return receiver
                if method == "expanduser" and receiver[0]:
                    return receiver if receiver[1] else (True, False, 0, receiver[3] or "the home folder")
                if method == "format" and type(node.func.value) is ast.Constant:
                    infos = [self.path_info(arg, depth + 1) for arg in args]
                    head = self.path_info(node.func.value, depth + 1)
                    reason = head[3] or next((i[3] for i in infos if i[3]), None)
                    return (True, any(i[1] for i in infos) and not reason, 0, reason)
            return nothing
        return nothing

    def is_path_object(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Whether the expression is a pathlib path (so that .replace()/.open()/... are file operations)."""
        if node is None or depth > 30:
            return False
        kind = type(node)
        if kind is ast.Call:
            func = self.qualname(node.func)
            if func is not None:
                return func.startswith("pathlib.") and func.rsplit(".", 1)[-1] in (
                    "Path", "PurePath", "PosixPath", "PurePosixPath", "WindowsPath", "PureWindowsPath", "home", "cwd")
            if type(node.func) is ast.Attribute and node.func.attr in ("joinpath", "with_name", "with_suffix", "with_stem", "resolve",
                                                                        "absolute", "expanduser", "relative_to"):
                return self.is_path_object(node.func.value, depth + 1)
            return False
        if kind is ast.Attribute and node.attr == "parent":
            return self.is_path_object(node.value, depth + 1)
        if kind is ast.Subscript and type(node.value) is ast.Attribute and node.value.attr == "parents":
            return self.is_path_object(node.value.value, depth + 1)
        if kind is ast.BinOp and isinstance(node.op, ast.Div):
            return self.is_path_object(node.left, depth + 1) or self.is_path_object(node.right, depth + 1)
        if kind is ast.Name:
            value = self.value_of(node)
            return value is not None and self.is_path_object(value, depth + 1)
        return False

    def _ups(self, is_path: bool, own: bool, ups: int, reason: str | None) -> tuple[bool, bool, int, str | None]:
        if own and ups > self.depth_in_solution + 1:
            return (True, False, ups, reason or "a folder above the solution's own")
        return (is_path, own, ups, reason)

    def _join(self, parts: list[ast.AST], depth: int) -> tuple[bool, bool, int, str | None]:
        if not parts:
            return (True, False, 0, None)
        first = self.path_info(parts[0], depth + 1)
        reason = first[3]
        for part in parts[1:]:
            info = self.path_info(part, depth + 1)
            reason = reason or info[3]
        return (True, first[1] and not reason, first[2], reason)

    def _file_access(self, node: ast.AST, path: ast.AST | None, *, write: bool, what: str) -> None:
        is_path, own, _, reason = self.path_info(path)
        if reason:
            self.add("PY-PATH-ESCAPE", node, f"{what} on {reason}: outside the solution")
        if write:
            self.add("PY-FILE-WRITE", node, f"{what}: writes files")
        elif not own and not reason:
            self.add("PY-FILE-READ", node, f"{what}: reads something other than the solution's own sources")

    def _escape_only(self, node: ast.AST, path: ast.AST, what: str) -> None:
        reason = self.path_info(path)[3]
        if reason:
            self.add("PY-PATH-ESCAPE", node, f"{what} on {reason}: outside the solution")

    # stores

    def _on_assign(self, node: ast.AST) -> None:
        kind = type(node)
        if kind is ast.Delete:
            targets, value = node.targets, None
        elif kind is ast.Assign:
            targets, value = node.targets, node.value
        elif kind is ast.AugAssign:
            targets, value = [node.target], None
        else:
            if node.value is None:
                return
            targets, value = [node.target], node.value
        verb = "deletes" if kind is ast.Delete else "assigns"
        stack = list(targets)
        while stack:
            target = stack.pop()
            target_kind = type(target)
            if target_kind in (ast.Tuple, ast.List):
                stack.extend(target.elts)
                value = None
            elif target_kind is ast.Starred:
                stack.append(target.value)
            elif target_kind is ast.Attribute:
                self._attribute_store(target, value, verb)
            elif target_kind is ast.Subscript:
                base = self.qualname(target.value)
                if base is not None:
                    key = self.fold(target.slice)
                    if base.endswith(".__dict__"):
                        self._store(base[: -len(".__dict__")] + "." + (key or "<computed>"), target, value, verb)
                    elif base == "<globals>":
                        continue
                    else:
                        self._store(base + "[" + (repr(key) if key is not None else "...") + "]", target, value, verb)
                self._cache_store(target)

    def _attribute_store(self, target: ast.Attribute, value: ast.AST | None, verb: str) -> None:
        base = self.qualname(target.value)
        if base is not None:
            self._store(base + "." + target.attr, target, value, verb)
            return
        if target.attr in _IDENTITY_ATTRS and not (target.attr == "__dict__" and type(target.value) is ast.Name and target.value.id == "self"):
            self.add("PY-PATCH", target, f"{verb} .{target.attr}: changes what an object is or how a function behaves")
        elif self._reaches_class(target.value):
            self.add("PY-PATCH", target, f"{verb} .{target.attr} on the class of an object (type(x), x.__class__): patches a class it did not define")

    def _reaches_class(self, node: ast.AST) -> bool:
        """Whether the expression goes through type(x), x.__class__, __base__/__bases__/__mro__ (a class not defined here)."""
        current = node
        for _ in range(64):
            kind = type(current)
            if kind is ast.Attribute:
                if current.attr in ("__class__", "__base__", "__bases__", "__mro__"):
                    return True
                current = current.value
            elif kind is ast.Subscript:
                current = current.value
            elif kind is ast.Call:
                return self.qualname(current.func) == "builtins.type" and len(current.args) == 1
            else:
                return False
        return False

    def _store(self, dotted: str, node: ast.AST, value: ast.AST | None, verb: str) -> None:
        """A write to `dotted`, an attribute (or item) of a module, class or builtin that the solution did not define."""
        bare = dotted.split("[", 1)[0]
        if bare in _PRECISION_FLAGS or (bare.startswith("torch.backends.") and bare.endswith(".fp32_precision")):
            benign = _is_false(value) or (type(value) is ast.Constant and value.value == "ieee")
            if verb == "deletes" or not benign:
                self.add("PY-PRECISION", node, f"{verb} {bare}: lower precision for every matmul/conv in the process")
            return
        if bare == "os.environ" or bare.startswith("os.environ."):
            self.add("PY-ENV", node, f"{verb} {dotted}: changes the environment of the worker")
            return
        if bare == "sys.path" or bare.startswith("sys.path."):
            self.add("PY-SYSPATH", node, f"{verb} {dotted}")
            return
        hit = _match(bare)
        if hit and hit[0] in ("PY-SYSMODULES", "PY-HARNESS", "PY-INTROSPECT"):
            self.add(hit[0], node, f"{verb} {dotted}: {hit[1]}")
            return
        if bare.startswith(_CONFIG_OK):
            return
        top = bare.split(".")[0]
        if not self.own_paths and top not in _STDLIB and top not in _KNOWN_LIBRARIES:
            return  # analysed alone: most likely a sibling module of the solution
        if bare.startswith("triton.knobs.") or bare.startswith("triton.config."):
            self.add("PY-CONFIG", node, f"{verb} {dotted}: changes Triton's global configuration")
            return
        self.add("PY-PATCH", node, f"{verb} {dotted}: patches a module, class or builtin the solution did not define")

    # raise

    def _on_raise(self, node: ast.Raise) -> None:
        exc = node.exc
        if exc is None:
            return
        target = exc.func if type(exc) is ast.Call else exc
        if self.qualname(target) in ("builtins.SystemExit", "builtins.KeyboardInterrupt"):
            self.add("PY-EXIT", node, "raises SystemExit/KeyboardInterrupt: ends the worker")

    # literals

    def _on_constant(self, node: ast.AST) -> None:
        parent = node._sbp  # type: ignore[attr-defined]
        if type(parent) is ast.JoinedStr or type(parent) is ast.FormattedValue:
            return
        if type(node) is ast.JoinedStr:
            text = "".join(str(v.value) if type(v) is ast.Constant else "0" for v in node.values)
        else:
            value = node.value
            if isinstance(value, bytes):
                kind = binary_kind(value)
                if kind:
                    self.add("PY-BLOB", node, f"a bytes literal holds {kind}: foreign code")
                    return
                text = value.decode("latin-1")
                if len(value) >= 16:
                    kind = text_blob(text) or scrambled_kind(value)
                    if kind:
                        self.add("PY-BLOB", node, f"a bytes literal holds {kind}: foreign code")
                        return
                opaque = bytes_opaque(value)
                if opaque:
                    self.add("PY-OPAQUE", node, f"a bytes literal of {opaque}")
                return
            if isinstance(value, int) and not isinstance(value, bool):
                kind = byte_sequence_kind([value]) if value > 255 else None
                if kind:
                    self.add("PY-BLOB", node, f"the constant {value:#x} is {kind}: part of a binary image")
                return
            if not isinstance(value, str):
                return
            text = value
        if len(text) < 4:
            return
        kind = text_blob(text) or (scrambled_kind(text.encode("latin-1", "ignore")) if len(text) >= 256 else None)
        if kind:
            self.add("PY-BLOB", node, f"a string literal holds {kind}: foreign code")
            return
        opaque = text_opaque(text)
        if opaque:
            self.add("PY-OPAQUE", node, f"a string literal of {opaque}")
        docstring = type(parent) is ast.Expr
        if docstring:
            return
        if SYSTEM_PATH.fullmatch(text):
            self.add("PY-PATH-ESCAPE", node, f"names the system path {text[:60]!r}: outside the solution")
        if len(text) >= 40 and _CPP_HINT.search(text):
            self.out.extend(_analyze_cpp(text, self.path, node.lineno - 1))
        elif _L2_NAME.search(text) and re.search(r"(?i)\b\w*(?:accesspolicywindow|persistingl2\w*|streamsetattribute)\b", text):
            self.add("PY-L2", node, "a string names an L2-persistence API (accessPolicyWindow / PersistingL2 / StreamSetAttribute)")

    def _on_sequence(self, node: ast.AST) -> None:
        elements = node.elts  # type: ignore[attr-defined]
        if len(elements) < 4:
            return
        values = []
        for element in elements:
            if type(element) is ast.Constant and isinstance(element.value, int) and not isinstance(element.value, bool):
                values.append(element.value)
            else:
                return
        kind = byte_sequence_kind(values)
        if kind:
            self.add("PY-BLOB", node, f"a list of {len(values)} integers holds {kind}: foreign code")
        elif len(values) >= 1024 and all(0 <= v <= 255 for v in values):
            self.add("PY-OPAQUE", node, f"a list of {len(values)} byte values: opaque data")

    # caching

    def _module_containers(self) -> dict[str, bool]:
        """Module-level names bound to containers: name -> is a weak-keyed container."""
        containers: dict[str, bool] = {}
        for name, bindings in self.module.bindings.items():
            for binding in bindings:
                if binding[0] != "expr":
                    continue
                value = binding[1]
                if type(value) in (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp):
                    containers[name] = containers.get(name, False)
                elif type(value) is ast.Call:
                    func = self.qualname(value.func)
                    if func in _CONTAINER_CALLS:
                        containers[name] = containers.get(name, False) or func in _WEAK_CALLS
        return containers

    def _module_container(self, node: ast.AST) -> str | None:
        """The name of the module-level container `node` refers to, from inside a function."""
        if type(node) is not ast.Name or node.id not in self.module_containers:
            return None
        scope = node._sbs  # type: ignore[attr-defined]
        if scope.kind == "module":
            return None
        found = self.lookup(node.id, scope)
        if found is None or found[0] is not self.module:
            return None
        return node.id

    def _identity_keyed(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Whether the expression involves data_ptr()/id()/hash()/storage of an object (the identity of the inputs)."""
        if node is None or depth > 3:
            return False
        for sub in ast.walk(node):
            kind = type(sub)
            if kind is ast.Call:
                func = sub.func
                if type(func) is ast.Attribute and func.attr in _IDENTITY_METHODS:
                    return True
                name = self.qualname(func)
                if name == "builtins.id":
                    return True
                if name == "builtins.hash" and sub.args and type(sub.args[0]) is not ast.Tuple:
                    return True
            elif kind is ast.Attribute and sub.attr in ("_cdata",):
                return True
            elif kind is ast.Name and isinstance(sub.ctx, ast.Load):
                found = self.lookup(sub.id, sub._sbs)  # type: ignore[attr-defined]
                if found and found[0] is not self.module:
                    for binding in found[1]:
                        if binding[0] == "expr" and self._identity_keyed(binding[1], depth + 1):
                            return True
        return False

    def _cache_store(self, target: ast.Subscript) -> None:
        name = self._module_container(target.value)
        if name is None:
            return
        if self.module_containers[name]:
            self.add("PY-CACHE", target, f"stores into the module-level weak-keyed {name!r} from a function: results cached on the identity of objects")
        elif self._identity_keyed(target.slice):
            self.add("PY-CACHE", target, f"stores into the module-level {name!r} keyed on data_ptr()/id()/hash(): results reused across calls")

    def _identity_call(self, node: ast.Call, func: ast.Attribute) -> None:
        if func.attr in ("setdefault", "get", "pop", "__setitem__", "__getitem__", "__contains__", "append", "add", "update"):
            name = self._module_container(func.value)
            if name is not None and any(self._identity_keyed(arg) for arg in node.args):
                self.add("PY-CACHE", node, f"uses the module-level {name!r} with a data_ptr()/id()/hash() key: results reused across calls")
        if func.attr == "data_ptr":
            self._data_ptr_use(node)

    def _identity_key(self, key: ast.AST, node: ast.Subscript, what: str) -> None:
        if isinstance(node.ctx, ast.Load):
            name = self._module_container(node.value)
            if name is not None and self._identity_keyed(key):
                self.add("PY-CACHE", node, f"looks up the module-level {name!r} by data_ptr()/id()/hash(): results reused across calls")

    def _data_ptr_use(self, call: ast.Call) -> None:
        """data_ptr() reaching a comparison, a subscript key, a dict key or a set/dict method; not a kernel argument."""
        current: ast.AST = call
        parent = call._sbp  # type: ignore[attr-defined]
        while parent is not None:
            kind = type(parent)
            if kind is ast.Compare:
                others = [n for n in (parent.left, *parent.comparators) if n is not current]
                if all(type(n) is ast.Constant for n in others):
                    return
                self.add("PY-PTR-KEY", call, "data_ptr() in a comparison: behaviour keyed on the identity of the inputs")
                return
            if kind is ast.Subscript:
                if parent.slice is current:
                    self.add("PY-PTR-KEY", call, "data_ptr() used as a key: results keyed on the identity of the inputs")
                return
            if kind is ast.Dict:
                if any(key is current for key in parent.keys):
                    self.add("PY-PTR-KEY", call, "data_ptr() used as a dict key: results keyed on the identity of the inputs")
                return
            if kind is ast.Call:
                func = parent.func
                if type(func) is ast.Attribute and func.attr in ("get", "setdefault", "pop", "add", "discard", "__contains__",
                                                                 "__getitem__", "__setitem__", "count", "index", "remove") and current in parent.args:
                    self.add("PY-PTR-KEY", call, f"data_ptr() passed to .{func.attr}(): results keyed on the identity of the inputs")
                    return
                name = self.qualname(func)
                if name in ("builtins.int", "builtins.hex", "builtins.tuple", "builtins.frozenset", "builtins.str") and current in parent.args:
                    current, parent = parent, parent._sbp  # type: ignore[attr-defined]
                    continue
                if name == "builtins.hash":
                    self.add("PY-PTR-KEY", call, "hash of data_ptr(): results keyed on the identity of the inputs")
                return
            if kind in (ast.Tuple, ast.List, ast.Set, ast.keyword):
                if kind is ast.Set:
                    self.add("PY-PTR-KEY", call, "data_ptr() in a set: remembers the identity of the inputs")
                    return
                current, parent = parent, parent._sbp  # type: ignore[attr-defined]
                continue
            if kind is ast.BinOp and isinstance(parent.op, (ast.Add, ast.Sub)):
                current, parent = parent, parent._sbp  # type: ignore[attr-defined]
                continue
            return

    def _on_compare(self, node: ast.Compare) -> None:
        for op, right in zip(node.ops, node.comparators):
            if type(op) in (ast.In, ast.NotIn):
                name = self._module_container(right)
                if name is not None and self._identity_keyed(node.left):
                    self.add("PY-CACHE", node, f"checks the module-level {name!r} for a data_ptr()/id()/hash() key: results reused across calls")

    def _on_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for decorator in node.decorator_list:
            target = decorator.func if type(decorator) is ast.Call else decorator
            if self.qualname(target) in ("functools.lru_cache", "functools.cache", "functools.cached_property"):
                self._check_cached_function(node, decorator)

    def _check_cached_function(self, function: ast.FunctionDef | ast.AsyncFunctionDef, where: ast.AST) -> None:
        args = function.args
        params = [a for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg) if a is not None]
        names = {a.arg for a in params} - {"self", "cls"}
        tensorish: set[str] = set()
        for param in params:
            if param.annotation is not None and any(
                (type(n) is ast.Name and n.id == "Tensor") or (type(n) is ast.Attribute and n.attr == "Tensor")
                or (type(n) is ast.Constant and isinstance(n.value, str) and "Tensor" in n.value)
                for n in ast.walk(param.annotation)
            ):
                tensorish.add(param.arg)
        for sub in ast.walk(function):
            if type(sub) is ast.Attribute and type(sub.value) is ast.Name and sub.value.id in names and sub.attr in _TENSOR_ATTRS:
                tensorish.add(sub.value.id)
        if tensorish:
            listed = ", ".join(sorted(tensorish))
            self.add("PY-CACHE", where, f"lru_cache/cache on {function.name}() which takes tensors ({listed}): results cached across calls")


def _assigned(value: ast.AST) -> bool:
    """Whether `value` is the value of an assignment statement (`x = value`, `a, x = b, value`)."""
    parent = value._sbp  # type: ignore[attr-defined]
    while type(parent) in (ast.Tuple, ast.List):
        parent = parent._sbp
    return type(parent) in (ast.Assign, ast.AnnAssign)


def _is_false(node: ast.AST | None) -> bool:
    return type(node) is ast.Constant and node.value in (False, 0, None, "highest", "ieee") and node.value is not True


# functions that read a path (argument index, keyword)
_READ_FUNCS: dict[str, tuple[int, str | None]] = {
    "os.listdir": (0, "path"), "os.scandir": (0, "path"), "os.walk": (0, "top"), "os.fwalk": (0, "top"),
    "glob.glob": (0, "pathname"), "glob.iglob": (0, "pathname"), "torch.load": (0, "f"), "numpy.load": (0, "file"),
    "numpy.fromfile": (0, "file"), "numpy.loadtxt": (0, "fname"), "numpy.genfromtxt": (0, "fname"),
    "safetensors.torch.load_file": (0, "filename"), "safetensors.safe_open": (0, "filename"), "safetensors.numpy.load_file": (0, "filename"),
    "importlib.util.spec_from_file_location": (1, "location"), "importlib.machinery.SourceFileLoader": (1, "path"),
    "importlib.machinery.SourcelessFileLoader": (1, "path"), "linecache.getline": (0, "filename"), "linecache.getlines": (0, "filename"),
    "linecache.updatecache": (0, "filename"), "inspect.getsource": (99, None), "os.readlink": (0, "path"),
    "pathlib.Path.read_text": (0, None), "pathlib.Path.read_bytes": (0, None), "os.stat": (0, "path"), "os.lstat": (0, "path"),
}
# functions that write; checked here for paths outside the solution (the rule itself comes from the ban table)
_PATH_WRITE_FUNCS: dict[str, tuple[int, str | None]] = {
    "torch.save": (1, "f"), "numpy.save": (0, "file"), "numpy.savez": (0, "file"), "numpy.savetxt": (0, "fname"),
    "os.remove": (0, "path"), "os.unlink": (0, "path"), "os.rename": (1, "dst"), "os.replace": (1, "dst"),
    "os.makedirs": (0, "name"), "os.mkdir": (0, "path"), "os.symlink": (1, "dst"), "os.chdir": (0, "path"),
    "shutil.copy": (1, "dst"), "shutil.copyfile": (1, "dst"), "shutil.copytree": (1, "dst"), "shutil.rmtree": (0, "path"),
    "shutil.move": (1, "dst"), "safetensors.torch.save_file": (1, "filename"),
}


def _tops(names: Iterable[str]) -> set[str]:
    return {name.split(".", 1)[0] for name in names}


# Top-level names of library modules: every standard-library module, every module a table of this file names (banned,
# allowed, sensitive, aliased, read/write functions, configuration, ...), and the libraries a solution or the harness
# builds on. A solution's own file under one of these names is not taken for the solution's module (_import_binding)
# and is reported itself (PY-SHADOW).
_LIBRARY_NAMES: frozenset[str] = frozenset(
    _STDLIB | _KNOWN_LIBRARIES | _MORE_LIBRARIES | _tops(_SENSITIVE) | _tops(_BANS) | _tops(_ALLOWED) | set(_MODULE_ALIASES)
    | set(_MODULE_ALIASES.values()) | _tops(_CONFIG_OK) | _tops(_PRECISION_FLAGS) | _tops(_CONTAINER_CALLS)
    | _tops(_WRITERS) | _tops(_IDENTITY_FUNCS) | _tops(_CACHE_DECORATORS) | _tops(_DYNAMIC_IMPORTS) | _tops(_YAML_LOADS)
    | _tops(_YAML_SAFE_LOADERS) | _tops(_PATH_CONSTANTS) | _tops(_READ_FUNCS) | _tops(_PATH_WRITE_FUNCS)
)
