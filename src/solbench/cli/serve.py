"""`solbench serve` (the leaderboard service), `solbench serve-admin` (users, baselines) and
`solbench submit` (its client). The service needs the serve extra; the client needs nothing more."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import typer

from .app import app

admin = typer.Typer(name="serve-admin", help="Administer a leaderboard service's database: users and baselines.", no_args_is_help=True)
app.add_typer(admin)

DbOption = Annotated[Optional[str], typer.Option("--db", envvar="SOLBENCH_DB", help="Database URL: sqlite:///FILE (default: ./solbench-serve.db) or postgresql://USER:PASSWORD@HOST:PORT/NAME.")]


def _fail(message: str, code: int = 2) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(code)


def _with_service(action: Callable[[], Any]) -> Any:
    """Run `action`, turning a missing extra or an unusable database or dataset into one line, exit code 2."""
    try:
        from solbench.serve.catalog import CatalogError
        from solbench.serve.database import DatabaseError
    except ImportError as exc:
        _fail(f"the leaderboard service needs the serve extra: pip install 'solbench[serve]' ({exc.name} is missing)")
    try:
        return action()
    except (DatabaseError, CatalogError) as exc:
        _fail(str(exc))


@app.command("serve")
def serve_command(
    db: DbOption = None,
    dataset: Annotated[Optional[list[str]], typer.Option("--dataset", help="Problem or dataset folders to serve (repeatable); solbench:models for the bundled model set. Default: the bundled problems.")] = None,
    executor: Annotated[str, typer.Option(help="Where the worker evaluates: serial, pool (lanes of this host, --lanes) or ray (--address).")] = "serial",
    lanes: Annotated[Optional[str], typer.Option(help="Pool lanes: all, N or GPU indices such as 0,1 (without a GPU, N CPU lanes).")] = None,
    address: Annotated[Optional[str], typer.Option(help="With --executor ray: auto or HOST:PORT of a running Ray cluster.")] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.", min=1, max=65535)] = 8000,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda or cuda:N.")] = "auto",
    hardware: Annotated[Optional[str], typer.Option(help="Hardware spec that prices T_SOL (default: the GPU's datasheet entry; a calibrated spec on a CPU).")] = None,
    workloads: Annotated[str, typer.Option(help="Workloads evaluated per problem: all, smallest:N or spread:N (default: all on a GPU, smallest:2 on a CPU).")] = "auto",
    trials: Annotated[int, typer.Option(min=1, help="Correctness trials per workload.")] = 3,
    hidden: Annotated[int, typer.Option(min=0, help="Held-out workloads drawn per evaluation (correctness only).")] = 2,
    timing_budget: Annotated[Optional[float], typer.Option("--timing-budget", min=0.01, help="Seconds of timing per workload (default: the evaluator's).")] = None,
    lease: Annotated[float, typer.Option(min=1, help="Seconds a claimed job stays leased without a heartbeat before another worker may claim it.")] = 60.0,
    workers: Annotated[int, typer.Option(min=0, help="Worker processes to start here (0: none; run them elsewhere with python -m solbench.serve.worker).")] = 1,
    batch: Annotated[int, typer.Option(min=1, help="Jobs a worker claims at once.")] = 4,
    public: Annotated[bool, typer.Option("--public", help="Every user may read every submission's source and results.")] = False,
    max_body_bytes: Annotated[int, typer.Option("--max-body-bytes", min=1024, help="Largest submission accepted (413 beyond).")] = 2 << 20,
    max_sources: Annotated[int, typer.Option("--max-sources", min=1, help="Most source files per solution.")] = 32,
    per_hour: Annotated[int, typer.Option("--submissions-per-hour", min=1, help="Submissions per user per hour (429 with Retry-After beyond).")] = 60,
) -> None:
    """The leaderboard service: an HTTP API for submissions and server-rendered leaderboards over a
    database, with workers evaluating the queue. On a new database an admin user is made and its token printed once."""
    from solbench.exec import EXECUTORS

    if executor not in EXECUTORS:
        raise typer.BadParameter(f"expected one of {', '.join(EXECUTORS)}, got {executor!r}", param_hint="--executor")
    if workloads != "auto" and not (workloads == "all" or (workloads.partition(":")[0] in {"smallest", "spread"} and workloads.partition(":")[2].isdigit())):
        raise typer.BadParameter(f"expected auto, all, smallest:N or spread:N, got {workloads!r}", param_hint="--workloads")

    def run() -> None:
        from solbench.serve.config import EvalSettings, Limits, ServeConfig, default_db_url
        from solbench.serve.server import serve

        config = ServeConfig(db_url=db or default_db_url(), datasets=tuple(dataset or ()), host=host, port=port, lease_s=lease, public=public,
                             workers=workers, limits=Limits(max_body_bytes=max_body_bytes, max_sources=max_sources, submissions_per_hour=per_hour),
                             evaluation=EvalSettings(executor=executor, lanes=lanes, address=address, device=device, hardware=hardware,
                                                     workloads=workloads, trials=trials, hidden=hidden, timing_budget_s=timing_budget, batch=batch))
        _first_admin(config.db_url)
        serve(config)

    _with_service(run)


def _first_admin(db_url: str) -> None:
    """On a database without users: an admin named admin, its token printed once on stderr."""
    from sqlalchemy import func, select

    from solbench.serve.auth import create_user
    from solbench.serve.database import make_engine, migrate, session_factory, transaction
    from solbench.serve.models import User

    engine = make_engine(db_url)
    migrate(engine)
    with transaction(session_factory(engine)) as session:
        if session.scalar(select(func.count(User.id))):
            return
        _, token = create_user(session, "admin", admin=True)
    print(f"serve: made the admin user 'admin'; its API token (shown once): {token}", file=sys.stderr, flush=True)


def _session(db: str | None):  # type: ignore[no-untyped-def]
    from solbench.serve.config import default_db_url
    from solbench.serve.database import make_engine, migrate, session_factory, transaction

    engine = make_engine(db or default_db_url())
    migrate(engine)
    return transaction(session_factory(engine))


@admin.command("add-user")
def add_user(name: Annotated[str, typer.Argument(help="The new user's name.")], db: DbOption = None,
             is_admin: Annotated[bool, typer.Option("--admin", help="May use the admin routes.")] = False) -> None:
    """Make a user and print its API token (shown this once; only its hash is stored)."""
    def run() -> None:
        from solbench.serve.auth import create_user

        try:
            with _session(db) as session:
                _, token = create_user(session, name, admin=is_admin)
        except ValueError as exc:
            _fail(str(exc), 1)
        print(token)

    _with_service(run)


@admin.command("rebaseline")
def rebaseline(db: DbOption = None) -> None:
    """Measure every served problem's baselines again (for the key of the worker that claims them: a new software version gets its own)."""
    def run() -> None:
        from sqlalchemy import select

        from solbench.serve.models import Problem
        from solbench.serve.queue import enqueue_baselines

        with _session(db) as session:
            made = enqueue_baselines(session, list(session.scalars(select(Problem.id))), None)
        print(f"{made} baseline job(s) queued")

    _with_service(run)


@app.command("submit")
def submit_command(
    solution: Annotated[Path, typer.Argument(metavar="SOLUTION.json", help="The solution JSON (sources inline or beside it, as for eval).")],
    server: Annotated[str, typer.Option("--server", envvar="SOLBENCH_SERVER", help="The service's URL, e.g. http://127.0.0.1:8000.")],
    dataset: Annotated[Optional[str], typer.Option(help="The dataset holding the problem, where the service serves several that do.")] = None,
    token_file: Annotated[Optional[Path], typer.Option("--token-file", help="File holding the API token (default ~/.config/solbench/token; $SOLBENCH_TOKEN comes first).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Wait until it is evaluated and print its results; exit code 1 unless every workload passed.")] = False,
    wait_timeout: Annotated[float, typer.Option("--wait-timeout", min=1, help="Seconds to wait with --wait.")] = 3600.0,
) -> None:
    """Send a solution to a leaderboard service; exits non-zero with the server's one-line reason when refused."""
    from solbench.data.errors import SpecError
    from solbench.data.loaders import load_solution
    from solbench.serve import client

    try:
        answer = client.submit(load_solution(solution), server, client.find_token(token_file), dataset)
        print(f"submission {answer['id']} {answer['state']}: {server.rstrip('/')}{answer['url']}")
        if wait:
            found = client.wait(server, client.find_token(token_file), answer["id"], wait_timeout)
            for row in found["results"]:
                print(f"  {row['workload']}: {row['status']}" + (f"  score {row['score']:.3f}" if row["score"] is not None else ""))
            print(f"submission {answer['id']}: {found['state']}")
            if found["state"] != "done" or any(row["status"] != "PASSED" for row in found["results"]):
                raise typer.Exit(1)
    except client.ClientError as exc:
        _fail(str(exc), exc.code)
    except SpecError as exc:
        for issue in exc.issues:
            print(str(issue), file=sys.stderr)
        raise typer.Exit(1) from None
