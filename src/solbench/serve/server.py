"""What `solbench serve` runs: the database migrated, the datasets registered, the worker processes
started (and started again when one dies), and the HTTP server in this process until it is stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from typing import Any

from solbench.serve import catalog
from solbench.serve.config import ServeConfig
from solbench.serve.database import make_engine, migrate, session_factory, transaction
from solbench.serve.state import ServiceState

RESTART_DELAY_S = 1.0


class Supervisor:
    """Worker processes (`python -m solbench.serve.worker`), each restarted after it exits, until stopped."""

    def __init__(self, config: ServeConfig):
        self.config = config
        self.processes: list[subprocess.Popen[bytes] | None] = [None] * config.workers
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="solbench-serve-workers", daemon=True)

    def start(self) -> None:
        for index in range(len(self.processes)):
            self._spawn(index)
        self.thread.start()

    def _spawn(self, index: int) -> None:
        self.processes[index] = subprocess.Popen([sys.executable, "-m", "solbench.serve.worker", "--config", self.config.to_json(),
                                                  "--parent", str(os.getpid())], stdin=subprocess.DEVNULL)

    def _watch(self) -> None:
        while not self.stopping.wait(RESTART_DELAY_S):
            for index, process in enumerate(self.processes):
                if process is not None and process.poll() is not None and not self.stopping.is_set():
                    print(f"serve: worker {process.pid} exited with {process.returncode}; starting another", file=sys.stderr, flush=True)
                    self._spawn(index)

    def stop(self) -> None:
        self.stopping.set()
        for process in self.processes:
            if process is not None and process.poll() is None:
                process.terminate()
        for process in self.processes:
            if process is not None:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def prepare(config: ServeConfig) -> ServiceState:
    """The migrated database and the served problems (the server's view; its workers load their own)."""
    engine = make_engine(config.db_url)
    migrate(engine)
    factory = session_factory(engine)
    with transaction(factory) as session:
        served = catalog.serve_datasets(session, config.datasets)
    problems = {pid: (dataset.name, problem) for dataset in served for pid, problem in dataset.problems.items()}
    if not problems:
        raise catalog.CatalogError("no problem to serve: every --dataset was empty or refused")
    return ServiceState(config, factory, problems, None)


def serve(config: ServeConfig) -> None:
    import uvicorn

    from solbench.serve.app import create_app

    state = prepare(config)
    app = create_app(state)
    supervisor = Supervisor(config)
    signal.signal(signal.SIGTERM, _exit)  # uvicorn re-raises the signal after its graceful stop: then the workers are stopped too
    supervisor.start()
    try:
        print(f"serve: http://{config.host}:{config.port}/ ({len(state.served)} problems, database {config.db_url.split('@')[-1]})",
              file=sys.stderr, flush=True)
        uvicorn.run(app, host=config.host, port=config.port, log_level="warning", timeout_graceful_shutdown=5)
    finally:
        supervisor.stop()


def _exit(_signum: int, _frame: Any) -> None:
    raise SystemExit(0)
