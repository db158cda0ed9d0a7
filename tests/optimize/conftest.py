"""Fixtures of the optimiser's tests (the helpers are in optimize_testkit)."""

from __future__ import annotations

from typing import Callable, Iterator

import pytest

from solbench.data.problem import Problem

from optimize_testkit import ChatServer, make_problem


@pytest.fixture
def problem() -> Problem:
    return make_problem()


@pytest.fixture
def chat_server() -> Iterator[Callable[[list[str]], ChatServer]]:
    servers: list[ChatServer] = []

    def start(replies: list[str]) -> ChatServer:
        servers.append(ChatServer(replies))
        return servers[-1]

    yield start
    for server in servers:
        server.close()
