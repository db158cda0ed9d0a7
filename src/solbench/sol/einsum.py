"""Einsum equations: the output shape of a two-operand einsum, and its index sizes by role."""

from __future__ import annotations

from math import prod
from typing import Any

_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def parse(equation: str, a_shape: tuple[Any, ...], b_shape: tuple[Any, ...]) -> tuple[str, str, str, dict[str, Any]] | None:
    """(indices of a, of b, of the output, size of each index), with '...' spelled out; None when the
    equation does not fit the shapes."""
    equation = equation.replace(" ", "")
    inputs, arrow, output = equation.partition("->")
    terms = inputs.split(",")
    if len(terms) != 2:
        return None
    used = set(equation) - set(",->.")
    spare = [c for c in _LETTERS if c not in used]
    rank = 0
    for term, shape in zip(terms, (a_shape, b_shape)):
        if "..." in term:
            rank = max(rank, len(shape) - (len(term) - 3))
    ellipsis = "".join(spare[:rank])

    def spell(term: str, shape: tuple[Any, ...]) -> str | None:
        if "..." in term:
            own = len(shape) - (len(term) - 3)
            term = term.replace("...", ellipsis[rank - own:] if own > 0 else "")
        return term if len(term) == len(shape) else None

    left, right = spell(terms[0], a_shape), spell(terms[1], b_shape)
    if left is None or right is None:
        return None
    sizes: dict[str, Any] = {}
    for term, shape in ((left, a_shape), (right, b_shape)):
        for letter, size in zip(term, shape):
            if letter in sizes and sizes[letter] != size and size != 1:
                if sizes[letter] != 1:
                    return None
            if letter not in sizes or sizes[letter] == 1:
                sizes[letter] = size
    if arrow:
        out = output.replace("...", ellipsis)
    else:
        counts = {c: (left + right).count(c) for c in set(left + right)}
        out = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ellipsis))
    if any(c not in sizes for c in out):
        return None
    return left, right, out, sizes


def output_shape(equation: str, a_shape: tuple[Any, ...], b_shape: tuple[Any, ...]) -> tuple[Any, ...] | None:
    parsed = parse(equation, a_shape, b_shape)
    if parsed is None:
        return None
    _, _, out, sizes = parsed
    return tuple(sizes[c] for c in out)


def roles(equation: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> dict[str, int] | None:
    """Sizes of the batch (in both and the output), m (a and output), n (b and output) and k
    (summed) indices, and of every index together (all)."""
    parsed = parse(equation, a_shape, b_shape)
    if parsed is None:
        return None
    left, right, out, sizes = parsed
    letters = set(left) | set(right)
    group = {
        "batch": [c for c in letters if c in left and c in right and c in out],
        "m": [c for c in letters if c in left and c not in right and c in out],
        "n": [c for c in letters if c in right and c not in left and c in out],
        "k": [c for c in letters if c not in out],
    }
    found = {role: prod(sizes[c] for c in members) for role, members in group.items()}
    found["all"] = prod(sizes[c] for c in letters)
    found["k_in_both"] = int(all(c in left and c in right for c in group["k"]))
    return found
