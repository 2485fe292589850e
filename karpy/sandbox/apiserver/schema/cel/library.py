"""How CEL functions are declared: overload signatures for the checker, one Python
implementation for the evaluator.

Each function has a name, an implementation taking the call's values (the receiver
first for a member call: ``'a'.startsWith('b')`` and ``startsWith('a', 'b')`` both reach
``impl('a', 'b')``), and overload signatures written the way CEL documents them::

    string.startsWith(string) -> bool
    size(list) -> int
    list.sum() -> $elem0
    sets::contains(list, list) -> bool

``receiver.name`` declares a member overload; ``namespace::name`` a global function
whose name contains a dot (``sets.contains``). The compiler checks a call against the
signatures whenever the argument types are known statically (``dyn`` matches
anything), and reports cel-go's "found no matching overload" otherwise; the
implementation dispatches on the run-time values and raises ``no such overload`` for a
combination it does not support.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import attrs

from karpy.sandbox.apiserver.schema.cel import types as t

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.sandbox.apiserver.schema.cel.types import CelType

__all__ = ["FUNCTIONS", "Function", "Overload", "register"]

_SIGNATURE = re.compile(r"^(?P<head>[\w<>.:]+)\((?P<params>[^)]*)\)\s*->\s*(?P<result>\S+)$")
_NAMED_TYPES: dict[str, CelType] = {
    "int": t.INT,
    "uint": t.UINT,
    "double": t.DOUBLE,
    "bool": t.BOOL,
    "string": t.STRING,
    "bytes": t.BYTES,
    "null": t.NULL,
    "duration": t.DURATION,
    "timestamp": t.TIMESTAMP,
    "type": t.TYPE,
    "dyn": t.DYN,
    "quantity": t.QUANTITY,
    "url": t.URL,
    "ip": t.IP,
    "cidr": t.CIDR,
    "list<string>": t.list_of(t.STRING),
    "list<dyn>": t.list_of(t.DYN),
    "optional<dyn>": t.optional_of(t.DYN),
}


@attrs.frozen(slots=True)
class Overload:
    """One signature: `member` overloads are called as ``receiver.name(args)``."""

    member: bool
    params: tuple[str, ...]
    result: str

    def accepts(self, arg_types: list[CelType]) -> bool:
        if len(arg_types) != len(self.params):
            return False
        return all(_matches(p, a) for p, a in zip(self.params, arg_types, strict=True))

    def result_type(self, arg_types: list[CelType]) -> CelType:
        result = self.result
        if result.startswith("$elem"):
            source = arg_types[int(result[5:])]
            return source.elem if source.elem is not None else t.DYN
        if result.startswith("$optional"):
            source = arg_types[int(result[9:])]
            return t.optional_of(source)
        if result.startswith("$"):
            return arg_types[int(result[1:])]
        return _NAMED_TYPES.get(result, t.DYN)


def _matches(param: str, actual: CelType) -> bool:
    if actual.kind == "dyn" or param in ("any", "dyn"):
        return True
    if param == "list<string>":
        return actual.kind == "list" and (
            actual.elem is None or actual.elem.kind in ("string", "dyn")
        )
    if param.startswith("optional"):
        return actual.kind == "optional"
    return actual.kind == param


@attrs.frozen(slots=True)
class Function:
    """A CEL function: its overloads and its implementation."""

    name: str
    overloads: tuple[Overload, ...]
    impl: Callable[..., Any]

    def check(self, member: bool, arg_types: list[CelType]) -> CelType | None:
        """The result type of a call, or None when no overload accepts it."""
        for overload in self.overloads:
            if overload.member == member and overload.accepts(arg_types):
                return overload.result_type(arg_types)
        return None

    def has_style(self, member: bool) -> bool:
        return any(o.member == member for o in self.overloads)


FUNCTIONS: dict[str, Function] = {}


def register(impl: Callable[..., Any], *signatures: str) -> None:
    """Declare ``impl`` under the signatures (all for one function name)."""
    overloads = []
    name = ""
    for signature in signatures:
        match = _SIGNATURE.match(signature)
        if match is None:
            raise ValueError(f"bad CEL signature {signature!r}")
        head = match.group("head")
        receiver: str | None = None
        if "::" in head:
            name = head.replace("::", ".")
        elif "." in head:
            receiver, name = head.split(".", 1)
        else:
            name = head
        params = tuple(p.strip() for p in match.group("params").split(",") if p.strip())
        if receiver is not None:
            params = (receiver, *params)
        overloads.append(Overload(receiver is not None, params, match.group("result")))
    existing = FUNCTIONS.get(name)
    if existing is not None:
        raise ValueError(f"CEL function {name} declared twice")
    FUNCTIONS[name] = Function(name, tuple(overloads), impl)
