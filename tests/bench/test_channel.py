"""A worker's channel closed twice must never close another channel's pipe.

Seen in the H200 corpus survey (8 evaluations at a time): a worker killed after a forged answer was
closed again when its pair closed; by then its descriptor numbers belonged to a new worker's pipe,
whose channel broke ("died during hello"), and an honest Triton solution got another worker's
answers (REWARD_HACK [forged-answer])."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from solbench.bench.processes import WorkerProcess
from solbench.bench.protocol import Channel, ChannelClosed


def test_closing_a_channel_twice_leaves_the_pipe_that_reused_its_numbers_open():
    read_fd, write_fd = os.pipe()
    channel = Channel(read_fd, write_fd)
    channel.close()
    reused_read, reused_write = os.pipe()  # the lowest free numbers: the ones just closed
    assert {reused_read, reused_write} == {read_fd, write_fd}
    try:
        channel.close()
        os.write(reused_write, b"still open\n")
        assert os.read(reused_read, 64) == b"still open\n"
    finally:
        os.close(reused_read)
        os.close(reused_write)


def test_a_closed_channel_refuses_to_send_and_receive():
    channel = Channel(*os.pipe())
    channel.close()
    with pytest.raises(ChannelClosed):
        channel.send({"cmd": "hello"})
    with pytest.raises(ChannelClosed):
        channel.receive(1)
    assert channel.pending() is False


def test_a_worker_killed_then_closed_leaves_the_next_workers_channel_working(tmp_path: Path):
    first = WorkerProcess("solution", "cpu", tmp_path / "first.log")
    assert first.request("hello", 120)["pid"] == first.process.pid
    first.kill()  # as after a forged answer
    second = WorkerProcess("solution", "cpu", tmp_path / "second.log")
    try:
        first.close()  # the pair closes the killed worker again
        answer = second.request("hello", 120)
        assert answer["pid"] == second.process.pid
        assert answer["device"] == "cpu"
    finally:
        second.close()
