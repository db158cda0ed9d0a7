"""The leaderboard service (`solbench serve`): submissions over HTTP into a real database (SQLite or
PostgreSQL, through SQLAlchemy with Alembic migrations), a job queue with leases in that database,
workers that evaluate through solbench.exec, versioned results and server-rendered pages.

Modules, one job each: config (settings and limits), models (tables), database (engines, sessions,
migrations), auth (tokens), catalog (datasets and problems by content hash), intake (checking a
submission), queue (claims and leases), environment (the version key of a worker), results (traces,
baselines and scores into the database), worker (the evaluating process), boards (leaderboards), state
(what the routes share),
views (what the pages show), templates and pages (HTML), api (JSON routes), app (the FastAPI app),
server (what `solbench serve` starts), client (`solbench submit`).

Needs the `serve` extra: pip install 'solbench[serve]'."""
