"""CEL's operators on run-time values: arithmetic, comparison, membership, indexing and
field selection, with cel-go's overflow rules and error texts.

Integers are 64-bit: results outside the range raise ``integer overflow``; division
truncates toward zero and ``%`` takes the dividend's sign, as in Go. Doubles follow
IEEE 754 (dividing by zero gives an infinity, not an error). Timestamps and durations
combine as CEL allows (``timestamp - timestamp`` is a duration).
"""

from __future__ import annotations

import math
from typing import Any

from karpy.sandbox.apiserver.schema.cel.values import (
    INT_MIN,
    NANOS,
    TIMESTAMP_MAX_SECONDS,
    TIMESTAMP_MIN_SECONDS,
    UINT_MAX,
    CelEvalError,
    Duration,
    Timestamp,
    UInt,
    cel_compare,
    cel_equal,
    check_int,
    no_such_overload,
    type_name,
)

__all__ = [
    "add",
    "contains",
    "divide",
    "index",
    "modulo",
    "multiply",
    "negate",
    "select",
    "subtract",
]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _checked_duration(nanos: int) -> Duration:
    if nanos > 2**63 - 1 or nanos < INT_MIN:
        raise CelEvalError("duration overflow")
    return Duration(nanos)


def _checked_timestamp(nanos: int) -> Timestamp:
    seconds = nanos // NANOS
    if seconds < TIMESTAMP_MIN_SECONDS or seconds > TIMESTAMP_MAX_SECONDS:
        raise CelEvalError("timestamp overflow")
    return Timestamp(nanos)


def _uint(value: int) -> UInt:
    if value < 0 or value > UINT_MAX:
        raise CelEvalError("unsigned integer overflow")
    return UInt(value)


def add(left: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        return check_int(left + right)
    if isinstance(left, float) and isinstance(right, float):
        return left + right
    if isinstance(left, str) and isinstance(right, str):
        return left + right
    if isinstance(left, list) and isinstance(right, list):
        return [*left, *right]
    if isinstance(left, UInt) and isinstance(right, UInt):
        return _uint(left.value + right.value)
    if isinstance(left, bytes) and isinstance(right, bytes):
        return left + right
    if isinstance(left, Duration) and isinstance(right, Duration):
        return _checked_duration(left.nanos + right.nanos)
    if isinstance(left, Timestamp) and isinstance(right, Duration):
        return _checked_timestamp(left.nanos + right.nanos)
    if isinstance(left, Duration) and isinstance(right, Timestamp):
        return _checked_timestamp(left.nanos + right.nanos)
    raise no_such_overload("_+_", left, right)


def subtract(left: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        return check_int(left - right)
    if isinstance(left, float) and isinstance(right, float):
        return left - right
    if isinstance(left, UInt) and isinstance(right, UInt):
        return _uint(left.value - right.value)
    if isinstance(left, Duration) and isinstance(right, Duration):
        return _checked_duration(left.nanos - right.nanos)
    if isinstance(left, Timestamp) and isinstance(right, Timestamp):
        return _checked_duration(left.nanos - right.nanos)
    if isinstance(left, Timestamp) and isinstance(right, Duration):
        return _checked_timestamp(left.nanos - right.nanos)
    raise no_such_overload("_-_", left, right)


def multiply(left: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        return check_int(left * right)
    if isinstance(left, float) and isinstance(right, float):
        return left * right
    if isinstance(left, UInt) and isinstance(right, UInt):
        return _uint(left.value * right.value)
    raise no_such_overload("_*_", left, right)


def _truncated_division(left: int, right: int) -> int:
    quotient = abs(left) // abs(right)
    return quotient if (left >= 0) == (right >= 0) else -quotient


def divide(left: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        if right == 0:
            raise CelEvalError("division by zero")
        return check_int(_truncated_division(left, right))
    if isinstance(left, float) and isinstance(right, float):
        if right == 0:
            if left == 0 or math.isnan(left):
                return math.nan
            return math.copysign(math.inf, left) * math.copysign(1.0, right)
        return left / right
    if isinstance(left, UInt) and isinstance(right, UInt):
        if right.value == 0:
            raise CelEvalError("division by zero")
        return UInt(left.value // right.value)
    raise no_such_overload("_/_", left, right)


def modulo(left: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        if right == 0:
            raise CelEvalError("modulus by zero")
        return left - right * _truncated_division(left, right)
    if isinstance(left, UInt) and isinstance(right, UInt):
        if right.value == 0:
            raise CelEvalError("modulus by zero")
        return UInt(left.value % right.value)
    raise no_such_overload("_%_", left, right)


def negate(value: Any) -> Any:
    if _is_int(value):
        return check_int(-value)
    if isinstance(value, float):
        return -value
    if isinstance(value, Duration):
        return _checked_duration(-value.nanos)
    raise no_such_overload("-_", value)


def contains(item: Any, container: Any) -> bool:
    """``item in container``: list membership by CEL equality, or a map key."""
    if isinstance(container, list):
        return any(cel_equal(item, element) for element in container)
    if isinstance(container, dict):
        if isinstance(item, str):
            return item in container
        return any(cel_equal(item, key) for key in container)
    raise no_such_overload("@in", item, container)


def _list_position(container: list[Any], position: Any) -> int:
    number: int
    if _is_int(position):
        number = position
    elif isinstance(position, UInt):
        number = position.value
    elif isinstance(position, float) and position.is_integer():
        number = int(position)
    else:
        raise CelEvalError(f"unsupported index type '{type_name(position)}' in list")
    if number < 0 or number >= len(container):
        raise CelEvalError(f"index out of bounds: {number}")
    return number


def index(container: Any, key: Any) -> Any:
    """``container[key]``."""
    if isinstance(container, list):
        return container[_list_position(container, key)]
    if isinstance(container, dict):
        if isinstance(key, str):
            if key in container:
                return container[key]
        else:
            for candidate, value in container.items():
                if cel_equal(candidate, key):
                    return value
        raise CelEvalError(f"no such key: {key}")
    raise no_such_overload("_[_]", container, key)


def select(container: Any, field: str) -> Any:
    """``container.field`` on a map or an object."""
    if isinstance(container, dict):
        try:
            return container[field]
        except KeyError:
            raise CelEvalError(f"no such key: {field}") from None
    raise CelEvalError(f"type '{type_name(container)}' does not support field selection")


def compare(operator: str, left: Any, right: Any) -> bool:
    """The ordering operators (``<``, ``<=``, ``>``, ``>=``)."""
    order = cel_compare(left, right)
    if operator == "<":
        return order < 0
    if operator == "<=":
        return order <= 0
    if operator == ">":
        return order > 0
    return order >= 0
