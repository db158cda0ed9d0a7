"""The channel between the orchestrator and a worker: one JSON object per line over a pipe.

The worker's stdout and stderr go to a log file, never to this channel, so that nothing a solution
prints can be taken for a message.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ChannelClosed(Exception):
    """The other side went away (a crash, or an exit)."""


class ChannelTimeout(Exception):
    pass


class Channel:
    STATE = frozenset({"_buffer"})  # rebound as it reads (solbench.bench.integrity)

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd
        self._buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        if self.write_fd < 0:
            raise ChannelClosed("the channel was closed")
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        view = memoryview(data)
        try:
            while view:
                written = os.write(self.write_fd, view)
                view = view[written:]
        except (BrokenPipeError, OSError) as exc:
            raise ChannelClosed(str(exc)) from None

    def receive(self, timeout: float | None = None) -> dict[str, Any]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            if self.read_fd < 0:
                raise ChannelClosed("the channel was closed")
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.read_fd], [], [], remaining)
            if not ready:
                raise ChannelTimeout(f"no answer within {timeout:.0f} s")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise ChannelClosed("the other side closed the channel")
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise ChannelClosed("message too large")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ChannelClosed(f"unreadable message: {exc}") from None
        if not isinstance(message, dict):
            raise ChannelClosed("a message must be a JSON object")
        return message

    def pending(self) -> bool:
        """Whether more data has already arrived after the last message (read into the buffer)."""
        if self._buffer:
            return True
        if self.read_fd < 0:
            return False
        try:
            ready, _, _ = select.select([self.read_fd], [], [], 0)
            chunk = os.read(self.read_fd, 1 << 20) if ready else b""
        except (OSError, ValueError):
            return False
        self._buffer += chunk  # an end of file reads as nothing: the next receive reports the closed channel
        return bool(chunk)

    def close(self) -> None:
        """Closes both descriptors once. The numbers are forgotten at once: closing them again later
        (a worker killed twice) would close whatever pipe took those numbers in the meantime, another
        worker's channel, and cross two channels."""
        fds, self.read_fd, self.write_fd = (self.read_fd, self.write_fd), -1, -1
        for fd in fds:
            if fd < 0:
                continue
            try:
                os.close(fd)
            except OSError:
                pass
