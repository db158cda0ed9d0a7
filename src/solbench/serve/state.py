"""What every route shares: the settings, the database's sessions and the problems served."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from solbench.data.problem import Problem as LoadedProblem
from solbench.serve.config import ServeConfig


@dataclass
class ServiceState:
    config: ServeConfig
    factory: sessionmaker[Session]
    served: dict[int, tuple[str, LoadedProblem]]  # problem row id -> (dataset name, problem)
    templates: Any  # the jinja2 Environment of the pages
