"""Alembic migrations of the service's database (run by solbench.serve.database.migrate)."""
