"""CEL runtime values and the operators on them, with cel-go's semantics.

Values are plain Python objects wherever the meaning is the same, so a decoded JSON
object is already a CEL value: None is ``null``, bool, int (``int``, range-checked to
64 bits), float (``double``), str, bytes, list and dict. The CEL types Python lacks get
small classes here: `UInt`, `Duration`, `Timestamp`, `CelOptional` and `TypeValue`.
Lists from ``x-kubernetes-list-type: set`` or ``map`` fields are `SetList`/`MapList`,
because Kubernetes compares them ignoring order.

Errors are exceptions (`CelEvalError`) carrying cel-go's message text (``no such key:
foo``, ``division by zero``, ``type conversion error from 'string' to 'int'``), because
kube-apiserver puts that text in the field error a failing rule reports. The logical
operators and macros catch them to implement CEL's commutative error absorption.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from karpy.sandbox.apiserver.schema.gofmt import go_float_plain

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "CelEvalError",
    "CelOptional",
    "Duration",
    "MapList",
    "SetList",
    "Timestamp",
    "TypeValue",
    "UInt",
    "cel_compare",
    "cel_equal",
    "check_int",
    "no_such_overload",
    "type_name",
]

INT_MAX = 2**63 - 1
INT_MIN = -(2**63)
UINT_MAX = 2**64 - 1
# Timestamps CEL can represent: years 0001 to 9999.
TIMESTAMP_MIN_SECONDS = -62135596800
TIMESTAMP_MAX_SECONDS = 253402300799
NANOS = 1_000_000_000


class CelEvalError(Exception):
    """A CEL evaluation error; ``str(err)`` is cel-go's message for it."""


def no_such_overload(name: str = "", *args: Any) -> CelEvalError:
    if not name:
        return CelEvalError("no such overload")
    signature = ", ".join(type_name(a) for a in args)
    return CelEvalError(f"no such overload: {name}({signature})")


@attrs.frozen(slots=True)
class UInt:
    """A CEL ``uint`` (Python has one integer type; ``uint`` must stay distinct)."""

    value: int

    def __str__(self) -> str:
        return f"{self.value}u"


@attrs.frozen(slots=True, order=True)
class Duration:
    """A CEL ``google.protobuf.Duration``, in nanoseconds."""

    nanos: int

    def cel_string(self) -> str:
        """``string(duration)``: seconds in shortest decimal form, then ``s``."""
        return go_float_plain(self.nanos / NANOS) + "s"


@attrs.frozen(slots=True, order=True)
class Timestamp:
    """A CEL ``google.protobuf.Timestamp``: nanoseconds since the Unix epoch, UTC."""

    nanos: int

    @classmethod
    def from_datetime(cls, value: datetime) -> Timestamp:
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        total = (delta.days * 86400 + delta.seconds) * NANOS + delta.microseconds * 1000
        return cls(total)

    def to_datetime(self, tz: Any = UTC) -> datetime:
        seconds, nanos = divmod(self.nanos, NANOS)
        base = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
        base = base + timedelta(microseconds=nanos // 1000)
        return base.astimezone(tz)

    def cel_string(self) -> str:
        """RFC 3339 with the fewest fractional digits, as Go's ``RFC3339Nano``."""
        seconds, nanos = divmod(self.nanos, NANOS)
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds)
        text = moment.strftime("%Y-%m-%dT%H:%M:%S")
        if nanos:
            text += "." + f"{nanos:09d}".rstrip("0")
        return text + "Z"


@attrs.frozen(slots=True)
class CelOptional:
    """A CEL ``optional(T)`` value: `present` says whether it holds `value`."""

    present: bool
    value: Any = None


@attrs.frozen(slots=True)
class TypeValue:
    """A CEL type used as a value (``type(x)``, ``int``)."""

    name: str


class SetList(list[Any]):
    """A list from an ``x-kubernetes-list-type: set`` field: equality ignores order."""

    __slots__ = ()


class MapList(list[Any]):
    """A list from an ``x-kubernetes-list-type: map`` field: equality matches items by
    their map keys, ignoring order."""

    __slots__ = ("keys",)

    def __init__(self, items: list[Any], keys: tuple[str, ...]) -> None:
        super().__init__(items)
        self.keys = keys


def check_int(value: int) -> int:
    if value > INT_MAX or value < INT_MIN:
        raise CelEvalError("integer overflow")
    return value


def type_name(value: Any) -> str:
    """cel-go's name for the type of ``value`` (``int``, ``list``, ``map``...)."""
    if value is None:
        return "null_type"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, UInt):
        return "uint"
    if isinstance(value, Duration):
        return "google.protobuf.Duration"
    if isinstance(value, Timestamp):
        return "google.protobuf.Timestamp"
    if isinstance(value, CelOptional):
        return "optional_type"
    if isinstance(value, TypeValue):
        return "type"
    named = getattr(value, "cel_type_name", None)
    if isinstance(named, str):
        return named
    return type(value).__name__


def _number(value: Any) -> int | float | None:
    """The numeric value of an int, uint or double (None for anything else)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, UInt):
        return value.value
    return None


def cel_equal(left: Any, right: Any) -> bool:
    """CEL ``==``: heterogeneous (values of different types are unequal), numbers compare
    by value across int/uint/double, lists and maps element by element, and Kubernetes
    set/map lists regardless of order."""
    kind = left.__class__
    if kind is right.__class__ and (kind is str or kind is int):
        return bool(left == right)
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    left_number = _number(left)
    if left_number is not None:
        right_number = _number(right)
        if right_number is None:
            return False
        if isinstance(left_number, float) and math.isnan(left_number):
            return False
        return left_number == right_number
    if left is None or right is None:
        return left is None and right is None
    if isinstance(left, str | bytes):
        return type(left) is type(right) and left == right
    if isinstance(left, list):
        if not isinstance(right, list) or len(left) != len(right):
            return False
        if isinstance(left, SetList) or isinstance(right, SetList):
            return _set_equal(left, right)
        if isinstance(left, MapList) or isinstance(right, MapList):
            keys = left.keys if isinstance(left, MapList) else right.keys  # type: ignore[attr-defined]
            return _map_list_equal(left, right, keys)
        return all(cel_equal(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        if not isinstance(right, dict) or len(left) != len(right):
            return False
        for key, value in left.items():
            if key not in right or not cel_equal(value, right[key]):
                return False
        return True
    if type(left) is not type(right):
        return False
    return bool(left == right)


def _set_equal(left: list[Any], right: list[Any]) -> bool:
    return all(any(cel_equal(a, b) for b in right) for a in left) and all(
        any(cel_equal(b, a) for a in left) for b in right
    )


def _map_list_equal(left: list[Any], right: list[Any], keys: tuple[str, ...]) -> bool:
    def key_of(item: Any) -> tuple[Any, ...]:
        if not isinstance(item, dict):
            return (id(item),)
        return tuple(item.get(k) for k in keys)

    for item in left:
        matches = [other for other in right if _keys_equal(key_of(item), key_of(other))]
        if len(matches) != 1 or not cel_equal(item, matches[0]):
            return False
    return True


def _keys_equal(left: tuple[Any, ...], right: tuple[Any, ...]) -> bool:
    return all(cel_equal(a, b) for a, b in zip(left, right, strict=True))


def cel_compare(left: Any, right: Any) -> int:
    """-1, 0 or 1 for CEL's ordering operators; numbers order across int/uint/double."""
    if isinstance(left, bool) and isinstance(right, bool):
        return (left > right) - (left < right)
    left_number = _number(left)
    right_number = _number(right)
    if left_number is not None and right_number is not None:
        if isinstance(left_number, float) and math.isnan(left_number):
            raise CelEvalError("NaN values cannot be ordered")
        if isinstance(right_number, float) and math.isnan(right_number):
            raise CelEvalError("NaN values cannot be ordered")
        return (left_number > right_number) - (left_number < right_number)
    if isinstance(left, str | bytes | Duration | Timestamp) and type(left) is type(right):
        return (left > right) - (left < right)  # type: ignore[operator]
    compare = getattr(left, "cel_compare", None)
    if compare is not None and type(left) is type(right):
        result: int = compare(right)
        return result
    raise no_such_overload()
