"""Server-side checks of visitors' inputs, shared by every tab. The browser's limits are not
enough (an API client can send huge strings, NaN, fractions); each check raises InputError
with a message written to be shown as is."""
from __future__ import annotations

import math
from typing import Any, Optional


class InputError(ValueError):
    """A visitor's input that cannot be used; the message is shown as written."""


def finite_number(value: Any, name: str) -> float:
    if isinstance(value, bool) or value is None:
        raise InputError(f"{name} must be a number, got {value!r}.")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number, got {value!r}.") from None
    if not math.isfinite(number):
        raise InputError(f"{name} must be a finite number, got {value!r}.")
    return number


def whole_number(value: Any, name: str, low: int, high: Optional[int] = None) -> int:
    """An integer in [low, high] (high=None: no upper bound); NaN, fractions and out-of-range
    values raise in plain words."""
    try:
        number = finite_number(value, name)
    except InputError as error:
        raise InputError(f"{error} {name} must be a whole number.") from None
    if number != int(number):
        raise InputError(f"{name} must be a whole number, got {value!r}.")
    number = int(number)
    if number < low or (high is not None and number > high):
        span = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InputError(f"{name} must be {span}, got {number}.")
    return number
