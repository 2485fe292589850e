"""Static typing of CEL's operators: which operand types each accepts and what it yields.

cel-go declares ``_==_`` as ``(A, A) -> bool``, so comparing two known primitive types
that differ (``int == string``) does not compile, while anything ``dyn`` is checked at
run time; ordering operators accept equal orderable types and, as Kubernetes enables
cross-type numeric comparisons, any two numbers; arithmetic follows CEL's overloads
(``timestamp - timestamp`` is a ``duration``, ``%`` has no ``double`` overload).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.sandbox.apiserver.schema.cel import types as t

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.cel.types import CelType

__all__ = ["arithmetic_result", "relation_accepts"]

_ORDERED = frozenset({"int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp"})
_NUMERIC = frozenset({"int", "uint", "double"})


def relation_accepts(symbol: str, left: CelType, right: CelType) -> bool:
    """Whether ``left <symbol> right`` type-checks (``in``, ``==``, ``<``...)."""
    if left.is_dyn or right.is_dyn:
        return True
    if symbol == "in":
        return right.kind in ("list", "map")
    if symbol in ("==", "!="):
        return not (left.kind in _ORDERED and right.kind in _ORDERED and left.kind != right.kind)
    if left.kind in _NUMERIC and right.kind in _NUMERIC:
        return True
    return left.kind in _ORDERED and left.kind == right.kind


def arithmetic_result(symbol: str, left: CelType, right: CelType) -> CelType | None:
    """The type of ``left <symbol> right`` for ``+ - * / %``, or None if no overload."""
    if left.is_dyn or right.is_dyn:
        return t.DYN
    allowed: dict[tuple[str, str], CelType] = {
        (numeric, numeric): left for numeric in ("int", "uint", "double")
    }
    if symbol == "%":
        del allowed[("double", "double")]
    if symbol == "+":
        allowed.update({
            ("string", "string"): t.STRING, ("bytes", "bytes"): t.BYTES,
            ("list", "list"): left, ("duration", "duration"): t.DURATION,
            ("timestamp", "duration"): t.TIMESTAMP, ("duration", "timestamp"): t.TIMESTAMP,
        })  # fmt: skip
    if symbol == "-":
        allowed.update({
            ("duration", "duration"): t.DURATION, ("timestamp", "timestamp"): t.DURATION,
            ("timestamp", "duration"): t.TIMESTAMP,
        })  # fmt: skip
    return allowed.get((left.kind, right.kind))
