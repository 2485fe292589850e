"""Karpenter's duration fields: Go duration text, some of which may also say ``Never``.

NodePools and NodeClaims carry three kinds of duration, each with its own CRD pattern:
``expireAfter`` and ``consolidateAfter`` are "nillable" (``720h``, ``1h30m``, or
``Never``, read as None), ``terminationGracePeriod`` is a plain duration, and a
budget's ``duration`` is limited to hours and minutes. Models keep the parsed value as a
`timedelta` for arithmetic *and* the text as written, so printing an object back
reproduces it exactly and validation can check the text against the CRD pattern (Go's
parser accepts ``1.5h``; the CRD pattern does not).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from karpy.apis.core import InvalidObject
from karpy.apis.fielderrors import FieldError
from karpy.durations import DurationError, format_duration, from_timedelta, parse_duration
from karpy.durations import to_timedelta as _to_timedelta

if TYPE_CHECKING:
    from datetime import timedelta

__all__ = [
    "BUDGET_DURATION_PATTERN",
    "DURATION_PATTERN",
    "NEVER",
    "NILLABLE_DURATION_PATTERN",
    "duration_text",
    "parse_duration_field",
]

NEVER = "Never"
NILLABLE_DURATION_PATTERN = r"^(([0-9]+(s|m|h))+|Never)$"
DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
BUDGET_DURATION_PATTERN = r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$"


def parse_duration_field(
    text: str, path: str, pattern: str, *, nillable: bool = False
) -> timedelta | None:
    """The value of a duration field; None for ``Never`` when the field is nillable.

    Text that no Go parser would read cannot be represented and raises `InvalidObject`
    with the message kube-apiserver gives for the pattern.
    """
    if nillable and text == NEVER:
        return None
    try:
        return _to_timedelta(parse_duration(text))
    except DurationError:
        if re.search(pattern, text):  # fits the pattern, but too long for Go's int64
            detail = f'time: invalid duration "{text}"'
        else:
            detail = f"{path} in body should match '{pattern}'"
        raise InvalidObject([FieldError.invalid(path, text, detail)]) from None


def duration_text(value: timedelta | None, text: str | None) -> str:
    """The text to print for a duration field: as written, else Go's canonical form."""
    if text is not None:
        return text
    if value is None:
        return NEVER
    return format_duration(from_timedelta(value))
