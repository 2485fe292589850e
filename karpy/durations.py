"""Go-syntax durations (``1s``, ``1m30s``, ``500ms``, ``1.5h``) parsed exactly.

Karpenter's settings and API fields use Go's ``time.Duration`` text form, so karpy reads
and prints the same form. Values are held as integer nanoseconds, the unit Go uses, so
parsing is exact and printing reproduces Go's canonical spelling (``1h30m0s``); use
`to_timedelta` where a `datetime.timedelta` is more convenient (it keeps microseconds).
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

__all__ = ["DurationError", "format_duration", "parse_duration", "to_timedelta"]

NANOSECOND = 1
MICROSECOND = 1_000
MILLISECOND = 1_000_000
SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "µs": MICROSECOND,  # U+00B5 micro sign
    "μs": MICROSECOND,  # U+03BC greek mu
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_COMPONENT = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_MAX = 2**63 - 1


class DurationError(ValueError):
    """Text that is not a Go duration."""


def parse_duration(text: str) -> int:
    """Nanoseconds in ``text``; accepts an optional sign, ``0``, and unit sequences.

    >>> parse_duration("1m30s") == 90 * SECOND
    True
    """
    original = text
    sign = 1
    if text[:1] in "+-" and text:
        sign = -1 if text[0] == "-" else 1
        text = text[1:]
    if text == "0":
        return 0
    if not text:
        raise DurationError(f"invalid duration {original!r}")
    total = Decimal(0)
    position = 0
    while position < len(text):
        match = _COMPONENT.match(text, position)
        if match is None:
            raise DurationError(f"invalid duration {original!r}")
        total += Decimal(match[1]) * _UNITS[match[2]]
        position = match.end()
    nanos = int(total)
    if nanos > _MAX:
        raise DurationError(f"invalid duration {original!r}: out of range")
    return sign * nanos


def to_timedelta(nanos: int) -> timedelta:
    return timedelta(microseconds=nanos // MICROSECOND)


def from_timedelta(value: timedelta) -> int:
    return value.days * 24 * HOUR + value.seconds * SECOND + value.microseconds * MICROSECOND


def format_duration(nanos: int) -> str:
    """Go's ``Duration.String()``: ``1h30m0s``, ``2.5s``, ``500ms``, ``0s``."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    nanos = abs(nanos)
    if nanos < SECOND:
        for unit, size in (("ms", MILLISECOND), ("µs", MICROSECOND), ("ns", NANOSECOND)):
            if nanos >= size:
                return sign + _fraction(nanos, size) + unit
    hours, rest = divmod(nanos, HOUR)
    minutes, rest = divmod(rest, MINUTE)
    text = _fraction(rest, SECOND) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _fraction(value: int, unit: int) -> str:
    whole, remainder = divmod(value, unit)
    if not remainder:
        return str(whole)
    digits = len(str(unit)) - 1
    return f"{whole}.{remainder:0{digits}d}".rstrip("0")
