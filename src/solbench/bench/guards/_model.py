"""Finding, the rule table, and the detection of binaries embedded in literals (shared by both languages)."""

from __future__ import annotations

import binascii
import re
from dataclasses import dataclass

REJECT = "reject"
WARN = "warn"


@dataclass(frozen=True)
class Finding:
    rule: str  # stable id, e.g. "PY-NET" / "CPP-ASM"
    severity: str  # "reject" or "warn"
    path: str  # the source file (solution-relative path)
    line: int  # 1-based
    message: str  # one line: what was found and why it matters


# rule id -> (severity, one-line description). The README's rule table is generated from this.
RULES: dict[str, tuple[str, str]] = {
    # --- Python (AST; imports, `import x as y`, `from x import y`, assignments of modules,
    #     getattr / importlib.import_module / __import__ with constant strings are resolved) ---
    "PY-NET": (REJECT, "network access (socket, urllib, http, requests, httpx, aiohttp, ftplib, smtplib, ssl, websockets, ...)"),
    "PY-PROC": (REJECT, "starts processes (subprocess, os.system/popen/exec*/spawn*/fork, multiprocessing, pty)"),
    "PY-THREAD": (REJECT, "starts threads that can keep working after the call returns (threading.Thread/Timer, _thread, concurrent.futures)"),
    "PY-SIGNAL": (REJECT, "signal handlers, timers or kills (signal.signal/alarm/setitimer, os.kill)"),
    "PY-EXIT": (REJECT, "ends or hooks the end of the worker process (sys.exit, os._exit, atexit, exit(), raise SystemExit)"),
    "PY-FFI": (REJECT, "foreign code: ctypes, cffi, mmap, torch.ops.load_library, cuModuleLoadData-style loaders of binaries"),
    "PY-DECODE": (REJECT, "decodes or unpacks embedded data (base64, binascii, zlib, bz2, lzma, gzip, marshal, pickle, codecs, bytes.fromhex), "
                          "or deserialises data that runs code (torch.load(weights_only=False), numpy.load(allow_pickle=True), "
                          "yaml.unsafe_load/full_load, yaml.load with a Loader other than SafeLoader/CSafeLoader/BaseLoader, "
                          "ruamel.yaml's YAML(typ=...) other than rt/safe/base and its old load API, jsonpickle; "
                          "python/object, python/name, python/module tags in a YAML data file)"),
    "PY-BLOB": (REJECT, "a literal holds a binary image (ELF/cubin/fatbin) raw, in base64, in hex or as a list of byte values"),
    "PY-OPAQUE": (WARN, "a long opaque literal (base64/hex text, binary bytes or a long byte list) with no recognisable header"),
    "PY-ASM": (WARN, "inline PTX in a Triton kernel (tl.inline_asm_elementwise)"),
    "PY-BUILD-FLAGS": (REJECT, "compiler or linker flags of load/load_inline that bring code, files or tools into the build beyond its sources (-include, -x, -ccbin, -B, -fplugin, -Wl,/-Xlinker, a -D body with a refused C++ token) or that are computed at run time"),
    "PY-EXEC": (REJECT, "runs code built at run time (exec, eval, compile, runpy) or held in a string (timeit, doctest, string annotations evaluated by typing/inspect, logging.config, pkgutil.resolve_name)"),
    "PY-DYNAMIC": (REJECT, "dynamic import with a computed name, computed attribute lookup on os/sys/builtins/importlib/..., or __import__/getattr/attrgetter passed as values (defeats these checks)"),
    "PY-GETATTR": (WARN, "attribute lookup with a computed name on an imported module"),
    "PY-PATCH": (REJECT, "assigns, sets or deletes attributes of modules or classes the solution did not define (monkey-patching), overrides aten kernels"),
    "PY-CONFIG": (WARN, "writes a library's global configuration object (triton.knobs)"),
    "PY-HARNESS": (REJECT, "imports the harness (solbench) or __main__"),
    "PY-SYSMODULES": (REJECT, "touches the import system (sys.modules, sys.meta_path, sys.path_hooks)"),
    "PY-SYSPATH": (WARN, "changes sys.path"),
    "PY-SHADOW": (REJECT, "a solution file named like a library module (os.py, subprocess.py, ctypes/__init__.py, torch/...; at the "
                          "solution's root or beside an entry point in a subfolder, both on sys.path): while the "
                          "solution is imported it stands in for the library in modules imported then; rename it"),
    "PY-INTROSPECT": (REJECT, "inspects or hooks the interpreter: frames (sys._getframe, inspect.stack, f_back/f_globals), settrace/setprofile, debuggers and profilers (bdb, pdb, trace, profile, cProfile), audit hooks, gc.get_objects/get_referrers, such names looked up through operator.attrgetter/methodcaller"),
    "PY-PROFILER": (REJECT, "controls the profiler the timing relies on (CUPTI, torch.profiler.profile, cudaProfilerStart/Stop)"),
    "PY-DEVICE": (REJECT, "controls the GPU through NVML (pynvml): clocks, power, application clocks"),
    "PY-DISPATCH": (WARN, "installs a torch function/dispatch mode that intercepts every torch call"),
    "PY-ENV": (REJECT, "writes the process environment (os.environ[...] =, os.environ.update/setdefault/pop, os.putenv, os.unsetenv)"),
    "PY-ENV-TUNING": (WARN, "sets a library tuning variable before first use (CUBLASLT_WORKSPACE_SIZE, CUBLAS_WORKSPACE_CONFIG, "
                            "TORCH_BLAS_PREFER_CUBLASLT, CUTE_DSL_ARCH, TORCHINDUCTOR_*, PYTORCH_TUNABLEOP_*)"),
    "PY-ENV-READ": (WARN, "reads the process environment (os.environ, os.getenv)"),
    "PY-FILE-WRITE": (REJECT, "writes, moves or deletes files (open for writing, Path.write_*, os.remove/rename/..., shutil, tempfile, torch.save)"),
    "PY-FILE-WRITE-OWN": (WARN, "writes a file inside the solution's own folder (a generated source, a tuning cache)"),
    "PY-FILE-READ": (WARN, "reads files or lists folders other than the solution's own sources"),
    "PY-PATH-ESCAPE": (REJECT, "file access outside the solution: absolute paths, '..', the home folder, above the solution's folder, /proc, /dev, /etc, ..."),
    "PY-MEMO": (REJECT, "the entry function returns a value kept in a module-level container (returned directly, cloned, expanded or "
                        "viewed): outputs memoised across calls, on a scalar input, the shapes or an identity"),
    "PY-STATIC-OUTPUT": (WARN, "the entry function returns a buffer kept in a module-level container that it writes on every call (out=, "
                               "an in-place method), as a replayed CUDA graph's static output is: the run-time checks judge it"),
    "PY-CACHE": (WARN, "caches results across calls: lru_cache/cache on a function taking tensors, module-level containers keyed on data_ptr()/id()/hash()"),
    "PY-PTR-KEY": (WARN, "data_ptr() used as a dict key, a set member or in an equality comparison (identity of inputs)"),
    "PY-PRECISION": (WARN, "flips global precision flags (allow_tf32, set_float32_matmul_precision, reduced-precision reductions); "
                           "under strict the run-time checks judge it (a flag left changed, outputs less accurate than fp32)"),
    "PY-DOWNCAST": (WARN, "casts to a dtype below fp32 (.half(), .bfloat16(), .to(torch.float16), ...); reported under strict, where "
                          "the run-time oracle judges the outputs"),
    "PY-CUDART": (WARN, "calls the CUDA runtime through torch.cuda.cudart() (L2 persistence and profiler calls have rules of their own)"),
    "PY-L2": (REJECT, "L2 persistence (cudaStreamSetAttribute, accessPolicyWindow, cudaLimitPersistingL2CacheSize): data survives the L2 flush"),
    # --- C / C++ / CUDA (token and regex rules on comment-stripped source) ---
    "CPP-ASM": (WARN, "inline assembly (PTX for mma/ldmatrix/cp.async is common in fast kernels; anything else is unusual)"),
    "CPP-SYSCALL": (REJECT, "raw system calls or process control (syscall, ptrace, prctl, syscall instructions in asm)"),
    "CPP-PROC": (REJECT, "starts processes (system, popen, fork, exec*, posix_spawn)"),
    "CPP-DLOPEN": (REJECT, "loads shared libraries or looks up symbols at run time (dlopen, dlsym)"),
    "CPP-NET": (REJECT, "network access (socket, connect, getaddrinfo, socket headers, curl)"),
    "CPP-THREAD": (REJECT, "host threads that can keep working after the call returns (std::thread, std::async, pthread_create)"),
    "CPP-SIGNAL": (REJECT, "signal handlers, timers or kills (signal, sigaction, alarm, setitimer, kill, raise)"),
    "CPP-EXIT": (WARN, "ends the process (exit, _exit, quick_exit): usually error handling, but it kills the worker"),
    "CPP-CTOR": (REJECT, "code that runs at load or exit time (__attribute__((constructor/destructor)), .init_array, atexit)"),
    "CPP-FILE-WRITE": (REJECT, "writes, moves or deletes files (fopen for writing, ofstream, fstream, open with O_WRONLY/O_CREAT, unlink, filesystem writes)"),
    "CPP-FILE-READ": (WARN, "reads files (fopen for reading, ifstream, open, std::filesystem)"),
    "CPP-PATH-ESCAPE": (REJECT, "file access outside the solution: absolute paths, '..', /proc, /dev, /etc, ... (also in #include)"),
    "CPP-ENV": (REJECT, "writes the process environment (setenv, putenv, unsetenv)"),
    "CPP-ENV-READ": (WARN, "reads the process environment (getenv)"),
    "CPP-L2": (REJECT, "L2 persistence (accessPolicyWindow, cudaLimitPersistingL2CacheSize, cudaCtxResetPersistingL2Cache, cudaStreamSetAttribute)"),
    "CPP-MEMO": (REJECT, "returns an element of a static std::map/unordered_map of tensors: outputs memoised across calls"),
    "CPP-PRECISION": (WARN, "flips torch's global precision flags (setAllowTF32CuBLAS, setFloat32MatmulPrecision, ...)"),
    "CPP-BLOB": (REJECT, "an embedded binary image: byte arrays or strings starting with ELF/cubin/fatbin magic, .incbin, #embed"),
    "CPP-OPAQUE": (WARN, "a very long numeric initializer list or opaque string literal"),
    "CPP-MODLOAD": (REJECT, "loads foreign binaries (cuModuleLoadData, cuModuleLoadFatBinary, cuLibraryLoadData, __cudaRegisterFatBinary, .nv_fatbin sections)"),
    "CPP-CACHE": (WARN, "static or global caches keyed on pointers (results reused across calls)"),
    "CPP-PTR-KEY": (WARN, "data_ptr() used as a map key or in an equality comparison (identity of inputs)"),
    "CPP-PROFILER": (REJECT, "controls the profiler the timing relies on (CUPTI, cudaProfilerStart/Stop)"),
    "CPP-DEVICE": (REJECT, "controls the GPU through NVML (clocks, power)"),
    "CPP-INTROSPECT": (REJECT, "reaches the interpreter from C++: frames, thread and interpreter state, module and object dicts (PyEval_GetFrame, PyFrame_*, _Py*, PySys_GetObject), attribute writes (py::setattr, .attr(...) = ), names looked up by a computed string, introspection names (f_back, __dict__, ...)"),
    "CPP-PYTHON": (REJECT, "runs Python code or imports forbidden Python modules from C++ (PyRun_*, py::exec/eval, py::module_::import of banned modules)"),
    # --- any file ---
    "SRC-BINARY": (REJECT, "a source file that is a binary (.so, .o, .cubin, .fatbin, ...) or holds a binary image"),
    "ANALYZER-LIMIT": (REJECT, "the file is too deeply nested or aliased for the static analyser; refused rather than passed unchecked"),
}


def finding(rule: str, path: str, line: int, message: str) -> Finding:
    return Finding(rule, RULES[rule][0], path, max(1, int(line)), " ".join(message.split()))


class Collector:
    """Findings of one file; one per (rule, line)."""

    def __init__(self, path: str, line_offset: int = 0):
        self.path = path
        self.offset = line_offset
        self.items: dict[tuple[str, int], Finding] = {}

    def add(self, rule: str, line: int, message: str) -> None:
        line = line + self.offset
        key = (rule, line)
        if key not in self.items:
            self.items[key] = finding(rule, self.path, line, message)

    def extend(self, findings: list[Finding]) -> None:
        for item in findings:
            self.items.setdefault((item.rule, item.line), item)

    def sorted(self) -> list[Finding]:
        return sorted(self.items.values(), key=lambda f: (f.path, f.line, f.rule))


# --- embedded binaries --------------------------------------------------------------------------------

ELF_MAGIC = b"\x7fELF"
# 0xBA55ED50 is the fatbin header magic (stored little-endian); 0x466243B1 the fatbin wrapper's.
FATBIN_MAGICS = (b"\x50\xed\x55\xba", b"\xba\x55\xed\x50", b"\xb1\x43\x62\x46", b"\x46\x62\x43\xb1")
MAGIC_WORDS = {
    0x464C457F: "an ELF header word", 0x7F454C46: "an ELF header word",
    0xBA55ED50: "the fatbin magic", 0x50ED55BA: "the fatbin magic",
    0x466243B1: "the fatbin wrapper magic", 0xB1436246: "the fatbin wrapper magic",
}
_ELF_TEXT = ELF_MAGIC.decode("latin-1")
_FATBIN_TEXT = tuple(m.decode("latin-1") for m in FATBIN_MAGICS)
_WS = re.compile(r"\s+")
_B64_RUN = re.compile(r"[A-Za-z0-9+/_\-]{16,}")
_HEX_NOISE = re.compile(r"0[xX]|\\[xX]|[\s,;:{}\[\]()'\"]+")
_HEX_RUN = re.compile(r"[0-9a-fA-F]{8,}")
_B64_FULL = re.compile(r"[A-Za-z0-9+/=_\-]+")
_HEX_FULL = re.compile(r"[0-9a-fA-F]+")
_TO_STD_B64 = str.maketrans("-_", "+/")


# Whole headers (magic + the fields a loader checks next): what decoded or unscrambled data must show, so
# that random bytes (decoded identifiers, case-flipped text: "\x7fELF" ^ 0x20 is "_elf") do not look like one.
_STRICT_HEADER = re.compile(
    rb"(?P<elf>\x7fELF[\x01\x02][\x01\x02]\x01)|(?P<fatbin>\x50\xed\x55\xba\x01\x00\x10\x00)|(?P<wrapper>\xb1\x43\x62\x46\x01\x00\x00\x00)")


def strict_binary_kind(data: bytes) -> str | None:
    """What binary image `data` contains, judged on whole headers (ELF ident, fatbin header, fatbin wrapper)."""
    match = _STRICT_HEADER.search(data)
    if match is None:
        return None
    return "an ELF image (cubin or shared object)" if match.lastgroup == "elf" else "a CUDA fatbin"


def binary_kind(data: bytes) -> str | None:
    """What binary image `data` contains, if any (anywhere in it): the 4-byte magic is enough."""
    if ELF_MAGIC in data:
        return "an ELF image (cubin or shared object)"
    for magic in FATBIN_MAGICS:
        if magic in data:
            return "a CUDA fatbin"
    return None


_MAGICS = (ELF_MAGIC, FATBIN_MAGICS[0], FATBIN_MAGICS[2])  # the ones whose whole header _STRICT_HEADER knows
# (scrambled magic, how, key, inverse table), for every single-byte XOR and addition key
_SCRAMBLED: list[tuple[bytes, str, int, bytes]] = []
for _key in range(1, 256):
    _xor = bytes(b ^ _key for b in range(256))
    _add = bytes((b + _key) & 0xFF for b in range(256))
    _sub = bytes((b - _key) & 0xFF for b in range(256))
    for _magic in _MAGICS:
        _SCRAMBLED.append((_magic.translate(_xor), "XOR", _key, _xor))
        _SCRAMBLED.append((_magic.translate(_add), "an added constant", _key, _sub))


def scrambled_kind(data: bytes, limit: int = 65536) -> str | None:
    """A binary image hidden by a single-byte XOR or addition (every key tried on the first `limit` bytes):
    the scrambled magic is looked for with bytes.find, and only its candidates are unscrambled and checked."""
    head = data[:limit]
    if len(head) < 64:
        return None
    for pattern, how, key, inverse in _SCRAMBLED:
        at = head.find(pattern)
        while at >= 0:
            kind = strict_binary_kind(head[at:at + 8].translate(inverse))
            if kind:
                return f"{kind} scrambled with {how} (key 0x{key:02x})"
            at = head.find(pattern, at + 1)
    return None


def byte_sequence_kind(values: list[int]) -> str | None:
    """A list of integers read as bytes (every value 0..255) or as 32-bit words."""
    for value in values:
        if value in MAGIC_WORDS:
            return f"{MAGIC_WORDS[value]} (0x{value:08X})"
    if len(values) >= 4 and all(0 <= v <= 255 for v in values):
        return binary_kind(bytes(values))
    return None


def text_blob(text: str) -> str | None:
    """A description when the text holds a binary image: raw characters, base64 (also url-safe and
    wrapped over lines) or hex (plain, 0x.., \\x.., separated by commas or spaces)."""
    if len(text) < 4:
        return None
    if _ELF_TEXT in text:
        return "an ELF image (cubin or shared object) as raw characters"
    for magic in _FATBIN_TEXT:
        if magic in text:
            return "a CUDA fatbin as raw characters"
    if len(text) < 8:
        return None
    compact = _WS.sub("", text)
    for run in _B64_RUN.finditer(compact):
        chars = run.group().translate(_TO_STD_B64)
        for start in range(4):
            usable = (len(chars) - start) // 4 * 4
            if usable < 8:
                break
            try:
                data = binascii.a2b_base64(chars[start:start + usable])
            except (binascii.Error, ValueError):
                continue
            kind = strict_binary_kind(data)
            if kind:
                return f"{kind} in base64"
    hexed = _HEX_NOISE.sub("", text)
    for run in _HEX_RUN.finditer(hexed):
        digits = run.group()
        for start in (0, 1):
            usable = (len(digits) - start) // 2 * 2
            if usable < 8:
                break
            kind = strict_binary_kind(bytes.fromhex(digits[start:start + usable]))
            if kind:
                return f"{kind} in hex"
    return None


def text_opaque(text: str) -> str | None:
    """A description when a long literal is opaque data rather than text or code."""
    if len(text) < 1024:
        return None
    if text.count(" ") * 100 < len(text):
        compact = _WS.sub("", text)
        if len(compact) >= 1024 and _B64_FULL.fullmatch(compact):
            return f"{len(compact)} characters of base64-like text"
    hexed = _HEX_NOISE.sub("", text)
    if len(hexed) >= 1024 and _HEX_FULL.fullmatch(hexed):
        return f"{len(hexed) // 2} bytes written in hex"
    unprintable = sum(1 for ch in text[:4096] if ord(ch) < 32 and ch not in "\n\r\t" or 127 <= ord(ch) < 160)
    if unprintable * 10 > min(len(text), 4096) * 3:
        return f"{len(text)} characters of binary data"
    return None


def bytes_opaque(data: bytes) -> str | None:
    if len(data) < 512:
        return None
    if len(data) >= 4096:
        return f"{len(data)} bytes"
    unprintable = sum(1 for b in data[:4096] if (b < 32 and b not in (9, 10, 13)) or b >= 127)
    if unprintable * 10 > min(len(data), 4096) * 3:
        return f"{len(data)} bytes of binary data"
    return text_opaque(data.decode("latin-1"))


# Paths of the machine that a solution has no business naming (checked on whole literals).
SYSTEM_PATH = re.compile(r"/(?:proc|sys|etc)(?:/\S*)?|/dev/(?!null$)\S+")


def path_escape_reason(value: str) -> str | None:
    """Why a path literal points outside the solution, or None."""
    if not value:
        return None
    if value.startswith(("/", "\\")):
        return f"absolute path {value[:60]!r}"
    if value.startswith("~"):
        return f"home-folder path {value[:60]!r}"
    if re.match(r"^[A-Za-z]:[\\/]", value):
        return f"absolute path {value[:60]!r}"
    if ".." in re.split(r"[\\/]", value):
        return f"path {value[:60]!r} climbs out with '..'"
    return None
