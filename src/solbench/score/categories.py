"""The categories a problem's score is broken down by, derived from its folder and definition:
subset (the dataset's subset folder: L1, L2, Quant, FlashInfer-Bench...), op type (the definition's
`op_type`, else its first tag), precision (the narrowest floating dtype among the tensor inputs,
else the narrowest integer one) and direction (backward when its name, op type or tags say so)."""

from __future__ import annotations

import re

from solbench.data.problem import Problem

NONE = "none"
BACKWARD = re.compile(r"(^|[^a-z])(backward|bwd|grad|vjp)([^a-z]|$)")


def tags_of(problem: Problem) -> list[str]:
    tags = (problem.definition.model_extra or {}).get("tags")
    return [str(tag) for tag in tags] if isinstance(tags, list) else []


def precision_of(problem: Problem) -> str:
    dtypes = [spec.dtype for spec in problem.definition.inputs.values() if spec.shape is not None]
    floats = [d for d in dtypes if d.is_floating]
    pool = floats or dtypes
    if not pool:
        return NONE
    return min(pool, key=lambda d: (d.bits, d.value)).value


def direction_of(problem: Problem) -> str:
    words = [problem.name, problem.definition.op_type or "", *tags_of(problem)]
    return "backward" if any(BACKWARD.search(word.lower()) for word in words) else "forward"


def categories_of(problem: Problem) -> dict[str, str]:
    tags = tags_of(problem)
    return {
        "subset": problem.subset or NONE,
        "op_type": problem.definition.op_type or (tags[0] if tags else NONE),
        "precision": precision_of(problem),
        "direction": direction_of(problem),
    }
