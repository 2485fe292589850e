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

import math
import re
from datetime import datetime, timedelta, timezone
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
    cel_equal,
    check_int,
    no_such_overload,
    type_name,
)
from karpy.sandbox.apiserver.schema.gofmt import go_float, go_quote
from karpy.sandbox.apiserver.schema.regex import RegexError, compile_go_regex

__all__ = ["go_regex", "parse_timestamp"]

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
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone.utc)
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


def _to_double(value: Any) -> float:
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
_BOOL_TEXT.update({"0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False})


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
register(_to_double, "double(any) -> double")
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
            moment = value.to_datetime(_zone(zone[0]) if zone else timezone.utc)
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


# --- strings extension ----------------------------------------------------------------


def _str_args(name: str, *values: Any) -> None:
    if not all(isinstance(v, str) for v in values):
        raise no_such_overload(name, *values)


def _char_at(text: Any, index: Any) -> str:
    if not (_is_str(text) and _is_int(index)):
        raise no_such_overload("charAt", text, index)
    if index < 0 or index > len(text):
        raise CelEvalError(f"index out of range: {index}")
    return "" if index == len(text) else str(text[index])


def _index_of(value: Any, part: Any, *offset: Any) -> int:
    if isinstance(value, list) and not offset:
        for index, item in enumerate(value):
            if cel_equal(item, part):
                return index
        return -1
    if not (_is_str(value) and _is_str(part) and all(_is_int(o) for o in offset)):
        raise no_such_overload("indexOf", value, part, *offset)
    start = offset[0] if offset else 0
    if start < 0:
        raise CelEvalError(f"index out of range: {start}")
    if part == "":
        return min(start, len(value))
    if start >= len(value):
        return -1
    return int(value.find(part, start))


def _last_index_of(value: Any, part: Any, *offset: Any) -> int:
    if isinstance(value, list) and not offset:
        for index in range(len(value) - 1, -1, -1):
            if cel_equal(value[index], part):
                return index
        return -1
    if not (_is_str(value) and _is_str(part) and all(_is_int(o) for o in offset)):
        raise no_such_overload("lastIndexOf", value, part, *offset)
    if not offset:
        return len(value) if part == "" else int(value.rfind(part))
    start = offset[0]
    if start < 0:
        raise CelEvalError(f"index out of range: {start}")
    if part == "":
        return min(start, len(value))
    if start >= len(value):
        return -1
    return int(value.rfind(part, 0, min(start, len(value) - len(part)) + len(part)))


def _lower_ascii(text: Any) -> str:
    _str_args("lowerAscii", text)
    return "".join(c.lower() if "A" <= c <= "Z" else c for c in text)


def _upper_ascii(text: Any) -> str:
    _str_args("upperAscii", text)
    return "".join(c.upper() if "a" <= c <= "z" else c for c in text)


def _replace(text: Any, old: Any, new: Any, *count: Any) -> str:
    _str_args("replace", text, old, new)
    limit = count[0] if count else -1
    if not _is_int(limit):
        raise no_such_overload("replace", text, old, new, *count)
    if limit == 0:
        return str(text)
    if old == "":
        pieces = list(text)
        limit = len(pieces) + 1 if limit < 0 else limit
        out = [new] if limit > 0 else []
        for i, piece in enumerate(pieces):
            out.append(piece)
            if i + 1 < limit:
                out.append(new)
        return "".join(out)
    return str(text.replace(old, new, limit if limit > 0 else -1))


def _split(text: Any, separator: Any, *count: Any) -> list[str]:
    _str_args("split", text, separator)
    limit = count[0] if count else -1
    if not _is_int(limit):
        raise no_such_overload("split", text, separator, *count)
    if limit == 0:
        return []
    if separator == "":
        chars = list(text)
        if 0 < limit < len(chars):
            return [*chars[: limit - 1], "".join(chars[limit - 1 :])]
        return chars
    return list(text.split(separator, limit - 1 if limit > 0 else -1))


def _substring(text: Any, start: Any, *end: Any) -> str:
    if not (_is_str(text) and _is_int(start) and all(_is_int(e) for e in end)):
        raise no_such_overload("substring", text, start, *end)
    stop = end[0] if end else len(text)
    if end and start > stop:
        raise CelEvalError(f"invalid substring range. start: {start}, end: {stop}")
    if start < 0 or start > len(text):
        raise CelEvalError(f"index out of range: {start}")
    if stop < 0 or stop > len(text):
        raise CelEvalError(f"index out of range: {stop}")
    return str(text[start:stop])


_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007"
_GO_SPACE += "\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _trim(text: Any) -> str:
    _str_args("trim", text)
    return str(text.strip(_GO_SPACE))


def _join(items: Any, *separator: Any) -> str:
    if not isinstance(items, list) or not all(isinstance(s, str) for s in separator):
        raise no_such_overload("join", items, *separator)
    if not all(isinstance(i, str) for i in items):
        raise CelEvalError("join: list contains non-string elements")
    return (separator[0] if separator else "").join(items)


def _reverse(text: Any) -> str:
    _str_args("reverse", text)
    return str(text[::-1])


def _quote(text: Any) -> str:
    _str_args("strings.quote", text)
    return go_quote(text)


_FORMAT_VERB = re.compile(r"%(\.\d+)?([a-zA-Z%])")


def _format(template: Any, args: Any) -> str:
    if not (_is_str(template) and isinstance(args, list)):
        raise no_such_overload("format", template, args)
    remaining = iter(args)

    def verb(match: re.Match[str]) -> str:
        precision, kind = match.group(1), match.group(2)
        if kind == "%":
            return "%"
        try:
            value = next(remaining)
        except StopIteration:
            raise CelEvalError("index out of range: not enough arguments for format") from None
        if kind == "s":
            return _format_s(value)
        if kind == "d":
            if not (_is_int(value) or isinstance(value, UInt)):
                raise CelEvalError(f"error during formatting: decimal clause can only be used on integers, was given {type_name(value)}")
            return str(value.value if isinstance(value, UInt) else value)
        if kind in "fe":
            digits = int(precision[1:]) if precision else 6
            number = _to_double(value)
            return f"{number:.{digits}{kind}}"
        if kind in "boxX":
            number = value.value if isinstance(value, UInt) else value
            if not _is_int(number):
                raise CelEvalError(f"error during formatting: only integers can be formatted with %{kind}")
            return format(number, kind)
        raise CelEvalError(f'could not parse formatting clause: unrecognized formatting clause "{kind}"')

    return _FORMAT_VERB.sub(verb, template)


def _format_s(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_format_s(v) for v in value) + "]"
    if isinstance(value, dict):
        entries = sorted((_format_s(k), _format_s(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in entries) + "}"
    if value is None:
        return "null"
    if isinstance(value, TypeValue):
        return value.name
    return to_cel_string(value)


register(_char_at, "string.charAt(int) -> string")
register(_index_of, "string.indexOf(string) -> int", "string.indexOf(string, int) -> int",
         "list.indexOf(any) -> int")  # fmt: skip
register(_last_index_of, "string.lastIndexOf(string) -> int",
         "string.lastIndexOf(string, int) -> int", "list.lastIndexOf(any) -> int")  # fmt: skip
register(_lower_ascii, "string.lowerAscii() -> string")
register(_upper_ascii, "string.upperAscii() -> string")
register(_replace, "string.replace(string, string) -> string",
         "string.replace(string, string, int) -> string")  # fmt: skip
register(_split, "string.split(string) -> list<string>", "string.split(string, int) -> list<string>")
register(_substring, "string.substring(int) -> string", "string.substring(int, int) -> string")
register(_trim, "string.trim() -> string")
register(_join, "list<string>.join() -> string", "list<string>.join(string) -> string")
register(_reverse, "string.reverse() -> string")
register(_quote, "strings::quote(string) -> string")
register(_format, "string.format(list) -> string")


# --- lists library -----------------------------------------------------------------


def _is_sorted(items: Any) -> bool:
    if not isinstance(items, list):
        raise no_such_overload("isSorted", items)
    return all(cel_compare(a, b) <= 0 for a, b in zip(items, items[1:], strict=False))


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


# --- regex library -----------------------------------------------------------------


def _find(text: Any, pattern: Any) -> str:
    _str_args("find", text, pattern)
    match = go_regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: Any, pattern: Any, *limit: Any) -> list[str]:
    _str_args("findAll", text, pattern)
    count = limit[0] if limit else -1
    if not _is_int(count):
        raise no_such_overload("findAll", text, pattern, *limit)
    if count == 0:
        return []
    found = [m.group(0) for m in go_regex(pattern).finditer(text)]
    return found if count < 0 else found[:count]


register(_find, "string.find(string) -> string")
register(_find_all, "string.findAll(string) -> list<string>",
         "string.findAll(string, int) -> list<string>")  # fmt: skip


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
