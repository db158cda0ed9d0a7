"""C / C++ / CUDA rules: token and regex level, on comment-stripped source.

Three views of one file share offsets (so one line table serves all):
- ``code``: comments blanked, string and char literals kept (for checks that read them: fopen modes,
  asm templates, include paths, blobs in strings);
- ``bare``: also the contents of literals and #include lines blanked (for token rules, so that
  ``TORCH_CHECK(ok, "do not call system()")`` is not a call);
- ``strings``: every string literal (adjacent literals merged, C escapes decoded) with its offset.
"""

from __future__ import annotations

import bisect
import itertools
import re

from solbench.bench.guards._bans import REACH_NAMES, banned_module
from solbench.bench.guards._model import REJECT, RULES, Collector, Finding, path_escape_reason, text_blob, text_opaque, SYSTEM_PATH

_LEX = re.compile(  # the lookahead lets the engine skip quickly to where a literal or comment can start
    r"""(?=[/"'uULR])(?:(?P<lc>//[^\n]*)
      | (?P<bc>/\*.*?(?:\*/|\Z))
      | (?P<raw>(?:u8|[uUL])?R"(?P<delim>[^()\\\s"]{0,16})\()
      | (?P<str>(?:u8|[uUL])?"(?P<sbody>(?:\\.|[^"\\\n])*)"?)
      | (?P<chr>'(?:\\.|[^'\\\n]){1,8}'))
    """,
    re.S | re.X,
)
_NOT_NEWLINE = re.compile(r"[^\n]")
_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,8}|[0-7]{1,3}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v", "\n": ""}
_INCLUDE = re.compile(r"(?m)^[ \t]*#[ \t]*include[ \t]*([<\"])([^>\"\n]*)[>\"][^\n]*")
_CALL_AFTER = re.compile(r"\s*\(")
_PAREN_OR_SEMICOLON = re.compile(r"[();]")
ARGUMENT_SCAN_LIMIT = 20_000_000  # ten times the largest source read: legitimate code reads each argument list about once
_QUALIFIER = re.compile(r"(\w*)\s*::\s*$")


def _blank(text: str) -> str:
    return " " * len(text) if "\n" not in text else _NOT_NEWLINE.sub(" ", text)


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body

    def one(match: re.Match[str]) -> str:
        esc = match.group(1)
        head = esc[0]
        if head == "x" and len(esc) > 1:
            return chr(int(esc[1:], 16) & 0xFF)
        if head in "uU" and len(esc) > 1:
            try:
                return chr(int(esc[1:], 16))
            except ValueError:
                return ""
        if head in "01234567":
            return chr(int(esc, 8) & 0xFF)
        return _SIMPLE_ESCAPES.get(esc, esc)

    return _ESCAPE.sub(one, body)


class _Source:
    def __init__(self, text: str):
        self.text = text
        code: list[str] = []
        bare: list[str] = []
        pieces: list[tuple[int, int, str]] = []  # (start, end, decoded content) of each literal
        last = 0
        search = _LEX.search
        match = search(text, 0)
        while match is not None:
            start, end = match.span()
            body_start = body_end = -1
            if match.group("raw") is not None:
                # the body runs to )delim" (found with str.find: linear even for hostile input), or to the end
                body_start = end
                close = text.find(")" + match.group("delim") + '"', end)
                body_end = len(text) if close < 0 else close
                end = len(text) if close < 0 else close + len(match.group("delim")) + 2
            between = text[last:start]
            code.append(between)
            bare.append(between)
            token = text[start:end]
            if match.group("lc") is not None or match.group("bc") is not None:
                blank = _blank(token)
                code.append(blank)
                bare.append(blank)
            elif match.group("raw") is not None:
                code.append(token)
                inner_start, inner_end = body_start - start, body_end - start
                bare.append(token[:inner_start] + _blank(token[inner_start:inner_end]) + token[inner_end:])
                pieces.append((start, end, text[body_start:body_end]))
            elif match.group("str") is not None:
                code.append(token)
                body_start = match.start("sbody") - start
                body_end = match.end("sbody") - start
                bare.append(token[:body_start] + " " * (body_end - body_start) + token[body_end:])
                pieces.append((start, end, _unescape(match.group("sbody"))))
            else:  # char literal
                code.append(token)
                bare.append(token[0] + " " * (len(token) - 2) + token[-1])
            last = end
            match = search(text, end)
        code.append(text[last:])
        bare.append(text[last:])
        self.code = "".join(code)
        bare_text = "".join(bare)
        self.includes: list[tuple[int, str, str]] = []
        for match in _INCLUDE.finditer(self.code):
            self.includes.append((match.start(), match.group(1), match.group(2)))
        self.bare = _INCLUDE.sub(lambda m: " " * len(m.group()), bare_text) if self.includes else bare_text
        # adjacent literals ("ab" "cd") are one string, as the compiler reads them
        self.strings: list[tuple[int, int, str]] = []
        for start, end, content in pieces:
            if self.strings and not self.bare[self.strings[-1][1]:start].strip():
                prev_start, _, prev_content = self.strings[-1]
                self.strings[-1] = (prev_start, end, prev_content + content)
            else:
                self.strings.append((start, end, content))
        self._string_starts = [s[0] for s in self.strings]
        self._newlines = [m.start() for m in re.finditer("\n", text)]
        self.lower = self.code.lower()
        self._closes: dict[int, int] | None = None
        self.scanned = 0  # characters of call arguments read (call_args)

    def in_define(self, offset: int) -> bool:
        """Whether the offset is on a #define line (continuation lines included)."""
        start = self.code.rfind("\n", 0, offset) + 1
        while start > 1 and self.code[start - 2] == "\\":
            start = self.code.rfind("\n", 0, start - 1) + 1
        return _DEFINE_LINE.match(self.code, start) is not None

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._newlines, offset - 1) + 1

    def strings_between(self, start: int, end: int) -> list[str]:
        first = bisect.bisect_left(self._string_starts, start)
        out = []
        for index in range(first, len(self.strings)):
            s_start, _, content = self.strings[index]
            if s_start >= end:
                break
            out.append(content)
        return out

    def closing(self, open_at: int, limit: int = 20000) -> int:
        """Offset of the parenthesis that closes the one at `open_at` (in bare), or -1: none within `limit`
        characters, or a ';' directly inside it (not a call's argument list)."""
        if self._closes is None:
            self._closes = self._match_parentheses()
        close = self._closes.get(open_at, -1)
        return close if 0 <= close < open_at + limit else -1

    def _match_parentheses(self) -> dict[int, int]:
        """Every '(' of bare with its ')' (-1 where a ';' lies directly inside it or none closes it), in one
        pass: looking each call's end up by scanning made a file of many unclosed calls quadratic."""
        closes: dict[int, int] = {}
        stack: list[int] = []
        for match in _PAREN_OR_SEMICOLON.finditer(self.bare):
            ch, index = match.group(), match.start()
            if ch == "(":
                stack.append(index)
                closes[index] = -1
            elif ch == ";":
                if stack:
                    closes[stack[-1]] = -2  # stays unmatched, whatever closes it later
            elif stack:
                opened = stack.pop()
                if closes[opened] == -1:
                    closes[opened] = index
        return {key: value if value >= 0 else -1 for key, value in closes.items()}

    def call_args(self, name_end: int) -> tuple[int, list[str]] | None:
        """(offset of '(', arguments as code text split at top-level commas) of a call whose name ends at name_end."""
        match = _CALL_AFTER.match(self.bare, name_end)
        if not match:
            return None
        open_at = match.end() - 1
        close = self.closing(open_at)
        if close < 0:
            return None
        self.scanned += close - open_at
        if self.scanned > ARGUMENT_SCAN_LIMIT:  # nested calls, each read whole: fail closed rather than go quadratic
            raise ValueError(f"more than {ARGUMENT_SCAN_LIMIT} characters of call arguments read")
        args, depth, begin = [], 0, open_at + 1
        for index in range(open_at + 1, close):
            ch = self.bare[index]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            elif ch == "," and depth == 0:
                args.append(self.code[begin:index])
                begin = index + 1
        args.append(self.code[begin:close])
        return open_at, args


# --- token rules -------------------------------------------------------------------------------------
# form: "any" (every occurrence, member access included), "name" (not a member access: x.name / x->name),
# "free" (a call, not a member, qualified at most by std:: or ::), "std" (needs std::, or a declaration
# of a variable when unqualified)
_T = {}


def _tokens(rule: str, form: str, message: str, *names: str) -> None:
    for name in names:
        _T[name] = (rule, form, message)


_tokens("CPP-PROC", "free", "starts a process", "system", "fork", "vfork")
_tokens("CPP-PROC", "name", "starts a process", "popen", "_popen", "execl", "execlp", "execle", "execv", "execvp", "execvpe", "execve", "fexecve", "posix_spawn", "posix_spawnp")
_tokens("CPP-DLOPEN", "name", "loads a shared library or looks up a symbol at run time", "dlopen", "dlmopen", "dlsym", "dlvsym", "LoadLibraryA", "LoadLibraryW", "LoadLibraryExA", "LoadLibraryExW", "GetProcAddress")
_tokens("CPP-NET", "free", "opens a network connection", "socket", "connect")
_tokens("CPP-NET", "name", "network access", "getaddrinfo", "gethostbyname", "gethostbyname2", "inet_pton", "curl_easy_init", "curl_easy_perform")
_tokens("CPP-THREAD", "std", "starts a host thread", "thread", "jthread", "async")
_tokens("CPP-THREAD", "name", "starts a host thread", "pthread_create", "_beginthreadex", "CreateThread")
_tokens("CPP-SIGNAL", "free", "installs a signal handler, a timer or sends a signal", "signal", "alarm", "raise", "kill", "killpg")
_tokens("CPP-SIGNAL", "name", "installs a signal handler, a timer or sends a signal", "sigaction", "setitimer", "pthread_kill", "timer_create", "ualarm")
_tokens("CPP-EXIT", "free", "ends the process", "exit", "_exit", "_Exit", "quick_exit")
_tokens("CPP-CTOR", "free", "registers code to run when the process exits", "atexit", "at_quick_exit")
_tokens("CPP-SYSCALL", "name", "raw system call or process control", "syscall", "ptrace", "prctl", "process_vm_readv", "process_vm_writev")
_tokens("CPP-FILE-WRITE", "free", "changes the file system", "unlink", "rmdir", "mkdir", "chdir", "creat", "symlink", "rename", "chmod", "chown")
_tokens("CPP-FILE-WRITE", "name", "changes the file system", "unlinkat", "renameat", "mkdirat", "ftruncate")
_tokens("CPP-FILE-WRITE", "std", "opens a file for writing", "ofstream", "fstream", "wofstream", "basic_ofstream", "basic_fstream")
_tokens("CPP-FILE-READ", "std", "opens a file for reading", "ifstream", "wifstream", "basic_ifstream")
_tokens("CPP-ENV", "name", "writes the process environment", "setenv", "putenv", "unsetenv", "clearenv", "_putenv")
_tokens("CPP-ENV-READ", "name", "reads the process environment", "getenv", "secure_getenv", "_dupenv_s")
_tokens("CPP-L2", "any", "L2 persistence: data kept in L2 survives the harness's L2 flush",
        "accessPolicyWindow", "cudaAccessPolicyWindow", "CUaccessPolicyWindow", "cudaLimitPersistingL2CacheSize",
        "CU_LIMIT_PERSISTING_L2_CACHE_SIZE", "cudaCtxResetPersistingL2Cache", "cuCtxResetPersistingL2Cache",
        "cudaAccessPropertyPersisting", "CU_ACCESS_PROPERTY_PERSISTING", "cudaStreamAttributeAccessPolicyWindow",
        "CU_STREAM_ATTRIBUTE_ACCESS_POLICY_WINDOW", "cudaLaunchAttributeAccessPolicyWindow",
        "CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW", "cudaKernelNodeAttributeAccessPolicyWindow",
        "CU_KERNEL_NODE_ATTRIBUTE_ACCESS_POLICY_WINDOW", "cudaStreamSetAttribute", "cuStreamSetAttribute")
_tokens("CPP-PRECISION", "any", "flips torch's global precision flags", "setAllowTF32CuBLAS", "setAllowTF32CuDNN",
        "setAllowFP16ReductionCuBLAS", "setAllowBF16ReductionCuBLAS", "setAllowFP16AccumulationCuBLAS",
        "setFloat32MatmulPrecision", "setFloat32Precision")
_tokens("CPP-MODLOAD", "any", "loads a foreign binary", "cuModuleLoad", "cuModuleLoadData", "cuModuleLoadDataEx",
        "cuModuleLoadFatBinary", "cuLibraryLoadData", "cuLibraryLoadFromFile", "cudaLibraryLoadData",
        "cudaLibraryLoadFromFile", "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__fatbinwrap",
        "cuLinkAddData", "cuLinkAddFile", "cudaModuleLoadData")
_tokens("CPP-PROFILER", "any", "controls the profiler the timing relies on", "cudaProfilerStart", "cudaProfilerStop",
        "cuProfilerStart", "cuProfilerStop", "cuProfilerInitialize")
_tokens("CPP-DEVICE", "any", "controls the GPU through NVML", "nvmlDeviceResetGpuLockedClocks",
        "nvmlDeviceResetMemoryLockedClocks", "nvmlDeviceResetApplicationsClocks")
_tokens("CPP-PYTHON", "any", "runs Python code from C++", "Py_CompileString", "Py_CompileStringExFlags",
        "Py_CompileStringObject", "PyEval_EvalCode", "PyEval_EvalCodeEx", "PySys_SetObject", "PyImport_ExecCodeModule",
        "PyImport_ExecCodeModuleEx", "PyMarshal_ReadObjectFromString", "PyObject_SetAttrString", "PyObject_GenericSetAttr")
# The Python C API that reaches the objects of the harness (the worker, its timer) from an extension: what
# the Python rules refuse as PY-INTROSPECT (frames, gc, sys.modules) and PY-PATCH, reached from C++.
_REACH = "reaches the interpreter's frames, threads, modules or objects from C++"
_tokens("CPP-INTROSPECT", "any", _REACH,
        "PyEval_GetFrame", "PyEval_GetLocals", "PyEval_GetGlobals", "PyEval_GetBuiltins", "PyEval_GetFrameLocals",
        "PyEval_GetFrameGlobals", "PyEval_GetFrameBuiltins", "PyEval_SetTrace", "PyEval_SetProfile", "PyEval_SetTraceAllThreads",
        "PyEval_SetProfileAllThreads", "PyThreadState_Get", "PyThreadState_GetUnchecked", "PyThreadState_GetFrame",
        "PyThreadState_GetDict", "PyThreadState_Next", "PyGILState_GetThisThreadState", "PyInterpreterState_Get",
        "PyInterpreterState_GetDict", "PyInterpreterState_Head", "PyInterpreterState_Main", "PyInterpreterState_Next",
        "PyInterpreterState_ThreadHead", "PySys_AddAuditHook", "PySys_GetObject", "PySys_GetAttr", "PySys_GetAttrString",
        "PySys_GetOptionalAttr", "PySys_GetOptionalAttrString", "PyImport_GetModuleDict", "PyImport_GetModule",
        "PyImport_AddModule", "PyImport_AddModuleObject", "PyImport_AddModuleRef", "PyImport_Import", "PyImport_ReloadModule",
        "PyObject_SetAttr", "PyObject_DelAttr", "PyObject_DelAttrString", "PyObject_GetAttr", "PyObject_GenericSetDict",
        "PyObject_GenericGetDict", "PyModule_GetDict", "PyType_GetDict", "PyException_GetTraceback", "PyTraceBack_Here",
        "PyErr_Fetch", "PyErr_GetRaisedException", "PyErr_GetHandledException", "PyErr_GetExcInfo", "PyCell_Get", "PyCell_Set",
        "PyMethod_Self", "PyMethod_Function", "PyInstanceMethod_Function")
# the same reached by name (.attr("f_back"), a string looked up at run time) or through CPython's structs: a frame's or
# traceback's fields, a type's dict and attribute slots, a builtin function's method table (rewriting ml_meth swaps
# the C function behind time.perf_counter)
_tokens("CPP-INTROSPECT", "any", _REACH, *sorted(REACH_NAMES), "tp_dict", "tp_setattro", "tp_getattro", "tp_dictoffset",
        "Py_SET_TYPE", "m_ml", "ml_meth")
_PREFIXES = (("cupti", ("CPP-PROFILER", "any", "CUPTI calls control the profiler the timing relies on")),
             ("PyFrame_", ("CPP-INTROSPECT", "any", _REACH)),
             ("PyFunction_", ("CPP-INTROSPECT", "any", _REACH)),
             ("PyCode_", ("CPP-INTROSPECT", "any", _REACH)),
             ("PyUnstable_", ("CPP-INTROSPECT", "any", _REACH)),
             ("PyGC_", ("CPP-INTROSPECT", "any", _REACH)),
             ("_Py", ("CPP-INTROSPECT", "any", "CPython's private API: " + _REACH)),
             ("PyRun_", ("CPP-PYTHON", "any", "runs Python code from C++")),
             ("nvmlDeviceSet", ("CPP-DEVICE", "any", "controls the GPU through NVML")))
_FILE_OPEN = {"fopen", "fopen64", "freopen", "_wfopen", "fdopen", "open", "open64", "openat"}

_PASTE_CHAIN = re.compile(r"\w+(?:\s*##\s*\w+)+")
_PASTE_GLUE = re.compile(r"\s*##\s*")
_PASTING_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([\w\s,]*)\)([^\n]*##[^\n]*)$", re.M)
_ADDRESS_BEFORE = re.compile(r"(?:(?<!&)&|(?<![=!<>])=|\breturn)\s*(?:::|std::)?\s*$")
_DEFINE_LINE = re.compile(r"[ \t]*#[ \t]*define\b")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_TOKEN_NAMES = frozenset(_T) | _FILE_OPEN
_TOKEN_PREFIXES = tuple(prefix for prefix, _ in _PREFIXES)
_ASM = re.compile(r"(?<![\w$])(?:asm|__asm__|__asm)(?![\w$])((?:\s*(?:volatile|__volatile__|goto|inline)\b)*)\s*\(")
_PTX_FAST = re.compile(r"\b(?:w?gmma|mma|ldmatrix|stmatrix|cp\.async|cp\.reduce\.async|tcgen05|mbarrier|ldmatrix)\b")
_PTX_ANY = re.compile(r"(?:^|[\s;{])(?:[a-z][a-z0-9]*)(?:\.[a-z0-9_:]+)+\s")
_ASM_SYSCALL = re.compile(r"\b(?:syscall|sysenter|int\s+\$?0x80|svc\s+#?0)\b")
_ELF_SEQ = re.compile(
    r"(?:0x0*7f|127|'\\x7f'|'\\177')[uUlL]*\s*,\s*(?:0x0*45|69|'E')[uUlL]*\s*,\s*"
    r"(?:0x0*4c|76|'L')[uUlL]*\s*,\s*(?:0x0*46|70|'F')(?![\w])", re.I)
_FATBIN_SEQ = re.compile(
    r"(?:0x0*50|80)[uUlL]*\s*,\s*(?:0x0*ed|237)[uUlL]*\s*,\s*(?:0x0*55|85)[uUlL]*\s*,\s*(?:0x0*ba|186)(?![\w])"
    r"|(?:0x0*ba|186)[uUlL]*\s*,\s*(?:0x0*55|85)[uUlL]*\s*,\s*(?:0x0*ed|237)[uUlL]*\s*,\s*(?:0x0*50|80)(?![\w])"
    r"|(?:0x0*b1|177)[uUlL]*\s*,\s*(?:0x0*43|67)[uUlL]*\s*,\s*(?:0x0*62|98)[uUlL]*\s*,\s*(?:0x0*46|70)(?![\w])", re.I)
_MAGIC_WORD = re.compile(r"(?<![\w.])(?:0x0*(?:464c457f|7f454c46|ba55ed50|50ed55ba|466243b1|b1436246)|1179403647|3126193488|1180844977)(?![\w.])", re.I)
_MAGIC_WORD_GATE = ("464c457f", "7f454c46", "ba55ed50", "50ed55ba", "466243b1", "b1436246", "1179403647", "3126193488", "1180844977")
_LONG_LIST = re.compile(r"\{\s*(?:[-+]?(?:0[xX][0-9a-fA-F]+|\d+)[uUlL]*\s*,\s*){4096,}")
_INCBIN = re.compile(r"\.incbin\b|^[ \t]*#[ \t]*embed\b", re.M)
_FATBIN_SECTION = re.compile(r"\bsection\s*\(\s*\"\s*\.(?:nv_fatbin|nvFatBinSegment|nv\.fatbin)")
_CTOR = re.compile(
    r"__attribute__\s*\(\([^;{}]{0,200}?\b(?:__)?(?:constructor|destructor)(?:__)?\b"
    r"|\[\[\s*(?:gnu|clang)\s*::\s*(?:constructor|destructor)\b"
    r"|__declspec\s*\(\s*allocate\s*\(\s*\"\.CRT\$X")
_INIT_SECTION = re.compile(r"\bsection\s*\(\s*\"\s*\.(?:init_array|fini_array|preinit_array|ctors|dtors)")
_PTR_KEY_MAP = re.compile(
    r"(?<![\w$])(?:std::)?(?:unordered_map|map|unordered_set|set|unordered_multimap|multimap|flat_map|flat_set)\s*<\s*"
    r"(?:const\s+)?(?:(?:std::)?u?intptr_t\b|[\w:]+(?:\s*<[^<>;]*>)?\s*(?:const\s*)?\*|(?:std::)?(?:pair|tuple)\s*<[^<>;]*\*)")
# `static T* name =` / `static uintptr_t last_ptr;` (type and name separated by '*' or spaces: no ambiguous split)
_STATIC_PTR = re.compile(r"\bstatic\s+(?:thread_local\s+)?(?:const\s+)?[\w:]+(\s*\*\s*(?:const\s+)?|\s+)(\w+)\s*[=;]")
_DATA_PTR = r"data_ptr\s*(?:<[^<>;()]*>)?\s*\(\s*\)"
_PTR_COMPARE = re.compile(
    _DATA_PTR + r"\s*(?:==|!=)(?!\s*(?:nullptr|NULL|0)\b)"
    r"|(?<!nullptr)(?<!nullptr )(?<!NULL)(?<!NULL )(?:==|!=)\s*(?:\(\s*(?:const\s+)?[\w:]+\s*\*?\s*\)\s*)?(?:(?:static_cast|reinterpret_cast)\s*<[^<>;]*>\s*\(\s*)?[\w.\->:\[\]]*" + _DATA_PTR)
_PTR_SUBSCRIPT = re.compile(r"[\w\])]\s*\[[^\[\]\n;{}]{0,120}?" + _DATA_PTR)
_PTR_LOOKUP = re.compile(r"\.(?:find|count|emplace|try_emplace|contains|insert_or_assign|at)\s*\(\s*[^;(){}]{0,80}?" + _DATA_PTR)
_COMPARE_AFTER = re.compile(r"\s*(?:==|!=)\s*([\w.\->:()\[\]]+)")
_COMPARE_BEFORE = re.compile(r"([\w.\->:()\[\]]+)\s*(?:==|!=)\s*$")
_MAP_GATE = re.compile(r"(?:map|set)\s*<")
_FILESYSTEM = re.compile(r"(?<![\w$])(?:std::)?(?:experimental::)?filesystem::(\w+)|(?<![\w$:])fs::(\w+)")
_FS_WRITES = {"remove", "remove_all", "rename", "copy", "copy_file", "copy_symlink", "create_directory", "create_directories",
              "create_symlink", "create_directory_symlink", "create_hard_link", "resize_file", "permissions", "last_write_time",
              "current_path"}
_PYBIND_EXEC = re.compile(r"(?<![\w$])(?:py|pybind11)\s*::\s*(?:exec|eval|eval_file)\s*[<(]")
_PYBIND_REACH = re.compile(r"(?<![\w$])(?:py|pybind11)\s*::\s*(setattr|delattr|globals)\s*\(")
_PYBIND_IMPORT_CALL = re.compile(r"(?<![\w$])(?:(?:py|pybind11)\s*::\s*module_?\s*::\s*import|PyImport_ImportModule\w*)\s*\(")
_NAMED_LOOKUP = re.compile(r"(?<![\w$])(?:(?:py|pybind11)\s*::\s*(?:getattr|hasattr)|PyObject_GetAttrString|PyObject_HasAttrString)\s*\(")
_ATTR_CALL = re.compile(r"(?<![\w$])(\w*)\s*(?:\.|->)\s*attr\s*\(")
_IMPORT_THEN_ATTR = re.compile(r"import\s*\(\s*\"([\w.]+)\"\s*\)\s*\.\s*attr\s*\(\s*\"(\w+)\"")
_BRACE = re.compile(r"[{}]")
_MODULE_VARIABLE = re.compile(r"PYBIND11_MODULE\s*\(\s*\w+\s*,\s*(\w+)")
# Python modules that a kernel's C++ has no use for and that reach frames, objects or the import system
_CPP_IMPORT_BANS = frozenset({"sys", "gc", "inspect", "traceback", "threading", "_thread", "builtins", "importlib", "types",
                              "weakref", "faulthandler", "tracemalloc", "atexit", "signal"})  # (solbench, __main__: banned_module)
_WRITE_FLAGS = re.compile(r"\bO_(?:WRONLY|RDWR|CREAT|TRUNC|APPEND)\b")
_STRING_LITERAL = re.compile(r"\"((?:\\.|[^\"\\\n])*)\"")
_NET_HEADERS = re.compile(r"^(?:sys/socket\.h|netinet/|arpa/inet\.h|netdb\.h|curl/|sys/un\.h|linux/if_)")
_CUPTI_HEADER = re.compile(r"^cupti")
_NVML_HEADER = re.compile(r"^nvml\.h$")
_NAMESPACE_OPEN = re.compile(r"(?:\bnamespace(?:\s+[\w:]+)?(?:\s+__attribute__\s*\(\([^)]*\)\))?|\bextern\s+\"\s*\")\s*$")


def analyze_cpp(source: str, path: str) -> list[Finding]:
    """Findings of C, C++ and CUDA sources (rules CPP-*)."""
    return _analyze_cpp(source, path, 0)


MAX_SOURCE_CHARS = 2_000_000


def _analyze_cpp(source: str, path: str, line_offset: int) -> list[Finding]:
    out = Collector(path, line_offset)
    if len(source) > MAX_SOURCE_CHARS:
        out.add("ANALYZER-LIMIT", 1, f"{len(source)} characters: too large to analyse (limit {MAX_SOURCE_CHARS})")
        return out.sorted()
    try:
        src = _Source(source)
        _check_includes(src, out)
        _check_tokens(src, out)
        _check_pasted_and_named(src, out)
        _check_asm(src, out)
        _check_blobs(src, out)
        _check_regex_rules(src, out)
        _check_memo(src, out)
        _check_python_reach(src, out)
    except Exception as error:  # fail closed: a file the analyser cannot read is not waved through
        out.add("ANALYZER-LIMIT", 1, f"could not be analysed ({type(error).__name__}: {str(error)[:80]})")
    return out.sorted()


def _check_includes(src: _Source, out: Collector) -> None:
    for offset, _, name in src.includes:
        line = src.line(offset)
        reason = path_escape_reason(name.strip())
        if reason:
            out.add("CPP-PATH-ESCAPE", line, f"#include of {reason}: reads a file outside the solution")
        if _NET_HEADERS.match(name):
            out.add("CPP-NET", line, f"#include <{name}>: network headers have no place in a kernel")
        if _CUPTI_HEADER.match(name):
            out.add("CPP-PROFILER", line, f"#include <{name}>: CUPTI controls the profiler the timing relies on")
        if _NVML_HEADER.match(name):
            out.add("CPP-DEVICE", line, f"#include <{name}>: NVML controls GPU clocks and power")


def _previous(src: _Source, start: int) -> tuple[bool, str | None]:
    """(is a member access, qualifier or None) of the token starting at `start`."""
    pre = src.bare[max(0, start - 48):start].rstrip()
    if pre.endswith(".") or pre.endswith("->"):
        return True, None
    if pre.endswith("::"):
        match = _QUALIFIER.search(pre)
        return False, match.group(1) if match else ""
    return False, None


def _check_tokens(src: _Source, out: Collector) -> None:
    bare = src.bare
    for match in _IDENT.finditer(bare):
        name = match.group()
        if name not in _TOKEN_NAMES and not name.startswith(_TOKEN_PREFIXES):
            continue
        start, end = match.span()
        spec = _named_spec(name)
        member, qualifier = _previous(src, start)
        line = src.line(start)
        if name in _FILE_OPEN:
            if member or (qualifier not in (None, "", "std")):
                continue
            _check_open_call(src, out, name, end, line)
            continue
        if spec is None:
            continue
        rule, form, message = spec
        if form != "any" and member:
            continue
        is_call = _CALL_AFTER.match(bare, end) is not None
        if form == "free":
            if qualifier not in (None, "", "std"):
                continue
            # a call, a function pointer (&name, = name), or a macro that stands for the name
            if not (is_call or _ADDRESS_BEFORE.search(bare, max(0, start - 8), start) or src.in_define(start)):
                continue
        elif form == "std":
            if qualifier == "std":
                pass
            elif qualifier is None and re.match(r"\s*<?[\w\s<>,:*]*?>?\s+[A-Za-z_]\w*\s*[({;]", bare[end:end + 120]) and name != "async":
                pass  # `using namespace std; thread worker(f);`
            else:
                continue
        if rule == "CPP-PRECISION" and _benign_precision(src, name, end):
            continue
        if rule in ("CPP-FILE-WRITE", "CPP-FILE-READ") and form == "std":
            _check_stream_path(src, out, end, line)
        out.add(rule, line, f"{name}: {message}")


def _named_spec(name: str) -> tuple[str, str, str] | None:
    return _T.get(name) or next((spec for prefix, spec in _PREFIXES if name.startswith(prefix)), None)


def _pasted_by_macros(bare: str, limit: int = 2000) -> list[tuple[int, str, tuple[str, str, str]]]:
    """(offset, name, rule) of names that function-like macros build by pasting their arguments (#define CAT(a, b)
    a##b, then CAT(PyEval_Get, Frame)): each invocation's arguments substituted into the macro's body, the pastes
    joined. Invocations read: `limit` at most (the rest of a file that pastes more is not read)."""
    found = []
    for count, macro in enumerate(_PASTING_MACRO.finditer(bare)):
        if count == 64:  # every macro is a pass over the file: fail closed rather than go quadratic
            raise ValueError("more than 64 macros that paste tokens")
        name, parameters, body = macro.group(1), [p.strip() for p in macro.group(2).split(",")], macro.group(3)
        for invocation in itertools.islice(re.finditer(rf"(?<![\w$]){re.escape(name)}\s*\(([^()]*)\)", bare), limit):
            arguments = [a.strip() for a in invocation.group(1).split(",")]
            values = dict(zip(parameters, arguments))
            expanded = re.sub(r"\w+", lambda m: values.get(m.group(), m.group()), body)
            for chain in _PASTE_CHAIN.finditer(expanded):
                pasted = _PASTE_GLUE.sub("", chain.group())
                spec = _named_spec(pasted)
                if spec is not None:
                    found.append((invocation.start(), pasted, spec))
    return found


def refused_names(text: str) -> list[str]:
    """The identifiers in `text` that a rule refuses wherever they stand (a -D flag's macro body: `-DCALL=system`
    makes `CALL("...")` a call to system that no token rule sees in the source)."""
    found = []
    for name in dict.fromkeys(_IDENT.findall(text)):
        spec = _named_spec(name)
        if spec is not None and RULES[spec[0]][0] == REJECT:
            found.append(f"{name} ({spec[0]})")
    return found


def _check_pasted_and_named(src: _Source, out: Collector) -> None:
    """Names built by token pasting (sy##stem) and distinctive API names held in strings (cuGetProcAddress("...")."""
    if "##" in src.bare:
        for match in _PASTE_CHAIN.finditer(src.bare):
            name = _PASTE_GLUE.sub("", match.group())
            spec = _named_spec(name)
            if spec is not None:
                out.add(spec[0], src.line(match.start()), f"builds {name!r} by token pasting: {spec[2]}")
        for line, name, spec in _pasted_by_macros(src.bare):
            out.add(spec[0], src.line(line), f"builds {name!r} by pasting a macro's arguments: {spec[2]}")
    for start, _, content in src.strings:
        if len(content) < 4 or len(content) > 64:
            continue
        name = content.strip()
        spec = _named_spec(name) if _IDENT.fullmatch(name) else None
        if spec is not None and spec[1] in ("any", "name"):
            out.add(spec[0], src.line(start), f"names {content.strip()!r} in a string (looked up at run time): {spec[2]}")


def _benign_precision(src: _Source, name: str, end: int) -> bool:
    call = src.call_args(end)
    if call is None:
        return False
    args = [arg.strip() for arg in call[1]]
    if not args:
        return False
    if name.startswith("setFloat32"):
        return args[-1].strip('"').strip() in ('highest', 'ieee', 'at::Float32MatmulPrecision::HIGHEST')
    return args[-1] in ("false", "0")


def _literals(text: str) -> list[str]:
    return [m.group(1) for m in _STRING_LITERAL.finditer(text)]


def _check_path_literals(out: Collector, text: str, line: int, what: str) -> None:
    for literal in _literals(text):
        reason = path_escape_reason(literal)
        if reason:
            out.add("CPP-PATH-ESCAPE", line, f"{what} with {reason}: outside the solution")
            return


def _check_open_call(src: _Source, out: Collector, name: str, end: int, line: int) -> None:
    call = src.call_args(end)
    if call is None:
        return
    _, args = call
    path_arg = args[1] if name == "openat" and len(args) > 1 else args[0]
    _check_path_literals(out, path_arg, line, f"{name}()")
    if name in ("open", "open64", "openat"):
        flags = " ".join(args[1:])
        if _WRITE_FLAGS.search(flags):
            out.add("CPP-FILE-WRITE", line, f"{name}() with write/create flags: writes files")
        else:
            out.add("CPP-FILE-READ", line, f"{name}(): reads a file")
        return
    mode_arg = args[1] if len(args) > 1 else ""
    modes = _literals(mode_arg)
    if name == "freopen" or not modes or re.search(r"[wa+]", modes[0]):
        out.add("CPP-FILE-WRITE", line, f"{name}() opens a file for writing (mode {modes[0] if modes else 'not a literal'!r})")
    else:
        out.add("CPP-FILE-READ", line, f"{name}() opens a file for reading")


def _check_stream_path(src: _Source, out: Collector, end: int, line: int) -> None:
    stop = src.bare.find(";", end)
    stop = len(src.bare) if stop < 0 else stop
    _check_path_literals(out, src.code[end:stop], line, "file stream")


def _check_asm(src: _Source, out: Collector) -> None:
    for match in _ASM.finditer(src.bare):
        open_at = match.end() - 1
        close = src.closing(open_at)
        close = close if close > 0 else min(len(src.bare), open_at + 2000)
        strings = src.strings_between(open_at, close)
        template = strings[0] if strings else ""  # adjacent literals are merged: the first string is the template
        line = src.line(match.start())
        if ".incbin" in template:
            out.add("CPP-BLOB", line, "inline asm with .incbin: embeds a binary file")
            continue
        if _ASM_SYSCALL.search(template):
            out.add("CPP-SYSCALL", line, "inline asm issues a system call")
            continue
        volatile = bool(match.group(1).strip())
        summary = " ".join(template.split())[:60]
        extra = ""
        if "%globaltimer" in template or "%clock" in template:
            extra = "; reads a GPU timer"
        if "evict_last" in template or "evict_unchanged" in template or "createpolicy" in template:
            extra += "; sets an L2 eviction priority (may keep data in L2 across the harness's flush)"
        if _PTX_FAST.search(template):
            kind = "PTX inline assembly (mma/ldmatrix/cp.async family)" + ("" if volatile else ", not volatile")
            out.add("CPP-ASM", line, f"{kind}: {summary!r}; common in fast kernels, reviewed by hand{extra}")
        elif _PTX_ANY.search(" " + template + " "):
            out.add("CPP-ASM", line, f"PTX inline assembly: {summary!r}{extra}")
        else:
            out.add("CPP-ASM", line, f"inline assembly that is not recognisable PTX: {summary!r}{extra}")


def _check_blobs(src: _Source, out: Collector) -> None:
    code = src.code
    lower = src.lower
    for regex, gate, what in ((_ELF_SEQ, ("7f", "127", "177"), "a byte array starting with the ELF magic (0x7f 'E' 'L' 'F')"),
                              (_FATBIN_SEQ, ("0xed", "237", "0xb1", "177"), "a byte array with the CUDA fatbin magic"),
                              (_MAGIC_WORD, _MAGIC_WORD_GATE, "an ELF/fatbin magic word")):
        if not any(token in lower for token in gate):
            continue
        for match in regex.finditer(code):
            out.add("CPP-BLOB", src.line(match.start()), f"{what}: an embedded binary image")
    for match in (_INCBIN.finditer(code) if ".incbin" in code or "embed" in code else ()):
        out.add("CPP-BLOB", src.line(match.start()), "embeds a binary file (.incbin / #embed)")
    for match in (_LONG_LIST.finditer(src.bare) if len(src.bare) > 16000 else ()):
        out.add("CPP-OPAQUE", src.line(match.start()), "an initializer list of more than 4096 numbers: opaque data")
    for start, _, content in src.strings:
        if len(content) < 4:
            continue
        kind = text_blob(content)
        line = src.line(start)
        if kind:
            out.add("CPP-BLOB", line, f"a string literal holds {kind}")
            continue
        opaque = text_opaque(content)
        if opaque:
            out.add("CPP-OPAQUE", line, f"a string literal of {opaque}")
        if SYSTEM_PATH.fullmatch(content):
            out.add("CPP-PATH-ESCAPE", line, f"names the system path {content[:60]!r}: outside the solution")


def _scope_depth(bare: str, pos: int) -> int:
    """Braces open at `pos`, not counting namespace and extern "C" braces."""
    stack: list[bool] = []
    for match in re.finditer(r"[{}]", bare[:pos]):
        if match.group() == "{":
            stack.append(not _NAMESPACE_OPEN.search(bare[max(0, match.start() - 120):match.start()]))
        elif stack:
            stack.pop()
    return sum(stack)


def _statement_start(bare: str, pos: int) -> int:
    return max(bare.rfind(";", 0, pos), bare.rfind("{", 0, pos), bare.rfind("}", 0, pos)) + 1


_STATIC_TENSOR_MAP = re.compile(r"\bstatic\s+(?:thread_local\s+)?(?:std\s*::\s*)?(?:unordered_map|map)\s*<[^;{]*?\b(?:torch|at)\s*::\s*Tensor\s*>\s*(\w+)")
_RETURN = re.compile(r"\breturn\b([^;]*);")


def _check_memo(src: _Source, out: Collector) -> None:
    """A static map whose values are tensors, and a return of one of its elements (by subscript, .at(),
    .find()->second or an iterator's ->second): outputs memoised across calls (CPP-MEMO)."""
    code = src.code
    if "static" not in code or "Tensor" not in code:
        return
    for match in _STATIC_TENSOR_MAP.finditer(code):
        name = match.group(1)
        element = re.compile(rf"\b{name}\s*(?:\[|\.\s*at\s*\(|\.\s*find\s*\()|->\s*second\b|\.\s*second\b")
        for returned in _RETURN.finditer(code, match.end()):
            if element.search(returned.group(1)):
                out.add("CPP-MEMO", src.line(returned.start()), f"returns an element of the static tensor map {name!r}: outputs memoised across calls")
                break


def _check_regex_rules(src: _Source, out: Collector) -> None:
    bare, code = src.bare, src.code
    ctor_gate = "constructor" in code or "destructor" in code or "CRT$X" in code
    for regex, gate in ((_CTOR, ctor_gate), (_INIT_SECTION, "section" in code)):
        for match in (regex.finditer(code) if gate else ()):
            out.add("CPP-CTOR", src.line(match.start()), "code that runs when the library is loaded or unloaded")
    for match in (_FATBIN_SECTION.finditer(code) if "section" in code else ()):
        out.add("CPP-MODLOAD", src.line(match.start()), "places data in a fatbin section: registers a foreign binary")
    for match in (_PTR_KEY_MAP.finditer(bare) if _MAP_GATE.search(bare) else ()):
        start = _statement_start(bare, match.start())
        head = bare[start:match.start()]
        if re.search(r"\b(?:static|thread_local)\b", head) or _scope_depth(bare, match.start()) == 0:
            out.add("CPP-CACHE", src.line(match.start()), "a static or global container keyed on pointers: results can be reused across calls")
    static_ptrs = {m.group(2) for m in (_STATIC_PTR.finditer(bare) if "static" in bare else ()) if "*" in m.group(1) or "ptr" in m.group(0)}
    for name in static_ptrs:
        for match in re.finditer(r"(?<![\w.>$])" + re.escape(name) + r"(?![\w$])", bare):
            after = _COMPARE_AFTER.match(bare, match.end())
            before = _COMPARE_BEFORE.search(bare[max(0, match.start() - 80):match.start()])
            other = after.group(1) if after else before.group(1) if before else None
            if other is None or other.strip("()[]") in ("nullptr", "NULL", "0", "0u", "0ull"):
                continue
            out.add("CPP-CACHE", src.line(match.start()), f"compares with the static pointer {name!r}: remembers inputs across calls")
    has_data_ptr = "data_ptr" in bare
    for regex, what in ((_PTR_COMPARE, "data_ptr() in an equality comparison"), (_PTR_SUBSCRIPT, "data_ptr() used as a key"),
                        (_PTR_LOOKUP, "data_ptr() used as a key")):
        for match in (regex.finditer(bare) if has_data_ptr else ()):
            out.add("CPP-PTR-KEY", src.line(match.start()), f"{what}: results can be keyed on the identity of the inputs")
    for match in (_FILESYSTEM.finditer(bare) if "filesystem" in bare or "fs::" in bare else ()):
        member = match.group(1) or match.group(2)
        if match.group(2) and not re.search(r"namespace\s+fs\s*=", bare):
            continue
        line = src.line(match.start())
        if member in _FS_WRITES:
            out.add("CPP-FILE-WRITE", line, f"std::filesystem::{member}: changes the file system")
        else:
            out.add("CPP-FILE-READ", line, f"std::filesystem::{member}: looks at the file system")
        stop = bare.find(";", match.end())
        _check_path_literals(out, code[match.end():stop if stop > 0 else len(code)], line, f"std::filesystem::{member}")
    for match in (_PYBIND_EXEC.finditer(bare) if "exec" in bare or "eval" in bare else ()):
        out.add("CPP-PYTHON", src.line(match.start()), "py::exec/eval runs Python code built at run time")


def _module_bodies(bare: str) -> list[tuple[str, int, int]]:
    """(module variable, start, end) of each PYBIND11_MODULE(name, variable) { ... } body."""
    bodies = []
    for match in itertools.islice(_MODULE_VARIABLE.finditer(bare), 8):  # one per extension; more are not given the exception
        begin, depth, end = bare.find("{", match.end()), 0, len(bare)
        for brace in _BRACE.finditer(bare, max(begin, 0)):
            depth += 1 if brace.group() == "{" else -1
            if depth == 0:
                end = brace.start()
                break
        if begin >= 0:
            bodies.append((match.group(1), begin, end))
    return bodies


def _argument(src: _Source, name_end: int, index: int) -> str | None:
    """The code text of a call's argument `index` (the call's name ends at name_end), or None."""
    call = src.call_args(name_end)
    return call[1][index] if call is not None and len(call[1]) > index else None


def _check_python_reach(src: _Source, out: Collector) -> None:
    """Python reached from C++ beyond the token rules: imports (banned modules: CPP-PYTHON; a computed name or a
    module a kernel has no use for: CPP-INTROSPECT), pybind11's attribute writes and globals, and attributes
    looked up by a computed string (CPP-INTROSPECT). Introspection names in strings are token rules' (REACH_NAMES)."""
    bare, code = src.bare, src.code
    if "py" not in bare and "Py" not in bare and "attr" not in bare:
        return
    for match in _PYBIND_REACH.finditer(bare):
        out.add("CPP-INTROSPECT", src.line(match.start()), f"py::{match.group(1)}: writes attributes or reads the globals of Python objects")
    for regex, what in ((_PYBIND_IMPORT_CALL, "imports a Python module"), (_NAMED_LOOKUP, "looks up an attribute")):
        for match in regex.finditer(bare):
            argument = _argument(src, match.end() - 1, 0 if regex is _PYBIND_IMPORT_CALL else 1)
            literal = _literal(argument)
            line = src.line(match.start())
            if literal is None:
                out.add("CPP-INTROSPECT", line, f"{what} by a computed name: defeats the static checks")
            elif regex is _PYBIND_IMPORT_CALL and (hit := banned_module(literal)):
                out.add("CPP-PYTHON", line, f"imports the Python module {literal!r} from C++: {hit}")
            elif regex is _PYBIND_IMPORT_CALL and literal.split(".")[0] in _CPP_IMPORT_BANS:
                out.add("CPP-INTROSPECT", line, f"imports the Python module {literal!r} from C++: it reaches frames, objects or the import system")
    modules = _module_bodies(bare)
    for match in _ATTR_CALL.finditer(bare):
        open_at = match.end() - 1
        close = src.closing(open_at)
        line = src.line(match.start())
        argument = _argument(src, open_at, 0)
        if argument is not None and _literal(argument) is None:
            out.add("CPP-INTROSPECT", line, ".attr() with a computed name: defeats the static checks")
        given = any(name == match.group(1) and begin < match.start() < end for name, begin, end in modules)
        if close > 0 and re.match(r"\s*=(?!=)", bare[close + 1:close + 4]) and not given:
            out.add("CPP-INTROSPECT", line, ".attr(...) = ...: writes an attribute of a Python object (only a PYBIND11_MODULE's own module may be given attributes)")
    for match in _IMPORT_THEN_ATTR.finditer(code):
        hit = banned_module(f"{match.group(1)}.{match.group(2)}")
        if hit:
            out.add("CPP-INTROSPECT", src.line(match.start()), f"{match.group(1)}.{match.group(2)} from C++: {hit}")


def _literal(argument: str | None) -> str | None:
    """The string an argument is, when it is string literals only (adjacent ones merged), else None."""
    pieces = _literals(argument or "")
    if not pieces or _STRING_LITERAL.sub("", argument or "").strip():
        return None
    return _unescape("".join(pieces))
