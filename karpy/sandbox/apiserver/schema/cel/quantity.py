"""Kubernetes resource quantities for CEL's ``quantity()`` library, exact.

``resource.Quantity`` is an arbitrary-precision decimal; comparisons such as
``quantity('200M').compareTo(quantity('0.2G')) == 0`` must be exact, so values are held
as `fractions.Fraction`. Parsing follows ``resource.ParseQuantity``: a signed decimal
number, then one suffix (binary ``Ki``..``Ei``, decimal ``n``..``E``, or an exponent
``e3``/``E-3``), with its two error messages.
"""

from __future__ import annotations

import re
from fractions import Fraction

import attrs

from karpy.sandbox.apiserver.schema.cel.values import INT_MAX, INT_MIN, CelEvalError

__all__ = ["Quantity", "parse_cel_quantity"]

_SPLIT = r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_SPLIT_RE = re.compile(_SPLIT)
_NUMBER_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)$")
_EXPONENT_RE = re.compile(r"^[eE][-+]?\d+$")
FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT}'"
SUFFIX_WRONG = "unable to parse quantity's suffix"

_SUFFIXES: dict[str, Fraction] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}


@attrs.frozen(slots=True)
class Quantity:
    """A ``kubernetes.Quantity`` CEL value."""

    value: Fraction
    cel_type_name = "kubernetes.Quantity"

    def cel_compare(self, other: Quantity) -> int:
        return (self.value > other.value) - (self.value < other.value)

    def sign(self) -> int:
        return (self.value > 0) - (self.value < 0)

    def as_integer(self) -> int | None:
        if self.value.denominator != 1 or not INT_MIN <= self.value.numerator <= INT_MAX:
            return None
        return self.value.numerator

    def approximate_float(self) -> float:
        try:
            return float(self.value)
        except OverflowError:
            return float("inf") if self.value > 0 else float("-inf")


def parse_cel_quantity(text: str) -> Quantity:
    """``resource.ParseQuantity``; raises `CelEvalError` with its message."""
    if not text:
        raise CelEvalError(FORMAT_WRONG)
    if text == "0":
        return Quantity(Fraction(0))
    match = _SPLIT_RE.match(text)
    if match is None or _NUMBER_RE.match(match.group(1)) is None:
        raise CelEvalError(FORMAT_WRONG)
    number, suffix = match.group(1), match.group(2)
    if suffix in _SUFFIXES:
        multiplier = _SUFFIXES[suffix]
    elif _EXPONENT_RE.match(suffix):
        exponent = int(suffix[1:])
        multiplier = Fraction(10) ** exponent
    else:
        raise CelEvalError(SUFFIX_WRONG)
    return Quantity(Fraction(number) * multiplier)
