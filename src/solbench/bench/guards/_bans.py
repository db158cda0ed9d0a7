"""The tables of dotted names that the Python rules judge: what is banned (and its matching, also used for
C++'s py::module_::import), allowed, sensitive, written or read, and the names of library modules."""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Iterable

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
     "builtins.bytes.fromhex", "builtins.bytearray.fromhex", "quopri", "uu", "joblib",
     "torch.package", "numpy.lib.format.read_array")  # a torch.package archive's pickled modules run; .npy with pickles


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
# Standard modules that compile and run a string (or a docstring, or an annotation) they are given: the code
# in it is out of this analysis's sight (timeit's stmt and setup, doctest's examples, string annotations
# evaluated by typing and inspect, logging.config's factories named by strings and its listen() socket)
_ban("PY-EXEC", "runs code held in a string (the code is out of the analysis's sight)", "timeit", "doctest",
     "typing.get_type_hints", "typing.ForwardRef", "typing._eval_type", "inspect.get_annotations", "annotationlib",
     "logging.config", "pkgutil.resolve_name")

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
     "traceback.StackSummary", "_testcapi", "_xxsubinterpreters",
     # debuggers and profilers hook every call (their callbacks get each frame, the harness's included) and run
     # code given as strings; inspect's frame readers and logging's currentframe (sys._getframe by another name)
     "bdb", "pdb", "trace", "profile", "cProfile", "_lsprof", "logging.currentframe", "inspect.getargvalues",
     "inspect.getframeinfo", "inspect.getgeneratorlocals", "inspect.getcoroutinelocals", "inspect.getasyncgenlocals",
     "inspect.getclosurevars", "_testinternalcapi", "_testlimitedcapi", "_testmultiphase")

# attribute names that reach frames, globals or code of others, whatever the object (Python's attribute
# loads; C++'s .attr("...") and string literals)
FRAME_ATTRS = frozenset({"f_back", "f_globals", "f_locals", "f_builtins", "f_code", "f_trace", "tb_frame", "gi_frame", "cr_frame",
                         "ag_frame", "__globals__", "__subclasses__", "__closure__", "__code__", "__builtins__", "gi_code", "cr_code"})

# names that, looked up by a string (C++'s .attr("..."), operator.attrgetter/methodcaller), reach frames, globals,
# object dicts or the import system: FRAME_ATTRS and the functions of sys, gc and inspect that do
REACH_NAMES = FRAME_ATTRS | {"_getframe", "_getframemodulename", "_current_frames", "_current_exceptions", "settrace", "setprofile",
                             "addaudithook", "get_objects", "get_referrers", "get_referents", "currentframe", "__dict__",
                             "__class__", "__self__", "__func__", "__traceback__", "__wrapped__", "__setattr__", "__delattr__",
                             "meta_path", "path_hooks", "__import__", "__loader__"}

_ban("PY-PROFILER", "controls the profiler the timing relies on", "cupti", "cupti_python", "torch.profiler.profile",
     "torch.profiler._KinetoProfile", "torch.autograd.profiler.profile", "torch.autograd.profiler.emit_itt",
     "torch.autograd.profiler._disable_profiler", "torch.autograd.profiler._enable_profiler", "torch._C._autograd",
     "torch._C._profiler", "torch.cuda.profiler")

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

# modules where a computed getattr is as good as an import of anything
_SENSITIVE = {"os", "sys", "builtins", "importlib", "ctypes", "subprocess", "socket", "gc", "inspect", "signal", "io", "shutil",
              "threading", "multiprocessing", "marshal", "pickle", "types", "operator", "_thread", "torch._C", "pathlib",
              "atexit", "codecs", "base64", "zlib", "runpy", "_imp", "traceback", "mmap", "cffi", "functools", "solbench", "yaml"}

# global configuration objects whose attributes a solution may set
_CONFIG_OK = ("torch.backends.", "torch._dynamo.config.", "torch._inductor.config.", "torch._functorch.config.",
              "torch._export.config.", "torch.fx.experimental._config.", "torch._logging.")

# flags whose PyTorch default is True: setting them True changes nothing
_PRECISION_DEFAULT_TRUE = {"torch.backends.cudnn.allow_tf32", "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
                           "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction"}
# library tuning variables that a solution may set before first use (PY-ENV-TUNING, a warning): exact names and prefixes
_ENV_TUNING = {"CUBLASLT_WORKSPACE_SIZE", "CUBLAS_WORKSPACE_CONFIG", "TORCH_BLAS_PREFER_CUBLASLT", "CUTE_DSL_ARCH"}
_ENV_TUNING_PREFIXES = ("TORCHINDUCTOR_", "PYTORCH_TUNABLEOP_")
# dtypes below fp32 that an explicit cast can downcast to (PY-DOWNCAST, reported under strict only)
_DOWNCAST_DTYPES = {"torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn", "torch.float8_e5m2",
                    "torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz", "torch.float8_e8m0fnu", "torch.float4_e2m1fn_x2"}
# cudart entry points that control the profiler the timing relies on
_PROFILER_NAMES = {"cudaProfilerStart", "cudaProfilerStop", "cuProfilerStart", "cuProfilerStop"}

_PRECISION_FLAGS = {
    "torch.backends.cuda.matmul.allow_tf32", "torch.backends.cudnn.allow_tf32",
    "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction",
    "torch.backends.cuda.matmul.allow_fp16_accumulation",
}

_IDENTITY_FUNCS = {"builtins.id", "builtins.hash"}

_BUILTIN_NAMES = frozenset(dir(builtins)) | {"__import__", "__build_class__"}

_CONTAINER_CALLS = {"builtins.dict", "builtins.list", "builtins.set", "collections.OrderedDict", "collections.defaultdict",
                    "collections.deque", "collections.Counter", "weakref.WeakKeyDictionary", "weakref.WeakValueDictionary",
                    "weakref.WeakSet"}

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
        if index >= 1 and part in _PROFILER_NAMES:
            return ("PY-PROFILER", f"{part}: controls the profiler the timing relies on")
    if len(parts) >= 2 and parts[0] == "os" and _OS_PROCESS.fullmatch(parts[1]):
        return ("PY-PROC", "starts or manages a process")
    return None


# tempfile's functions that create a file or folder: the positional index of their dir= argument. Judged where
# called (no dir: the worker's TMPDIR, which the sandbox makes private; a dir: like any other write to it).
_TEMPFILE_DIR_ARG: dict[str, int] = {"tempfile.mkstemp": 2, "tempfile.mkdtemp": 2, "tempfile.TemporaryDirectory": 2,
                                     "tempfile.NamedTemporaryFile": 6, "tempfile.TemporaryFile": 6, "tempfile.SpooledTemporaryFile": 7}

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
