"""A small, safe evaluator for axis expressions and constraints (no eval, no attribute access).

Grammar: integers, axis names, + - * / // % **, unary + and -, comparisons (chains allowed),
`and`, `or`, `not`, and the functions min, max, abs, ceil_div/cdiv.
Division `/` is exact: it yields a Fraction when the result is not a whole number.
"""

from __future__ import annotations

import ast
import operator
from fractions import Fraction
from functools import lru_cache
from typing import Callable, Mapping

Number = int | Fraction | bool


class ExpressionError(ValueError):
    pass


def _ceil_div(a: Number, b: Number) -> Number:
    return -((-a) // b)


_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "ceil_div": _ceil_div,
    "cdiv": _ceil_div,
}
FUNCTION_NAMES = frozenset(_FUNCTIONS)
_ARITY = {"min": (2, None), "max": (2, None), "abs": (1, 1), "ceil_div": (2, 2), "cdiv": (2, 2)}
MAX_POWER_BITS = 256  # results of ** beyond 2**256 are rejected: no axis is that large
_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}


class Expression:
    """A parsed, checked expression; evaluate it with `evaluate(values)`."""

    def __init__(self, source: str):
        self.source = source
        try:
            tree = ast.parse(source.strip(), mode="eval")
        except SyntaxError as exc:
            raise ExpressionError(f"cannot parse expression {source!r}: {exc.msg}") from None
        self._body = tree.body
        self.names: frozenset[str] = frozenset(self._check(self._body))

    def _check(self, node: ast.AST) -> set[str]:
        """Reject anything outside the grammar; return the names used."""
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, int):
                raise ExpressionError(f"only integer literals are allowed in {self.source!r}, got {node.value!r}")
            return set()
        if isinstance(node, ast.Name):
            if node.id in _FUNCTIONS:
                raise ExpressionError(f"{node.id!r} is a function; call it in {self.source!r}")
            return {node.id}
        if isinstance(node, ast.BinOp) and (type(node.op) in _BINARY or isinstance(node.op, ast.Div)):
            return self._check(node.left) | self._check(node.right)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub, ast.Not)):
            return self._check(node.operand)
        if isinstance(node, ast.BoolOp):
            return set().union(*(self._check(v) for v in node.values))
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            return set().union(self._check(node.left), *(self._check(c) for c in node.comparators))
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords:
                allowed = ", ".join(sorted(_FUNCTIONS))
                raise ExpressionError(f"only the functions {allowed} may be called in {self.source!r}")
            least, most = _ARITY[node.func.id]
            if len(node.args) < least or (most is not None and len(node.args) > most):
                wanted = f"{least}" if least == most else f"at least {least}"
                raise ExpressionError(f"{node.func.id}() takes {wanted} argument(s), got {len(node.args)} in {self.source!r}")
            if any(isinstance(a, ast.Starred) for a in node.args):
                raise ExpressionError(f"* arguments are not allowed in {self.source!r}")
            return set().union(*(self._check(a) for a in node.args))
        raise ExpressionError(f"{type(node).__name__} is not allowed in expression {self.source!r}")

    def evaluate(self, values: Mapping[str, Number]) -> Number:
        missing = self.names - values.keys()
        if missing:
            raise ExpressionError(f"expression {self.source!r} uses unknown axis {', '.join(sorted(missing))}")
        try:
            return self._eval(self._body, values)
        except ZeroDivisionError:
            raise ExpressionError(f"division by zero in {self.source!r} with {dict(values)}") from None

    def _eval(self, node: ast.AST, values: Mapping[str, Number]) -> Number:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, values), self._eval(node.right, values)
            if isinstance(node.op, ast.Div):
                result = Fraction(left) / Fraction(right)
                return int(result) if result.denominator == 1 else result
            if isinstance(node.op, ast.Pow):
                if not isinstance(right, int) or isinstance(right, bool) or right < 0:
                    raise ExpressionError(f"exponent {right} must be a whole number >= 0 in {self.source!r}")
                if abs(left) > 1 and right * max(1, int(abs(left)).bit_length() - 1) > MAX_POWER_BITS:
                    raise ExpressionError(f"{left} ** {right} is too large in {self.source!r}")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self._eval(node.operand, values)
            if isinstance(node.op, ast.Not):
                return not operand
            return -operand if isinstance(node.op, ast.USub) else +operand
        if isinstance(node, ast.BoolOp):
            results = [self._eval(v, values) for v in node.values]
            return all(results) if isinstance(node.op, ast.And) else any(results)
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, values)
            for op, comparator in zip(node.ops, node.comparators):
                right = self._eval(comparator, values)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.Call):
            return _FUNCTIONS[node.func.id](*(self._eval(a, values) for a in node.args))
        raise AssertionError("unreachable: checked at parse time")


@lru_cache(maxsize=4096)
def parse_expression(source: str) -> Expression:
    """Parse once, reuse everywhere (datasets repeat the same expressions many times)."""
    return Expression(source)


def evaluate_integer(source: str, values: Mapping[str, Number]) -> int:
    """Evaluate an expression that must give a whole number (an axis size, a bound)."""
    result = parse_expression(source).evaluate(values)
    if isinstance(result, bool) or not isinstance(result, int):
        if isinstance(result, Fraction) and result.denominator == 1:
            return int(result)
        raise ExpressionError(f"expression {source!r} gives {result}, not an integer, with {dict(values)}")
    return result
