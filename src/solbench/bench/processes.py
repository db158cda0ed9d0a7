"""Worker processes as the orchestrator sees them: start, ask, time out, kill, read their logs."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from solbench.bench.protocol import Channel, ChannelClosed, ChannelTimeout

if TYPE_CHECKING:
    from solbench.bench.sandbox import SandboxPlan


@dataclass(frozen=True)
class Launcher:
    """A program that starts the worker (a profiler, a sanitizer: `argv` goes before the worker's own
    command, inside the sandbox) and the variables it adds to the worker's environment."""

    argv: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)


class WorkerTimeout(Exception):
    pass


class WorkerCrashed(Exception):
    pass


class WorkerForged(Exception):
    """A message on the channel that the worker's request loop did not send."""


class WorkerFailed(Exception):
    """The worker answered that the request failed."""

    def __init__(self, kind: str, error: str, detail: str = "", rule: str = ""):
        super().__init__(error)
        self.kind, self.error, self.detail, self.rule = kind, error, detail, rule


class WorkerProcess:
    """One worker in its own process session, talking over a private pipe pair."""

    def __init__(self, role: str, device: str, log_path: Path, env: dict[str, str] | None = None,
                 sandbox: SandboxPlan | None = None, preload_compiler: bool = False, launcher: Launcher | None = None):
        """With a sandbox plan (solbench.bench.sandbox), the worker starts under its argv prefix, in its
        scrubbed environment (`env`, if given too, is added on top: trusted extras) and with its resource
        limits. Under bubblewrap, self.process is bwrap (the worker is its child, in the same process
        session, so kill() still reaches it); a worker killed by signal N then ends as exit code 128+N.
        preload_compiler: the worker imports torch.compile's machinery as it starts (for the trusted
        torch.compile candidates: that import alone takes 7-9 s on the H200 host, longer than loading
        their compiled graphs from the cache, and a worker started ahead does it off the critical path).
        launcher: the worker starts under this program (inside the sandbox), with its variables added."""
        self.role, self.device, self.log_path, self.sandbox, self.launcher = role, device, log_path, sandbox, launcher
        self.output_folder: Path | None = None  # a solution worker's: the folder its outputs' blobs go to (WorkerPair.output_folder)
        to_worker_read, to_worker_write = os.pipe()
        from_worker_read, from_worker_write = os.pipe()
        log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-m", "solbench.bench.worker", "--role", role, "--read-fd", str(to_worker_read),
                "--write-fd", str(from_worker_write), "--device", device] + (["--preload-compiler"] if preload_compiler else [])
        if launcher is not None:
            base = env if env is not None else ({} if sandbox is not None else dict(os.environ))  # a sandbox brings its own environment
            argv, env = [*launcher.argv, *argv], {**base, **launcher.env}
        if sandbox is not None:
            argv, env = sandbox.wrap(argv), {**sandbox.env, **(env or {})}
        with open(log_path, "ab") as log:
            self.process = subprocess.Popen(
                argv,
                pass_fds=(to_worker_read, from_worker_write),  # bwrap and unshare keep inherited descriptors open
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                start_new_session=True, env=env, preexec_fn=sandbox.preexec if sandbox is not None else None,
            )
        os.close(to_worker_read)
        os.close(from_worker_write)
        self.channel = Channel(from_worker_read, to_worker_write)
        self._log_offset = 0

    def request(self, command: str, timeout: float | None, **payload: Any) -> dict[str, Any]:
        """Send one request and wait for its answer. Each request carries a fresh nonce that its
        answer must echo, and nothing may follow the answer: a message written by the solution onto
        the channel (a forged answer) shows up as a wrong nonce or as a message too many."""
        nonce = secrets.token_hex(12)
        try:
            self.channel.send({"cmd": command, "nonce": nonce, **payload})
            answer = self.channel.receive(timeout)
            extra = self.channel.pending()
        except ChannelTimeout:
            self.kill()
            raise WorkerTimeout(f"{command} did not finish within {timeout:.0f} s" if timeout >= 1 else f"{command} did not finish within {timeout:.2g} s") from None
        except ChannelClosed:
            raise WorkerCrashed(f"the {self.role} worker died during {command}: {self.exit_description()}") from None
        if answer.get("nonce") != nonce or extra:
            self.kill()  # the channel can no longer be trusted
            what = "an answer without this request's nonce" if answer.get("nonce") != nonce else "a message after the answer"
            raise WorkerForged(f"{command}: the {self.role} worker's channel carried {what} (a forged answer)")
        if not answer.get("ok"):
            raise WorkerFailed(str(answer.get("kind", "runtime")), str(answer.get("error", "unknown error")), str(answer.get("detail", "")),
                               rule=str(answer.get("rule", "")))
        return answer

    def exit_description(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        if code is None:
            return "it stopped answering"
        if code > 128 and self.sandbox is not None and self.sandbox.level == "bubblewrap":
            code = -(code - 128)  # bwrap reports its child's death by signal N as exit code 128+N
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"killed by {name}"
        return f"exit code {code}"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """Kill the worker and everything it started (kill_processes), then reap it and close the channel."""
        self.kill_processes()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.channel.close()

    def kill_processes(self) -> None:
        """SIGKILL to the worker's process group and every process of its session (ninja starts
        compilers in process groups of their own); nothing else, so another thread may call it while
        the worker's owner waits on the channel (it then reads the end of the pipe)."""
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in _session_members(self.process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self) -> None:
        if self.alive:
            try:
                self.channel.send({"cmd": "exit"})
                self.channel.receive(5)
            except (ChannelClosed, ChannelTimeout):
                pass
        self.kill()

    def finish(self, timeout: float) -> int | None:
        """Ask the worker to exit and wait until its process has ended (a launcher, such as a sanitizer,
        writes its summary and sets its exit code as the worker ends): the exit code, or None where it
        did not end within `timeout` seconds (it is killed then)."""
        if self.alive:
            try:
                self.channel.send({"cmd": "exit"})
                self.channel.receive(min(timeout, 10.0))
            except (ChannelClosed, ChannelTimeout):
                pass
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None
        self.channel.close()
        return code

    def new_log(self, limit: int) -> str:
        """What the worker printed since the last call, at most `limit` characters (the end kept)."""
        try:
            with open(self.log_path, "rb") as handle:
                size = handle.seek(0, os.SEEK_END)
                skipped = max(0, size - self._log_offset - limit)
                handle.seek(self._log_offset + skipped)
                data = handle.read(limit)
        except OSError:
            return ""
        self._log_offset += skipped + len(data)
        text = data.decode("utf-8", errors="replace")
        return f"[... {skipped} bytes cut ...]\n{text}" if skipped else text



def _session_members(session: int) -> list[int]:
    """Processes whose session id is `session` (Linux /proc; elsewhere none are found)."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            if int(fields[3]) == session:  # after "pid (comm)": state, ppid, pgrp, session
                found.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    return found
