"""Parsing of share specifications: `category=attention:0.30,moe:0.12` (for --target and --share)."""

from __future__ import annotations

from solbench.data.errors import SpecError
from solbench.dataset.catalog.row import DIMENSIONS

SYNTAX = "DIM=value:share[,value:share...] with shares between 0 and 1"


def parse_shares(text: str, option: str) -> tuple[str, dict[str, float]]:
    """(dimension, {value: share}) from one option value; SpecError naming the option otherwise."""
    dimension, sep, rest = text.partition("=")
    dimension = dimension.strip()
    if not sep or not dimension or not rest.strip():
        raise SpecError(f"expected {SYNTAX}, got {text!r}", field=option)
    check_dimension(dimension, option)
    shares: dict[str, float] = {}
    for item in rest.split(","):
        value, sep, number = item.strip().rpartition(":")
        value = value.strip()
        if not sep or not value:
            raise SpecError(f"expected value:share in {text!r}, got {item.strip()!r}", field=option)
        try:
            share = float(number)
        except ValueError:
            raise SpecError(f"share of {value!r} is not a number: {number!r}", field=option) from None
        if not 0 <= share <= 1:
            raise SpecError(f"share of {value!r} must be between 0 and 1, got {number.strip()}", field=option)
        if value in shares:
            raise SpecError(f"{dimension}={value} is given twice", field=option)
        shares[value] = share
    if sum(shares.values()) > 1 + 1e-9:
        raise SpecError(f"shares of {dimension} add up to {sum(shares.values()):.3g}, more than 1", field=option)
    return dimension, shares


def parse_all(texts: list[str], option: str) -> dict[str, dict[str, float]]:
    """Several option values; a dimension given twice is merged (a value given twice is an error)."""
    merged: dict[str, dict[str, float]] = {}
    for text in texts:
        dimension, shares = parse_shares(text, option)
        into = merged.setdefault(dimension, {})
        for value, share in shares.items():
            if value in into:
                raise SpecError(f"{dimension}={value} is given twice", field=option)
            into[value] = share
        if sum(into.values()) > 1 + 1e-9:
            raise SpecError(f"shares of {dimension} add up to {sum(into.values()):.3g}, more than 1", field=option)
    return merged


def check_dimension(dimension: str, option: str) -> None:
    if dimension not in DIMENSIONS:
        raise SpecError(f"unknown dimension {dimension!r}; expected one of {', '.join(DIMENSIONS)}", field=option)
