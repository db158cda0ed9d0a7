"""An OS sandbox for the untrusted solution worker: how to start it, not the starting itself.

`plan_sandbox(mode, writable=[...], device=...)` returns a SandboxPlan: an argv prefix (the
sandboxing program and its flags), a scrubbed environment, a preexec function that sets resource
limits, the level that was reached and notes that say what is and is not enforced. The caller
(processes.WorkerProcess) puts the prefix before the worker's command and passes env and
preexec_fn to subprocess.Popen.

Levels, strongest first (mode "auto" takes the strongest that works here, "bwrap" demands the
first, "none" takes none):

- "bubblewrap": bwrap with the whole filesystem read-only, writable binds only for the given paths,
  private empty /tmp, /dev/shm and /run, the user's home hidden (the paths the worker's Python needs
  re-exposed read-only), a minimal /dev plus the GPU's /dev/nvidia* nodes (none for a CPU run), its
  own network namespace (loopback only), user namespace (even for root: without it the sandboxed
  process could write the host's files through /proc/<bwrap's pid>/root), PID and IPC namespaces (it
  sees and signals only its own processes), all capabilities dropped, no new privileges, killed with
  its parent. CUDA IPC handles of an unsandboxed process cannot be opened in there (seen on an H200:
  "mapping of buffer object failed"); nothing is mapped into the worker, and whether the orchestrator
  can map the worker's tensors is probed at start (bench/ipc.py; host-memory files where it cannot).
- "unshare-net": bwrap does not work (user namespaces off, an old kernel, no package) but
  `unshare --net` does: no network, but file writes are NOT blocked by the OS.
- "rlimits": neither works: only the limits, the scrubbed environment and the redirected HOME/TMPDIR.
  Network and file writes are NOT blocked by the OS (static analysis still refuses such sources).

Every level also drops all capabilities when the orchestrator runs as root and `setpriv` works
(bwrap does it itself), sets the resource limits (core dumps off, a file-size cap, an open-file
cap; not RLIMIT_AS: CUDA reserves huge virtual ranges; not RLIMIT_NPROC: it counts every process
of the user) and scrubs the environment to an allow-list.

Whether bwrap / unshare / setpriv work is found out once per process by running them on `true`.

Caveats of bubblewrap for the caller: the process it starts is bwrap, not the worker (the worker
is a child in the same process session and group, so killing those reaches it; a worker killed by
signal N shows as bwrap's exit code 128+N); pids the worker reports are those of its own PID
namespace; and --die-with-parent ends the sandbox when the *thread* that started it ends (Linux's
parent-death signal follows the thread), so start workers from a thread that outlives them.
"""

from __future__ import annotations

import functools
import os
import re
import resource
import shutil
import site
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LEVELS", "MODES", "SandboxError", "SandboxPlan", "available_level", "bwrap_works", "plan_sandbox", "scrub_environment",
           "setpriv_works", "unshare_works"]

MODES = ("auto", "bwrap", "none")
LEVELS = ("bubblewrap", "unshare-net", "rlimits", "none")
DEFAULT_MAX_FILE_BYTES = 64 << 30  # larger than any blob an output should need; bounds a runaway writer
DEFAULT_MAX_OPEN_FILES = 8192  # CUDA, Triton and ninja need a few hundred at most
PROBE_TIMEOUT_S = 20.0

# Variables passed through by exact name or prefix: what Python, torch, CUDA, Triton and the
# compilers need, and the project's own. Anything else (tokens, keys, proxies, ssh agents) is dropped.
KEEP_NAMES = frozenset({
    "PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
    "PYTHONPATH", "PYTHONHOME", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONFAULTHANDLER",
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "LANG", "LANGUAGE", "TZ", "TERM", "USER", "LOGNAME",
    "CC", "CXX", "CUDAHOSTCXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS",
    "NVCC_CCBIN", "MAX_JOBS", "NINJA_STATUS", "CUTLASS_PATH", "PYTHONNOUSERSITE", "PYTHONWARNINGS", "PYTHONIOENCODING",
})
KEEP_PREFIXES = (
    "CUDA_", "CUDNN_", "CUBLAS", "CUFFT_", "CUSPARSE", "NVIDIA_", "CUPTI_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "PYTORCH_",
    "CUTE_", "CUTLASS_", "LC_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "GOMP_", "SOLBENCH_", "PYENV_",  # pyenv shims need PYENV_ROOT
)
# Even under a kept prefix, a name that looks like a credential is dropped.
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|API_?KEY|PRIVATE|AUTH|COOKIE|_KEY$", re.IGNORECASE)
# Variables pointed into the sandbox home (relative to it); the worker's caches and scratch files go there.
REDIRECTED = {
    "HOME": ".", "TMPDIR": "tmp", "TMP": "tmp", "TEMP": "tmp",
    "XDG_CACHE_HOME": ".cache", "XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share",
    "TRITON_HOME": ".", "TRITON_CACHE_DIR": ".triton/cache", "TRITON_DUMP_DIR": ".triton/dump",
    "TORCHINDUCTOR_CACHE_DIR": ".cache/torchinductor", "TORCH_EXTENSIONS_DIR": ".cache/torch_extensions",
    "CUDA_CACHE_PATH": ".nv/ComputeCache",
}
# Folders bubblewrap replaces by empty private ones (besides the user's home): scratch space and the
# runtime sockets (/run/docker.sock and friends: a read-only mount does not stop connecting to a socket).
PRIVATE_DIRS = ("/tmp", "/dev/shm", "/run")


class SandboxError(RuntimeError):
    """A sandbox mode that cannot be had here, or a mode that does not exist (one-line message)."""


@dataclass(frozen=True)
class SandboxPlan:
    """How to start one sandboxed process: `Popen(plan.argv_prefix + argv, env=plan.env, preexec_fn=plan.preexec)`."""

    level: str  # "bubblewrap" | "unshare-net" | "rlimits" | "none"
    argv_prefix: list[str]
    env: dict[str, str]
    preexec: Callable[[], None] | None
    notes: list[str] = field(default_factory=list)
    home: Path | None = None  # the worker's HOME / TMPDIR / caches (None for "none")
    writable: tuple[Path, ...] = ()

    def wrap(self, argv: list[str]) -> list[str]:
        return [*self.argv_prefix, *argv]


# --- detection ------------------------------------------------------------------------------------


def _is_root() -> bool:
    return os.geteuid() == 0


def _probe(argv: list[str]) -> tuple[bool, str]:
    """Run argv once; (worked, why not): the last line of its error output when it fails."""
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{type(exc).__name__}: {exc}"
    if done.returncode == 0:
        return True, ""
    lines = [line for line in done.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    return False, (lines[-1].strip() if lines else f"exit code {done.returncode}")


def _bwrap_base() -> list[str]:
    """The flags every bubblewrap plan starts with (the probe runs exactly these)."""
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for folder in PRIVATE_DIRS:
        argv += ["--tmpfs", folder]
    # A user namespace even for root: without one, the sandbox (uid 0, no capabilities) could open
    # /proc/<bwrap>/root (bwrap's own outer process, uid 0 without capabilities too) and write the host's
    # filesystem through it; from inside a user namespace no process outside it can be ptrace-accessed.
    # Own PID and IPC namespaces: the worker sees and can signal only its own processes (not the
    # orchestrator, not the reference worker).
    argv += ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-net", "--die-with-parent", "--cap-drop", "ALL"]
    return argv


@functools.lru_cache(maxsize=1)
def bwrap_works() -> tuple[bool, str]:
    """(True, "") when bwrap exists and can build the sandbox here; else (False, why). Cached."""
    program = shutil.which("bwrap")
    if program is None:
        return False, "bwrap is not installed (Debian/Ubuntu package: bubblewrap)"
    worked, why = _probe([program, *_bwrap_base(), "true"])
    return worked, "" if worked else f"bwrap does not work here: {why}"


def _unshare_argv() -> list[str] | None:
    program = shutil.which("unshare")
    if program is None:
        return None
    return [program, "--net"] if _is_root() else [program, "--net", "--map-root-user"]


@functools.lru_cache(maxsize=1)
def unshare_works() -> tuple[bool, str]:
    """(True, "") when `unshare --net` (with --map-root-user when not root) works here. Cached."""
    argv = _unshare_argv()
    if argv is None:
        return False, "unshare is not installed (util-linux)"
    worked, why = _probe([*argv, "--", "true"])
    return worked, "" if worked else f"unshare --net does not work here: {why}"


def _setpriv_argv() -> list[str]:
    return [shutil.which("setpriv") or "setpriv", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]


@functools.lru_cache(maxsize=1)
def setpriv_works() -> bool:
    """Whether setpriv can drop every capability (used outside bubblewrap when running as root). Cached."""
    return shutil.which("setpriv") is not None and _probe([*_setpriv_argv(), "true"])[0]


def available_level(mode: str) -> str:
    """The level plan_sandbox(mode) would reach here; SandboxError (one line) when it cannot."""
    if mode not in MODES:
        raise SandboxError(f"unknown sandbox mode {mode!r} (expected one of {', '.join(MODES)})")
    if mode == "none":
        return "none"
    worked, why = bwrap_works()
    if worked:
        return "bubblewrap"
    if mode == "bwrap":
        raise SandboxError(f"bubblewrap is required, but {why} (mode auto falls back to a weaker sandbox)")
    return "unshare-net" if unshare_works()[0] else "rlimits"


# --- the plan -------------------------------------------------------------------------------------


def plan_sandbox(mode: str, *, writable: Iterable[Path], device: str, home: Path | None = None, readable: Iterable[Path] = (),
                 base_env: Mapping[str, str] | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 max_open_files: int = DEFAULT_MAX_OPEN_FILES) -> SandboxPlan:
    """A plan for one sandboxed process.

    writable: the only folders it may write (created if missing); device: "cpu", "cuda" or
    "cuda:N" (GPU device nodes are visible only for CUDA); home: its HOME, TMPDIR and caches
    (default: `.sandbox-home` in the first writable folder; must lie inside a writable folder);
    readable: extra paths it must read although they lie in a hidden folder (the paths the
    worker's Python needs are added by themselves); base_env: the environment to scrub
    (default os.environ).
    """
    level = available_level(mode)
    source = dict(os.environ if base_env is None else base_env)
    if not device.startswith("cuda"):
        source.setdefault("TRITON_INTERPRET", "1")  # without a GPU, Triton kernels run only in Triton's interpreter
    if level == "none":
        return SandboxPlan("none", [], source, None, ["no sandbox: the worker runs with the orchestrator's rights and environment"])
    folders = tuple(_real(Path(p)) for p in writable)
    if not folders:
        raise SandboxError("a sandbox needs at least one writable folder")
    home = _real(Path(home)) if home is not None else folders[0] / ".sandbox-home"
    if not any(_under(home, folder) for folder in folders):
        raise SandboxError(f"the sandbox home {home} is not inside a writable folder")
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
    env = scrub_environment(source, home)
    for relative in {REDIRECTED[name] for name in ("TMPDIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME")}:
        (home / relative).mkdir(parents=True, exist_ok=True)
    limits = _limits(max_file_bytes, max_open_files)
    preexec = functools.partial(_apply_limits, limits)
    notes = [_limits_note(limits), f"environment: scrubbed to an allow-list; HOME, TMPDIR and the compiler/JIT caches point into {home}"]
    gpu = device.startswith("cuda")
    if level == "bubblewrap":
        homes = [h for h in _user_homes(source) if not any(_under(h, folder) for folder in folders)]
        argv = _bwrap_argv(folders, readable, env, homes, gpu)
        notes = _bwrap_notes(folders, homes, gpu) + notes
    else:
        argv = []
        if level == "unshare-net":
            argv += [*_unshare_argv(), "--"]  # type: ignore[misc]  # available_level checked it exists
            notes.append("network: blocked (own network namespace, its loopback down)")
        else:
            notes.append(f"network: NOT blocked by the OS ({unshare_works()[1]}); static analysis still refuses sources that use it")
        notes.append(f"files: writes are NOT blocked by the OS ({bwrap_works()[1]}); only HOME/TMPDIR/caches are redirected, "
                     "and static analysis still refuses sources that write files")
        if _is_root():
            if setpriv_works():
                argv += _setpriv_argv()
                notes.append("capabilities: all dropped, no new privileges (setpriv); still uid 0, so root-owned files stay writable")
            else:
                notes.append("capabilities: NOT dropped (setpriv missing or not working): the worker runs as root with full rights")
        notes.append("processes: NOT isolated: the worker sees every process and may signal those of its user")
    return SandboxPlan(level, argv, env, preexec, notes, home, folders)


def scrub_environment(source: Mapping[str, str], home: Path) -> dict[str, str]:
    """The allow-listed part of `source`, with HOME, TMPDIR and the caches pointed into `home`."""
    env = {name: value for name, value in source.items()
           if (name in KEEP_NAMES or name.startswith(KEEP_PREFIXES)) and not SECRET_NAME.search(name)}
    for name, relative in REDIRECTED.items():
        env[name] = str(home / relative) if relative != "." else str(home)
    user_base = getattr(site, "USER_BASE", None) or site.getuserbase()
    if user_base and Path(user_base).is_dir() and site.ENABLE_USER_SITE:
        env["PYTHONUSERBASE"] = user_base  # HOME moved: keep finding packages installed with pip --user
    else:  # the user site would be the writable home's: what one worker put there (a usercustomize.py) the next would run
        env["PYTHONNOUSERSITE"] = "1"
    return env


def _bwrap_argv(writable: tuple[Path, ...], readable: Iterable[Path], env: Mapping[str, str], homes: list[Path], gpu: bool) -> list[str]:
    argv = [shutil.which("bwrap") or "bwrap", *_bwrap_base()]
    hidden = [Path(p) for p in PRIVATE_DIRS] + homes
    for home in sorted(homes, key=lambda path: len(path.parts)):
        argv += ["--tmpfs", str(home)]  # ~/.ssh, ~/.netrc, tokens: not readable (they could end up in logs)
    binds: list[tuple[str, Path]] = [("--ro-bind", p) for p in _needed_paths(readable, env, hidden)]
    binds += [("--bind", p) for p in writable]
    if gpu:
        binds += [("--dev-bind", p) for p in sorted(Path("/dev").glob("nvidia*"))]
    for flag, path in sorted(binds, key=lambda item: len(item[1].parts)):  # parents before children
        argv += [flag, str(path), str(path)]
    return argv


def _needed_paths(readable: Iterable[Path], env: Mapping[str, str], hidden: list[Path]) -> list[Path]:
    """Paths the worker must read that lie in a hidden folder: its Python, sys.path, solbench itself,
    PATH / LD_LIBRARY_PATH entries, the working directory, and what the caller named."""
    import solbench

    cwd = os.getcwd()
    candidates = [Path(sys.prefix), Path(sys.exec_prefix), Path(sys.base_prefix), Path(sys.executable).parent,
                  Path(solbench.__file__).parent.parent, *map(Path, readable)]
    candidates += [Path(entry) for entry in sys.path if entry and entry != cwd]  # `python -m` puts the cwd there: not needed
    for name in ("PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PYTHONUSERBASE", "VIRTUAL_ENV", "CONDA_PREFIX"):
        candidates += [Path(entry) for entry in env.get(name, "").split(os.pathsep) if entry]
    found: set[Path] = set()
    for candidate in candidates:
        if not candidate.is_absolute():
            continue  # "." in PATH and the like: never a reason to show a hidden folder
        for path in {candidate, _real(candidate)}:
            # strictly inside a hidden folder: a PATH entry that is the home itself does not un-hide it
            if path.exists() and not path.is_symlink() and any(folder in path.parents for folder in hidden):
                found.add(path)
    return sorted(p for p in found if not any(p != q and _under(p, q) for q in found))  # a parent covers its children


def _bwrap_notes(writable: tuple[Path, ...], homes: list[Path], gpu: bool) -> list[str]:
    return [
        "network: blocked (own network namespace with only a loopback device; abstract unix sockets too)",
        f"files: everything read-only except {', '.join(map(str, writable))}; /tmp, /dev/shm and /run are private and empty"
        + "".join(f"; {home} is hidden" for home in homes),
        "devices: a minimal /dev" + (" plus the GPU nodes /dev/nvidia*" if gpu else " (no GPU nodes: a CPU run)"),
        "capabilities: all dropped, no new privileges (setuid programs do not elevate); an own user namespace, so no "
        "process outside it can be inspected or entered through /proc",
        "processes: own PID and IPC namespaces: the worker sees and can signal only its own processes",
        "NOT blocked: reading files readable to the user outside the hidden folders (they can end up in the log), and connecting "
        "to unix sockets in the filesystem outside /tmp and /run",
        "NOT limited: memory, process count and CPU time (the orchestrator's timeouts kill the worker)",
    ]


# --- resource limits ------------------------------------------------------------------------------


def _limits(max_file_bytes: int, max_open_files: int) -> tuple[tuple[int, int], ...]:
    """(resource, value) pairs; each is applied as soft = hard = min(value, the current hard limit)."""
    return ((resource.RLIMIT_CORE, 0), (resource.RLIMIT_FSIZE, max_file_bytes), (resource.RLIMIT_NOFILE, max_open_files))


def _apply_limits(limits: tuple[tuple[int, int], ...]) -> None:
    """preexec_fn: runs in the child between fork and exec; lowering the hard limit too means the
    solution cannot raise it again (without CAP_SYS_RESOURCE, which the sandbox drops)."""
    for which, value in limits:
        _, hard = resource.getrlimit(which)
        limit = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (limit, limit))


def _limits_note(limits: tuple[tuple[int, int], ...]) -> str:
    values = dict(limits)
    return (f"limits: no core dumps, files at most {values[resource.RLIMIT_FSIZE] >> 20} MiB, "
            f"at most {values[resource.RLIMIT_NOFILE]} open files (no memory limit: CUDA reserves huge virtual ranges)")


# --- paths ----------------------------------------------------------------------------------------


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _under(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _user_homes(env: Mapping[str, str]) -> list[Path]:
    """The orchestrator user's home folders (from the password database and $HOME), to hide;
    never "/" (hiding it would hide the system)."""
    import pwd

    found = []
    candidates = [env.get("HOME", "")]
    try:
        candidates.append(pwd.getpwuid(os.geteuid()).pw_dir)
    except KeyError:
        pass
    for candidate in candidates:
        if candidate and os.path.isabs(candidate):
            home = _real(Path(candidate))
            if home.is_dir() and len(home.parts) > 1 and home not in found:
                found.append(home)
    return found
