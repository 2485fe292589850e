"""Kubernetes resource quantities as exact integers.

Every quantity karpy handles is held as an ``int`` count of *milli-units*: ``"1"`` cpu
is 1000, ``"250m"`` is 250, ``"1Ki"`` of memory is 1,024,000. One unit for every
resource keeps the arithmetic in the scheduler's hot path to plain integer addition and
comparison, with no per-resource scaling and no floating point. Python integers are
exact at any size, so a 24 TiB machine is no special case.

Parsing follows the grammar of ``k8s.io/apimachinery/pkg/api/resource``::

    quantity        ::= signedNumber suffix
    suffix          ::= binarySI | decimalExponent | decimalSI
    binarySI        ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimalSI       ::= m | "" | k | M | G | T | P | E
    decimalExponent ::= ("e" | "E") signedNumber

and, like Kubernetes, rounds a value finer than a milli-unit *up* (``"0.1m"`` → 1).

Every quantity the CRDs' pattern admits and Kubernetes parses is read, however odd: the
``n`` and ``u`` suffixes, exponents of any size (``"1e400"``, ``"5e-400"``), hundreds of
digits. A value beyond Kubernetes' largest integer quantity, 2^63 - 1 units, is held as
that (`MAX_MILLI`): no cluster can use that much of anything, so a NodePool limit of
``"1e400"`` means what its author meant, no limit, rather than an error that would leave
the NodePool unread. Nothing huge is ever computed: the order of magnitude is looked at
before the value.

This module is a leaf: it imports nothing from karpy, so the API models, the state
store and the scheduler can all share it.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from typing import Final

__all__ = [
    "BINARY_RESOURCES",
    "MAX_MILLI",
    "QuantityError",
    "format_quantity",
    "format_resource",
    "is_binary_resource",
    "parse_quantity",
]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("0.001"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|[eE](?P<exponent>[+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)
_MILLI = Decimal(1000)
MAX_MILLI: Final = (2**63 - 1) * 1000  # Kubernetes' largest integer quantity, in milli-units
_HUGE: Final = 19  # a value of 10**19 units or more is beyond MAX_MILLI
_TINY: Final = -4  # a value below 10**-3 units is below one milli-unit

# Resources whose natural unit is bytes: printed with binary suffixes.
BINARY_RESOURCES = frozenset({"memory", "ephemeral-storage", "storage"})


def parse_quantity(value: str | int | float) -> int:
    """Return ``value`` in milli-units, rounding any finer remainder up.

    >>> parse_quantity("1500m"), parse_quantity("2"), parse_quantity("1Ki")
    (1500, 2000, 1024000)
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return _bounded(value * 1000)
    if isinstance(value, float):
        value = repr(value)
    text = value.strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity")
    try:
        number = Decimal(match["number"])
        if not number:
            return 0
        exponent = _exponent(match["exponent"])
        factor = Decimal(_BINARY[match["binary"]]) if match["binary"] else (
            _DECIMAL[match["decimal"] or ""])  # fmt: skip
        magnitude = number.adjusted() + exponent + factor.adjusted()  # of the value, in units
        if magnitude >= _HUGE:
            return MAX_MILLI if number > 0 else -MAX_MILLI
        if magnitude <= _TINY:
            return 1 if number > 0 else 0  # rounded up, as Kubernetes rounds
        scaled = number.scaleb(exponent) * factor
        return _bounded(int((scaled * _MILLI).to_integral_value(rounding=ROUND_CEILING)))
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only numbers
        raise QuantityError(f"{value!r} is not a quantity") from exc


def _exponent(text: str | None) -> int:
    """A decimal exponent's value, bounded well past where any quantity saturates (so a
    thousand-digit exponent is never turned into an int)."""
    if text is None:
        return 0
    digits = text.lstrip("+-").lstrip("0")
    value = int(digits) if digits and len(digits) <= 6 else 10**6 if digits else 0
    return -value if text.startswith("-") else value


def _bounded(milli: int) -> int:
    return max(-MAX_MILLI, min(MAX_MILLI, milli))


def is_binary_resource(resource: str) -> bool:
    """True for resources measured in bytes (memory, storage, hugepages)."""
    return resource in BINARY_RESOURCES or resource.startswith("hugepages-")


def format_quantity(milli: int, *, binary: bool = False) -> str:
    """Render milli-units as the shortest exact Kubernetes quantity string.

    Binary rendering uses the largest power-of-two suffix that divides the value
    exactly (``"3Gi"``, ``"239554Mi"``); decimal rendering prints whole units when it
    can and milli-units otherwise (``"2"``, ``"1500m"``).
    """
    if milli % 1000:
        return f"{milli}m"
    units = milli // 1000
    if units == 0:
        return "0"
    if binary:
        for suffix, size in reversed(_BINARY.items()):
            if units % size == 0:
                return f"{units // size}{suffix}"
        return str(units)
    for suffix in ("E", "P", "T", "G", "M", "k"):
        size = int(_DECIMAL[suffix])
        if units % size == 0:
            return f"{units // size}{suffix}"
    return str(units)


def format_resource(resource: str, milli: int) -> str:
    """Render a quantity of ``resource`` the way users write it: memory and storage with
    the largest exact binary suffix (``"3Gi"``), counts and CPUs as plain numbers
    (``"10000"``, ``"1500m"``; never ``"10k"``, which is exact but reads as a typo)."""
    if is_binary_resource(resource):
        return format_quantity(milli, binary=True)
    return f"{milli}m" if milli % 1000 else str(milli // 1000)
