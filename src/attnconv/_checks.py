"""Argument checks shared by the library: each failure names the argument and the rule."""

from __future__ import annotations

from typing import Sequence


def int_at_least(name: str, value: object, minimum: int) -> int:
    """Return ``value`` if it is an ``int`` (not a ``bool``) and ``>= minimum``, else raise ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        rule = {0: "a non-negative integer", 1: "a positive integer"}.get(minimum, f"an integer of at least {minimum}")
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return value


def positive_int(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` greater than zero, else raise ``ValueError``."""
    return int_at_least(name, value, 1)


def int_tuple(name: str, value: int | Sequence[int], dims: int, minimum: int) -> tuple[int, ...]:
    """Expand an int or a length-``dims`` sequence to a tuple of ints, each ``>= minimum``."""
    values = (value,) * dims if isinstance(value, int) and not isinstance(value, bool) else tuple(value)
    if len(values) != dims or any(isinstance(v, bool) or not isinstance(v, int) for v in values):
        raise ValueError(f"{name} must be an int or a sequence of {dims} ints, got {value!r}")
    if any(v < minimum for v in values):
        raise ValueError(f"{name} must be >= {minimum} in every dimension, got {value!r}")
    return values
