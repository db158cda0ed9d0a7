"""The solution worker's OS sandbox (solbench.bench.sandbox) with real processes, no mocks.

Every test starts real children under a real plan: the environment is scrubbed, HOME/TMPDIR are
writable, the resource limits hold in the child. Tests marked `needs_bwrap` need a working
bubblewrap (`apt-get install bubblewrap`; user namespaces allowed or root) and are skipped, with the
reason bwrap gave, where it does not work; `needs_netns` tests need bubblewrap or `unshare --net`.
A fake `bwrap` early on PATH (a script that fails) shows the fallback and the one-line errors.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from solbench.bench import sandbox
from solbench.bench.orchestrator import EvalOptions, evaluate
from solbench.bench.processes import WorkerProcess, _session_members
from solbench.bench.sandbox import SandboxError, SandboxPlan, available_level, bwrap_works, plan_sandbox, unshare_works
from solbench.data.inline import inline_problem, inline_solution
from solbench.data.trace import Status
from test_evaluate import alive as _alive  # same folder: pytest puts it on sys.path

BWRAP_WORKS, BWRAP_WHY = bwrap_works()
needs_bwrap = pytest.mark.skipif(not BWRAP_WORKS, reason=f"needs a working bubblewrap: {BWRAP_WHY}")
needs_netns = pytest.mark.skipif(not (BWRAP_WORKS or unshare_works()[0]),
                                 reason=f"needs bubblewrap or unshare --net: {BWRAP_WHY}; {unshare_works()[1]}")
SECRETS = {"MY_SERVICE_API_TOKEN": "tok-123", "AWS_SECRET_ACCESS_KEY": "aws-456", "SOLBENCH_UPLOAD_TOKEN": "sol-789", "GITHUB_PAT_PASSWORD": "gh"}


@pytest.fixture()
def fresh_detection() -> Iterator[None]:
    """Forget the cached detection before and after a test that changes PATH."""
    for probe in (sandbox.bwrap_works, sandbox.unshare_works, sandbox.setpriv_works):
        probe.cache_clear()
    yield
    for probe in (sandbox.bwrap_works, sandbox.unshare_works, sandbox.setpriv_works):
        probe.cache_clear()


@pytest.fixture()
def broken_bwrap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_detection: None) -> None:
    """A `bwrap` first on PATH that fails like one without user namespaces."""
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    fake = folder / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture()
def outside(tmp_path: Path) -> Iterator[Path]:
    """A folder the sandbox can see (not under /tmp, which it replaces) but must not write."""
    folder = Path(tempfile.mkdtemp(prefix="solbench-sandbox-outside-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_in(plan: SandboxPlan, code: str, *, pass_fds: tuple[int, ...] = (), timeout: float = 60) -> dict[str, Any]:
    """Run Python code in a real child under the plan; the code's last stdout line is JSON."""
    argv = plan.wrap([sys.executable, "-c", textwrap.dedent(code)])
    done = subprocess.run(argv, env=plan.env, preexec_fn=plan.preexec, pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout, start_new_session=True)
    assert done.returncode == 0, f"child failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan_for(tmp_path: Path, mode: str = "auto", **extra: Any) -> SandboxPlan:
    return plan_sandbox(mode, writable=[tmp_path / "builds", tmp_path / "session"], device="cpu", home=tmp_path / "session" / "home", **extra)


# --- every level --------------------------------------------------------------------------------


def test_unknown_mode_is_one_clear_error(tmp_path: Path):
    with pytest.raises(SandboxError) as caught:
        plan_for(tmp_path, "docker")
    assert str(caught.value) == "unknown sandbox mode 'docker' (expected one of auto, bwrap, none)"


def test_the_environment_is_scrubbed_and_home_and_tmp_are_writable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # what the toolchain needs stays
    plan = plan_for(tmp_path)
    assert not set(SECRETS) & set(plan.env)
    seen = run_in(plan, """
        import json, os, tempfile
        with open(os.path.join(os.environ["HOME"], "home.txt"), "w") as handle:
            handle.write("home")
        with tempfile.NamedTemporaryFile("w", delete=False) as handle:
            handle.write("tmp")
        print(json.dumps({"env": dict(os.environ), "tmpfile": handle.name}))
    """)
    env = seen["env"]
    assert not set(SECRETS) & set(env), "a secret reached the sandboxed child"
    assert env["TRITON_INTERPRET"] == "1" and env["PATH"]
    home = tmp_path / "session" / "home"
    assert env["HOME"] == str(home) and Path(env["TMPDIR"]).parent == home
    for name in ("TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME", "CUDA_CACHE_PATH"):
        assert home in Path(env[name]).parents, name
    assert (home / "home.txt").read_text() == "home"  # written in the child, visible here: a real writable folder
    assert Path(seen["tmpfile"]).parent == Path(env["TMPDIR"]) and Path(seen["tmpfile"]).read_text() == "tmp"


def test_resource_limits_hold_in_a_real_child(tmp_path: Path):
    plan = plan_for(tmp_path, max_file_bytes=1 << 20, max_open_files=256)
    seen = run_in(plan, """
        import errno, json, os, resource
        limits = {name: resource.getrlimit(getattr(resource, name)) for name in ("RLIMIT_CORE", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_AS")}
        try:  # Python ignores SIGXFSZ, so a write past RLIMIT_FSIZE fails with EFBIG instead of killing
            with open(os.path.join(os.environ["TMPDIR"], "big"), "wb") as handle:
                handle.write(b"x" * (2 << 20))
            big = "written"
        except OSError as exc:
            big = errno.errorcode[exc.errno]
        try:
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            raised = True
        except (ValueError, OSError):
            raised = False
        print(json.dumps({"limits": limits, "big": big, "raised": raised, "limits_text": open("/proc/self/limits").read()}))
    """)
    limits = seen["limits"]
    assert limits["RLIMIT_CORE"] == [0, 0]
    assert limits["RLIMIT_FSIZE"] == [1 << 20, 1 << 20]
    assert limits["RLIMIT_NOFILE"] == [256, 256]
    assert limits["RLIMIT_AS"][0] == -1  # no address-space limit: CUDA reserves huge virtual ranges
    assert seen["big"] == "EFBIG"
    if plan.level == "bubblewrap" or os.geteuid() != 0 or "capabilities: all dropped" in " ".join(plan.notes):
        assert not seen["raised"], "the child raised its own hard limit"
    assert "Max core file size        0                    0" in seen["limits_text"]


def test_mode_none_is_no_sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MY_SERVICE_API_TOKEN", "tok-123")
    plan = plan_for(tmp_path, "none")
    assert (plan.level, plan.argv_prefix, plan.preexec) == ("none", [], None)
    assert plan.env["MY_SERVICE_API_TOKEN"] == "tok-123"


def test_bwrap_required_but_not_working_is_one_line(tmp_path: Path, broken_bwrap: None):
    with pytest.raises(SandboxError) as caught:
        plan_for(tmp_path, "bwrap")
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("bubblewrap is required, but bwrap does not work here: bwrap: No permissions to create new namespace")


def test_auto_falls_back_and_says_what_is_not_blocked(tmp_path: Path, broken_bwrap: None, outside: Path):
    plan = plan_for(tmp_path, "auto")
    assert plan.level in ("unshare-net", "rlimits")
    assert any("files: writes are NOT blocked by the OS" in note for note in plan.notes)
    if plan.level == "rlimits":
        assert any("network: NOT blocked by the OS" in note for note in plan.notes)
    # The fallback really does not stop writes (the notes say so); it does scrub and limit.
    seen = run_in(plan, f"""
        import json, resource
        open({str(outside / "f")!r}, "w").write("x")
        print(json.dumps({{"core": resource.getrlimit(resource.RLIMIT_CORE)}}))
    """)
    assert seen["core"] == [0, 0] and (outside / "f").exists()


def test_cli_refuses_bwrap_when_it_does_not_work_in_one_line(tmp_path: Path, broken_bwrap: None):
    data = Path(__file__).resolve().parents[1] / "fixtures" / "solutions" / "status"
    done = subprocess.run([sys.executable, "-m", "solbench.cli", "eval", str(data / "vector_scale"), "-s", str(data / "pytorch_dps.json"),
                           "--device", "cpu", "--sandbox", "bwrap"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: --sandbox bwrap: bubblewrap is required, but bwrap does not work here"), done.stderr
    assert "Traceback" not in done.stderr


@needs_netns
def test_no_tcp_connection_out_of_the_sandbox(tmp_path: Path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[Any] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept())
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass  # the server works from here
        deadline = time.monotonic() + 5
        while not accepted and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(accepted) == 1
        plan = plan_for(tmp_path)
        seen = run_in(plan, f"""
            import errno, json, socket
            results = {{}}
            for host in ("127.0.0.1", "10.255.255.1", "1.1.1.1"):
                try:
                    socket.create_connection((host, {port}), timeout=3).close()
                    results[host] = "connected"
                except OSError as exc:
                    results[host] = errno.errorcode.get(exc.errno, str(exc))
            print(json.dumps(results))
        """)
    finally:
        stop.set()
        thread.join(5)
        server.close()
    assert len(accepted) == 1, "the sandboxed child reached the test server"
    assert seen["127.0.0.1"] in ("ECONNREFUSED", "ENETUNREACH")  # its own loopback: empty (bwrap) or down (unshare)
    assert seen["10.255.255.1"] in ("ENETUNREACH", "EHOSTUNREACH") and seen["1.1.1.1"] in ("ENETUNREACH", "EHOSTUNREACH")


# --- bubblewrap -----------------------------------------------------------------------------------


@needs_bwrap
def test_bwrap_writes_only_in_the_writable_folders(tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("MY_SERVICE_API_TOKEN", "tok-123")
    plan = plan_for(tmp_path, "bwrap")
    assert plan.level == "bubblewrap"
    build_dir = tmp_path / "builds" / "0123abcd"
    host_tmp_marker = Path(tempfile.gettempdir()) / f"solbench-sandbox-marker-{os.getpid()}"
    handle, home_marker = tempfile.mkstemp(prefix=".solbench-sandbox-probe-", dir=Path.home())  # stands for ~/.ssh and the like
    os.close(handle)
    try:
        seen = _attempts(plan, build_dir, outside, host_tmp_marker)
    finally:
        os.unlink(home_marker)
    assert seen["build_dir"] == "ok" and (build_dir / "kernel.so").read_text() == "x"
    assert seen["outside"] == "EROFS" and not (outside / "escape.txt").exists()
    assert seen["site_packages"] in ("EROFS", "EACCES")
    assert seen["tmp"] == "ok" and not host_tmp_marker.exists()  # a private /tmp: gone with the sandbox
    # through the root of the process that started it: bwrap's (its own read-only view), or no access
    assert seen["proc_root"] in ("EACCES", "EPERM", "ENOENT", "EROFS") and not (outside / "via-proc.txt").exists()
    assert seen["orchestrator_environ"] in ("EACCES", "EPERM", "ENOENT")  # the orchestrator's secrets stay unread
    assert not seen["secret_in_parent"]  # bwrap's own process inside has the scrubbed environment
    assert seen["signal_orchestrator"] == "ESRCH"  # an own PID namespace: the test process does not exist in there
    assert len(seen["processes"]) <= 3, seen["processes"]  # bwrap's init, the child (and perhaps a reaper)
    # The user's home is hidden: only the folders the worker's Python needs are bound into it.
    assert Path(home_marker).name not in (seen["home_listing"] or [])
    bound = {Path(path).relative_to(Path.home()).parts[0] for path in plan.argv_prefix if path.startswith(f"{Path.home()}/")}
    assert set(seen["home_listing"] or []) <= bound
    assert seen["devices"] == []  # a CPU run sees no GPU
    assert int(seen["caps"], 16) == 0


def _attempts(plan: SandboxPlan, build_dir: Path, outside: Path, host_tmp_marker: Path) -> dict[str, Any]:
    """What a hostile child manages: each write or read, "ok" or the errno's name."""
    return run_in(plan, f"""
        import errno, json, os
        def attempt(action):
            try:
                action()
                return "ok"
            except OSError as exc:
                return errno.errorcode.get(exc.errno, str(exc))
        def write(path):
            with open(path, "w") as handle:
                handle.write("x")
        results = {{
            "build_dir": attempt(lambda: (os.makedirs({str(build_dir)!r}), write({str(build_dir / "kernel.so")!r}))),
            "outside": attempt(lambda: write({str(outside / "escape.txt")!r})),
            "site_packages": attempt(lambda: write(os.path.join(os.path.dirname(os.__file__), "escape.py"))),
            "tmp": attempt(lambda: write({str(host_tmp_marker)!r})),
            "proc_root": attempt(lambda: write("/proc/%d/root%s" % (os.getppid(), {str(outside / "via-proc.txt")!r}))),
            "orchestrator_environ": attempt(lambda: open("/proc/{os.getpid()}/environ").read()),
            "secret_in_parent": "tok-123" in open("/proc/%d/environ" % os.getppid(), errors="replace").read(),
            "signal_orchestrator": attempt(lambda: os.kill({os.getpid()}, 0)),
            "processes": [name for name in os.listdir("/proc") if name.isdigit()],
            "home_listing": sorted(os.listdir({str(Path.home())!r})) if os.path.isdir({str(Path.home())!r}) else None,
            "devices": sorted(name for name in os.listdir("/dev") if name.startswith("nvidia")),
            "uid": os.getuid(),
            "caps": [line for line in open("/proc/self/status") if line.startswith("CapEff")][0].split()[1],
        }}
        print(json.dumps(results))
    """)


@needs_bwrap
def test_a_sandboxed_worker_talks_over_its_pipes_and_dies_with_kill(tmp_path: Path):
    """The real worker under bwrap: the inherited pipe descriptors work, and kill() reaches it
    although the process we started is bwrap, not the worker."""
    plan = plan_sandbox("bwrap", writable=[tmp_path / "builds", tmp_path / "session"], device="cpu", home=tmp_path / "session" / "home")
    worker = WorkerProcess("solution", "cpu", tmp_path / "session" / "logs" / "solution.log", sandbox=plan)
    try:
        worker.request("hello", 120)
        # The worker is not the process we started (bwrap) but one in bwrap's process session.
        members = _session_members(worker.process.pid)
        (pid,) = [m for m in members if b"solbench.bench.worker" in Path(f"/proc/{m}/cmdline").read_bytes() and m != worker.process.pid
                  and Path(f"/proc/{m}/exe").resolve() != Path(shutil.which("bwrap") or "bwrap").resolve()]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"HOME={tmp_path / 'session' / 'home'}".encode() in environ
        assert not any(item.startswith(b"MY_SERVICE_API_TOKEN=") for item in environ)
    finally:
        worker.kill()
    deadline = time.monotonic() + 10
    while any(_alive(m) for m in members) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(m) for m in members), "a sandboxed process outlived kill()"


@needs_bwrap
def test_bwrap_keeps_inherited_pipes(tmp_path: Path):
    plan = plan_for(tmp_path, "bwrap")
    into_read, into_write = os.pipe()
    back_read, back_write = os.pipe()
    os.write(into_write, b"ping\n")
    os.close(into_write)
    try:
        seen = run_in(plan, f"""
            import json, os
            line = os.read({into_read}, 100).decode().strip()
            os.write({back_write}, (line + " pong").encode())
            print(json.dumps({{"line": line}}))
        """, pass_fds=(into_read, back_write))
    finally:
        os.close(into_read)
        os.close(back_write)
    assert seen["line"] == "ping"
    assert os.read(back_read, 100) == b"ping pong"
    os.close(back_read)


# --- end to end ---------------------------------------------------------------------------------

SCALE = inline_problem("sandbox_scale", "import torch\n\ndef run(x):\n    return x * 2\n", {"x": (["N"], "float32")}, {"y": (["N"], "float32")},
                       axes={"N": {"type": "var"}}, workload_axes=[{"N": 100}])
SMALL = dict(device="cpu", trials=2, min_iterations=3, budget_s=0.3, warmup=1, timeout_s=60.0, seed=7)


def test_a_legit_solution_passes_in_the_sandbox_and_the_trace_says_which(tmp_path: Path):
    solution = inline_solution("scale-sandboxed", "sandbox_scale", "pytorch", "main.py::run", {
        "main.py": "import torch\n\n\ndef run(x, y):\n    torch.mul(x, 2, out=y)\n",
    })
    traces = evaluate(SCALE, solution, EvalOptions(**SMALL, cache_root=tmp_path / "builds", sandbox="auto"))
    assert traces
    for trace in traces:
        assert trace.evaluation.status == Status.PASSED, trace.evaluation.log
        assert trace.evaluation.environment["sandbox"] == available_level("auto")
    assert any((tmp_path / "builds").iterdir())  # the build went into the cache root


@needs_bwrap
def test_a_solution_that_writes_outside_fails_under_bwrap(tmp_path: Path, outside: Path):
    target = outside / "planted.py"
    solution = inline_solution("scale-writer", "sandbox_scale", "pytorch", "main.py::run", {
        "main.py": f"import torch\n\n\ndef run(x, y):\n    open({str(target)!r}, 'w').write('pwned')\n    torch.mul(x, 2, out=y)\n",
    })
    options = EvalOptions(**SMALL, cache_root=tmp_path / "builds", sandbox="bwrap", static_analysis=False)
    traces = evaluate(SCALE, solution, options)
    assert traces and all(t.evaluation.status == Status.RUNTIME_ERROR for t in traces)
    assert "Read-only file system" in traces[0].evaluation.log
    assert not target.exists()


@needs_bwrap
def test_a_sandboxed_build_writes_its_own_cache_folder_and_no_other():
    """Another solution's cached build (a sibling folder of the cache) is read-only to this one. The
    cache lies under /var/tmp: the sandbox gives /tmp a private tmpfs, which would hide a write there."""
    from solbench.bench.builders import key_folder

    if not os.access("/var/tmp", os.W_OK):
        pytest.skip("needs a writable /var/tmp")
    cache = Path(tempfile.mkdtemp(prefix="solbench-cache-", dir="/var/tmp"))
    try:
        target = cache / "someone-elses-key" / "build" / "main.py"
        target.parent.mkdir(parents=True)
        solution = inline_solution("scale-cache-writer", "sandbox_scale", "pytorch", "main.py::run", {
            "main.py": f"import torch\n\n\ndef run(x, y):\n    open({str(target)!r}, 'w').write('def run(*a): pass')\n    torch.mul(x, 2, out=y)\n",
        })
        options = EvalOptions(**SMALL, cache_root=cache, sandbox="bwrap", static_analysis=False, hidden=0)
        traces = evaluate(SCALE, solution, options)
        assert traces and all(t.evaluation.status == Status.RUNTIME_ERROR for t in traces)
        assert "Read-only file system" in traces[0].evaluation.log
        assert not target.exists()
        assert (key_folder(cache, solution, "cpu") / "build" / "main.py").is_file()  # its own build went where it belongs
    finally:
        shutil.rmtree(cache, ignore_errors=True)


@pytest.mark.parametrize("mode", ["none", "auto"])
def test_workers_without_a_gpu_run_triton_in_its_interpreter(tmp_path: Path, mode: str):
    base = {"PATH": os.environ["PATH"]}
    cpu = plan_sandbox(mode, writable=[tmp_path / "cpu"], device="cpu", base_env=base)
    assert cpu.env["TRITON_INTERPRET"] == "1"
    chosen = plan_sandbox(mode, writable=[tmp_path / "own"], device="cpu", base_env={**base, "TRITON_INTERPRET": "0"})
    assert chosen.env["TRITON_INTERPRET"] == "0"  # the user's own choice is kept
    gpu = plan_sandbox(mode, writable=[tmp_path / "gpu"], device="cuda:0", base_env=base)
    assert "TRITON_INTERPRET" not in gpu.env
