"""CEL's standard functions and the string, list and regex libraries Kubernetes enables.

Standard: ``size``, ``contains``, ``startsWith``, ``endsWith``, ``matches``, the type
conversions (``int``, ``uint``, ``double``, ``string``, ``bytes``, ``bool``, ``dyn``,
``type``, ``duration``, ``timestamp``) and the timestamp/duration accessors
(``getFullYear``, ``getHours``...). cel-go's string extensions: ``charAt``, ``indexOf``,
``lastIndexOf``, ``lowerAscii``, ``upperAscii``, ``replace``, ``split``, ``substring``,
``trim``, ``join``, ``reverse``, ``format``, ``strings.quote``. Kubernetes' list library:
``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``, ``lastIndexOf``; and its regex
library: ``find``, ``findAll``. Error texts are cel-go's.
"""

from __future__ import annotations

import itertools
import math
import re
from datetime import UTC, datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from karpy.durations import DurationError, parse_duration
from karpy.sandbox.apiserver.schema.cel.library import register
from karpy.sandbox.apiserver.schema.cel.values import (
    INT_MAX,
    INT_MIN,
    NANOS,
    TIMESTAMP_MAX_SECONDS,
    TIMESTAMP_MIN_SECONDS,
    UINT_MAX,
    CelEvalError,
    CelOptional,
    Duration,
    Timestamp,
    TypeValue,
    UInt,
    cel_compare,
    check_int,
    no_such_overload,
    type_name,
)
from karpy.sandbox.apiserver.schema.gofmt import go_float
from karpy.sandbox.apiserver.schema.regex import RegexError, compile_go_regex

__all__ = ["go_regex", "parse_timestamp", "to_cel_string", "to_double"]

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})\Z"
)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def go_regex(pattern: str) -> re.Pattern[str]:
    try:
        return compile_go_regex(pattern)
    except RegexError as err:
        raise CelEvalError(str(err)) from None


def _conversion_error(value: Any, target: str) -> CelEvalError:
    return CelEvalError(f"type conversion error from '{type_name(value)}' to '{target}'")


def parse_timestamp(text: str) -> Timestamp | None:
    """RFC 3339 as Go's ``time.Parse(time.RFC3339, ...)`` reads it."""
    match = _RFC3339.match(text)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction, zone = match.group(7), match.group(8)
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:
        return None
    if zone not in ("Z", "z"):
        sign = 1 if zone[0] == "+" else -1
        hours, minutes = int(zone[1:3]), int(zone[4:6])
        if hours > 23 or minutes > 59:
            return None
        moment -= sign * timedelta(hours=hours, minutes=minutes)
    nanos = int((fraction[1:] + "000000000")[:9]) if fraction else 0
    stamp = Timestamp.from_datetime(moment)
    return Timestamp(stamp.nanos + nanos)


def _checked_timestamp(nanos: int) -> Timestamp:
    seconds = nanos // NANOS
    if seconds < TIMESTAMP_MIN_SECONDS or seconds > TIMESTAMP_MAX_SECONDS:
        raise CelEvalError("timestamp overflow")
    return Timestamp(nanos)


# --- standard functions -------------------------------------------------------------


def _size(value: Any) -> int:
    if isinstance(value, str | list | dict | bytes):
        return len(value)
    raise no_such_overload("size", value)


def _contains(text: Any, part: Any) -> bool:
    if _is_str(text) and _is_str(part):
        return part in text
    raise no_such_overload("contains", text, part)


def _starts_with(text: Any, part: Any) -> bool:
    if _is_str(text) and _is_str(part):
        return bool(text.startswith(part))
    raise no_such_overload("startsWith", text, part)


def _ends_with(text: Any, part: Any) -> bool:
    if _is_str(text) and _is_str(part):
        return bool(text.endswith(part))
    raise no_such_overload("endsWith", text, part)


def _matches(text: Any, pattern: Any) -> bool:
    if _is_str(text) and _is_str(pattern):
        return go_regex(pattern).search(text) is not None
    raise no_such_overload("matches", text, pattern)


def _to_int(value: Any) -> int:
    if _is_int(value):
        return int(value)
    if isinstance(value, UInt):
        return check_int(value.value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value) or not INT_MIN <= value < 2.0**63:
            raise CelEvalError("integer overflow")
        return math.trunc(value)
    if isinstance(value, str):
        if re.match(r"^[+-]?\d+\Z", value) and INT_MIN <= int(value) <= INT_MAX:
            return int(value)
        raise _conversion_error(value, "int")
    if isinstance(value, Timestamp):
        return value.nanos // NANOS
    if isinstance(value, Duration):
        return value.nanos
    raise _conversion_error(value, "int")


def _to_uint(value: Any) -> UInt:
    if isinstance(value, UInt):
        return value
    if _is_int(value):
        if value < 0:
            raise CelEvalError("unsigned integer overflow")
        return UInt(value)
    if isinstance(value, float):
        if math.isnan(value) or value < 0 or value >= 2.0**64:
            raise CelEvalError("unsigned integer overflow")
        return UInt(math.trunc(value))
    if isinstance(value, str) and re.match(r"^\+?\d+\Z", value) and int(value) <= UINT_MAX:
        return UInt(int(value))
    raise _conversion_error(value, "uint")


def to_double(value: Any) -> float:
    if isinstance(value, float):
        return value
    if _is_int(value):
        return float(value)
    if isinstance(value, UInt):
        return float(value.value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise _conversion_error(value, "double") from None
    raise _conversion_error(value, "double")


def to_cel_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_int(value):
        return str(value)
    if isinstance(value, UInt):
        return str(value.value)
    if isinstance(value, float):
        return go_float(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise CelEvalError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(value, Duration | Timestamp):
        return value.cel_string()
    cel_string = getattr(value, "cel_string", None)
    if cel_string is not None:
        text: str = cel_string()
        return text
    raise _conversion_error(value, "string")


def _to_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise _conversion_error(value, "bytes")


_BOOL_TEXT = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True}
_BOOL_TEXT.update(
    {"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}
)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value in _BOOL_TEXT:
        return _BOOL_TEXT[value]
    raise _conversion_error(value, "bool")


def _to_duration(value: Any) -> Duration:
    if isinstance(value, Duration):
        return value
    if isinstance(value, str):
        try:
            return Duration(parse_duration(value))
        except DurationError:
            raise _conversion_error(value, "google.protobuf.Duration") from None
    raise _conversion_error(value, "google.protobuf.Duration")


def _to_timestamp(value: Any) -> Timestamp:
    if isinstance(value, Timestamp):
        return value
    if isinstance(value, str):
        stamp = parse_timestamp(value)
        if stamp is None:
            raise _conversion_error(value, "google.protobuf.Timestamp")
        return _checked_timestamp(stamp.nanos)
    if _is_int(value):
        return _checked_timestamp(value * NANOS)
    raise _conversion_error(value, "google.protobuf.Timestamp")


def _type_of(value: Any) -> TypeValue:
    return TypeValue(type_name(value))


register(_size, "size(string) -> int", "size(bytes) -> int", "size(list) -> int",
         "size(map) -> int", "string.size() -> int", "bytes.size() -> int",
         "list.size() -> int", "map.size() -> int")  # fmt: skip
register(_contains, "string.contains(string) -> bool")
register(_starts_with, "string.startsWith(string) -> bool")
register(_ends_with, "string.endsWith(string) -> bool")
register(_matches, "string.matches(string) -> bool", "matches(string, string) -> bool")
register(_to_int, "int(any) -> int")
register(_to_uint, "uint(any) -> uint")
register(to_double, "double(any) -> double")
register(to_cel_string, "string(any) -> string")
register(_to_bytes, "bytes(any) -> bytes")
register(_to_bool, "bool(any) -> bool")
register(lambda value: value, "dyn(any) -> dyn")
register(_type_of, "type(any) -> type")
register(_to_duration, "duration(any) -> duration")
register(_to_timestamp, "timestamp(any) -> timestamp")


# --- timestamp and duration accessors ------------------------------------------------


def _zone(name: str) -> Any:
    match = re.match(r"^([+-]?)(\d{1,2}):(\d{2})\Z", name)
    if match:
        sign = -1 if match.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3))))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CelEvalError(f"unknown time zone {name}") from None


def _time_part(name: str, extract: Any, duration_units: int | None = None) -> None:
    def impl(value: Any, *zone: Any) -> int:
        if isinstance(value, Timestamp):
            moment = value.to_datetime(_zone(zone[0]) if zone else UTC)
            result: int = extract(moment, value)
            return result
        if isinstance(value, Duration) and duration_units is not None and not zone:
            return int(value.nanos / duration_units)
        raise no_such_overload(name, value, *zone)

    signatures = [f"timestamp.{name}() -> int", f"timestamp.{name}(string) -> int"]
    if duration_units is not None:
        signatures.append(f"duration.{name}() -> int")
    register(impl, *signatures)


_time_part("getFullYear", lambda m, _: m.year)
_time_part("getMonth", lambda m, _: m.month - 1)
_time_part("getDayOfYear", lambda m, _: m.timetuple().tm_yday - 1)
_time_part("getDate", lambda m, _: m.day)
_time_part("getDayOfMonth", lambda m, _: m.day - 1)
_time_part("getDayOfWeek", lambda m, _: (m.weekday() + 1) % 7)
_time_part("getHours", lambda m, _: m.hour, 3600 * NANOS)
_time_part("getMinutes", lambda m, _: m.minute, 60 * NANOS)
_time_part("getSeconds", lambda m, _: m.second, NANOS)
_time_part("getMilliseconds", lambda m, v: (v.nanos % NANOS) // 1_000_000, 1_000_000)


# --- lists library -----------------------------------------------------------------


def _is_sorted(items: Any) -> bool:
    if not isinstance(items, list):
        raise no_such_overload("isSorted", items)
    return all(cel_compare(a, b) <= 0 for a, b in itertools.pairwise(items))


def _sum(items: Any) -> Any:
    if not isinstance(items, list):
        raise no_such_overload("sum", items)
    if not items:
        return 0
    total = items[0]
    for item in items[1:]:
        if _is_int(total) and _is_int(item):
            total = check_int(total + item)
        elif isinstance(total, float) and isinstance(item, float):
            total = total + item
        elif isinstance(total, UInt) and isinstance(item, UInt):
            if total.value + item.value > UINT_MAX:
                raise CelEvalError("unsigned integer overflow")
            total = UInt(total.value + item.value)
        elif isinstance(total, Duration) and isinstance(item, Duration):
            total = Duration(check_int(total.nanos + item.nanos))
        else:
            raise no_such_overload("sum", total, item)
    return total


def _extreme(name: str, prefer: int) -> Any:
    def impl(items: Any) -> Any:
        if not isinstance(items, list):
            raise no_such_overload(name, items)
        if not items:
            raise CelEvalError(f"{name} called on empty list")
        best = items[0]
        for item in items[1:]:
            if cel_compare(best, item) == prefer:
                best = item
        return best

    return impl


register(_is_sorted, "list.isSorted() -> bool")
register(_sum, "list.sum() -> $elem0")
register(_extreme("min", 1), "list.min() -> $elem0")
register(_extreme("max", -1), "list.max() -> $elem0")


# --- optional values -----------------------------------------------------------------


def _optional_value(value: Any) -> Any:
    if not isinstance(value, CelOptional):
        raise no_such_overload("value", value)
    if not value.present:
        raise CelEvalError("optional.none() dereference")
    return value.value


def _optional_has_value(value: Any) -> bool:
    if not isinstance(value, CelOptional):
        raise no_such_overload("hasValue", value)
    return value.present


def _optional_or_value(value: Any, fallback: Any) -> Any:
    if not isinstance(value, CelOptional):
        raise no_such_overload("orValue", value, fallback)
    return value.value if value.present else fallback


def _optional_or(value: Any, other: Any) -> Any:
    if not (isinstance(value, CelOptional) and isinstance(other, CelOptional)):
        raise no_such_overload("or", value, other)
    return value if value.present else other


def _is_zero(value: Any) -> bool:
    if value is None or value is False:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == 0
    if isinstance(value, str | bytes | list | dict):
        return len(value) == 0
    if isinstance(value, UInt | Duration | Timestamp):
        return (value.value if isinstance(value, UInt) else value.nanos) == 0
    return False


register(lambda value: CelOptional(True, value), "optional::of(any) -> $optional0")
register(lambda: CelOptional(False), "optional::none() -> optional<dyn>")
register(lambda value: CelOptional(not _is_zero(value), value),
         "optional::ofNonZeroValue(any) -> $optional0")  # fmt: skip
register(_optional_value, "optional.value() -> $elem0")
register(_optional_has_value, "optional.hasValue() -> bool")
register(_optional_or_value, "optional.orValue(any) -> $elem0")
register(_optional_or, "optional.or(optional) -> $0")
