"""The safe evaluator of axis expressions and constraints."""

from __future__ import annotations

from fractions import Fraction

import pytest

from solbench.data.expressions import Expression, ExpressionError, evaluate_integer, parse_expression

AXES = {"M": 3, "N": 4, "K": 10}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("M * N", 12),
        ("M + N - K", -3),
        ("K // M", 3),
        ("-K // M", -4),  # floor division rounds towards -inf, like Python
        ("K % M", 1),
        ("-K % M", 2),
        ("2 ** 10", 1024),
        ("2 ** 64", 2**64),
        ("M ** 0", 1),
        ("-M", -3),
        ("+M", 3),
        ("--M", 3),
        ("min(M, N, K)", 3),
        ("max(M, N, K)", 10),
        ("min(K, 2)", 2),
        ("abs(M - K)", 7),
        ("cdiv(K, M)", 4),
        ("ceil_div(K, M)", 4),
        ("cdiv(12, M)", 4),
        ("cdiv(0, M)", 0),
        ("cdiv(K, N) * N", 12),
        ("max(1, cdiv(M * N, 5))", 3),
        ("  M + 1  ", 4),  # surrounding whitespace is ignored
        ("K / 2", 5),
        ("M * N / 6", 2),
    ],
)
def test_integer_arithmetic(source: str, expected: int):
    result = parse_expression(source).evaluate(AXES)
    assert result == expected
    assert type(result) is int


def test_exact_division_gives_a_fraction_when_not_whole():
    result = parse_expression("K / M").evaluate(AXES)
    assert result == Fraction(10, 3)
    assert isinstance(result, Fraction)
    assert parse_expression("1 / 3 + 1 / 3 + 1 / 3").evaluate({}) == 1  # no float rounding
    assert parse_expression("K / 4 * 2").evaluate(AXES) == 5
    assert parse_expression("(K / M) * M == K").evaluate(AXES) is True
    # a fraction with denominator 1 after further arithmetic: evaluate_integer gives a plain int
    assert evaluate_integer("(K / M) * M", AXES) == 10
    assert type(evaluate_integer("(K / M) * M", AXES)) is int
    # floor division and modulo of fractions stay exact
    assert parse_expression("(K / M) // 1").evaluate(AXES) == 3
    assert parse_expression("(K / M) % 1").evaluate(AXES) == Fraction(1, 3)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("M == 3", True),
        ("M != 3", False),
        ("M < N", True),
        ("M <= 3", True),
        ("M > N", False),
        ("N >= 5", False),
        ("1 < M < N < K", True),
        ("1 < M < 3", False),
        ("M < N > 2", True),  # chains compare neighbours only
        ("M < N > K", False),
        ("K == M * 3 + 1", True),
        ("M > 1 and N > 1", True),
        ("M > 1 and N > 5", False),
        ("M > 5 or N > 1", True),
        ("M > 5 or N > 5", False),
        ("not M > 5", True),
        ("not M", False),
        ("not 0", True),
        ("M > 1 and N > 1 and K > 1", True),
        ("(M > 5 or N == 4) and not K == 1", True),
        ("K / M > 3", True),
        ("K / M < 4", True),
    ],
)
def test_comparisons_and_boolean_operators(source: str, expected: bool):
    result = parse_expression(source).evaluate(AXES)
    assert result is expected


def test_names_are_collected():
    assert parse_expression("min(M, N) * cdiv(K, 2) + 1").names == frozenset({"M", "N", "K"})
    assert parse_expression("3 + 4").names == frozenset()
    assert parse_expression("x_1 < y2 and not z").names == frozenset({"x_1", "y2", "z"})


@pytest.mark.parametrize(
    "source",
    [
        "M.real",  # attribute access
        "x.__class__",
        "().__class__.__bases__",
        "foo(M)",  # a call of a name outside min/max/abs/cdiv/ceil_div
        "len(M)",
        "eval('1')",
        "__import__('os')",
        "__import__('os').system('true')",
        "M.bit_length()",
        "min(M, key=N)",  # keywords are not allowed either
        "min(*M)",
        "1.5",  # float literals
        "M * 0.5",
        "1e3",
        "lambda: 1",
        "M[0]",
        "M[0:1]",
        "'abc'",
        "b'abc'",
        "True",
        "None",
        "M if N else K",
        "[M, N]",
        "(M, N)",
        "{M: N}",
        "(M := 3)",
        "M << 1",
        "M & N",
        "M | N",
        "~M",
        "M @ N",
        "M in N",
        "M is N",
        "min",  # a function used as a value
        "cdiv",
        "[x for x in M]",
        "f'{M}'",
        "1j",
    ],
)
def test_rejected_syntax(source: str):
    with pytest.raises(ExpressionError) as info:
        Expression(source)
    assert repr(source) in str(info.value) or source in str(info.value)


@pytest.mark.parametrize("source", ["", "   ", "1 +", "M N", "(M", "M = 3", "import os", "M\n+1"])
def test_unparsable_source(source: str):
    with pytest.raises(ExpressionError, match="cannot parse expression"):
        parse_expression(source)


def test_expression_error_is_a_value_error():
    # pydantic turns ValueErrors raised in validators into ValidationErrors; the field checks rely on it.
    assert issubclass(ExpressionError, ValueError)


def test_unknown_names_are_reported_sorted():
    expression = parse_expression("Z + A * M")
    with pytest.raises(ExpressionError, match=r"unknown axis A, Z"):
        expression.evaluate({"M": 1})
    assert expression.evaluate({"M": 1, "A": 2, "Z": 3}) == 5


def test_unknown_names_are_checked_even_where_evaluation_would_not_reach_them():
    with pytest.raises(ExpressionError, match="unknown axis B"):
        parse_expression("M > 5 and B > 0").evaluate({"M": 1})


@pytest.mark.parametrize(
    ("source", "values"),
    [
        ("M / 0", {"M": 1}),
        ("M / N", {"M": 1, "N": 0}),
        ("M // N", {"M": 1, "N": 0}),
        ("M % N", {"M": 1, "N": 0}),
        ("cdiv(M, N)", {"M": 1, "N": 0}),
        ("ceil_div(M, 0)", {"M": 1}),
        ("0 / 0", {}),
    ],
)
def test_division_by_zero(source: str, values: dict[str, int]):
    with pytest.raises(ExpressionError, match="division by zero"):
        parse_expression(source).evaluate(values)


@pytest.mark.parametrize("source", ["2 ** -1", "M ** (0 - 1)", "4 ** (1 / 2)"])
def test_exponent_must_be_a_whole_number(source: str):
    with pytest.raises(ExpressionError, match="must be a whole number >= 0"):
        parse_expression(source).evaluate({"M": 2})


@pytest.mark.parametrize("source", ["2 ** 300", "M ** 100", "((M ** 64) ** 64) ** 64"])
def test_powers_beyond_2_to_the_256_are_rejected(source: str):
    with pytest.raises(ExpressionError, match="too large"):
        parse_expression(source).evaluate({"M": 1024})


def test_large_but_sane_powers_evaluate():
    assert parse_expression("2 ** 65").evaluate({}) == 2**65
    assert parse_expression("M ** 2").evaluate({"M": 1 << 20}) == 1 << 40


def test_evaluate_integer():
    assert evaluate_integer("M * N", AXES) == 12
    assert evaluate_integer("K / 5", AXES) == 2
    assert type(evaluate_integer("K / 5", AXES)) is int
    with pytest.raises(ExpressionError, match="not an integer"):
        evaluate_integer("K / M", AXES)
    with pytest.raises(ExpressionError, match="not an integer"):
        evaluate_integer("M > 1", AXES)  # a boolean is not a size
    with pytest.raises(ExpressionError, match="not an integer"):
        evaluate_integer("not M", AXES)
    with pytest.raises(ExpressionError, match="unknown axis"):
        evaluate_integer("Q", AXES)
    with pytest.raises(ExpressionError, match="division by zero"):
        evaluate_integer("M // 0", AXES)


def test_parse_cache_reuses_the_parsed_expression():
    source = "cache_probe_A * cache_probe_B + 17"
    first = parse_expression(source)
    hits = parse_expression.cache_info().hits
    second = parse_expression(source)
    assert second is first
    assert parse_expression.cache_info().hits == hits + 1
    assert first.source == source
    # a failed parse is not cached: it fails every time, with the same error
    for _ in range(2):
        with pytest.raises(ExpressionError):
            parse_expression("cache_probe(")


def test_evaluation_does_not_depend_on_cached_values():
    expression = parse_expression("cache_probe_C + 1")
    assert expression.evaluate({"cache_probe_C": 1}) == 2
    assert parse_expression("cache_probe_C + 1").evaluate({"cache_probe_C": 41}) == 42


@pytest.mark.parametrize("source", ["min()", "abs(1, 2)", "cdiv(1)"])
def test_wrong_argument_count_is_an_expression_error(source: str):
    with pytest.raises(ExpressionError):
        parse_expression(source).evaluate({})
