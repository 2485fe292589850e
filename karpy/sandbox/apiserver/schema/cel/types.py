"""Static CEL types of schema values, and CEL's escaping of property names.

kube-apiserver type-checks every rule against the schema before accepting a CRD
(``model.SchemaDeclType``): an object with ``properties`` is an object type whose fields
are its properties, ``additionalProperties`` makes a ``map(string, V)``, ``items`` a
``list(T)``, ``x-kubernetes-int-or-string`` is ``dyn``, and strings with format
``byte``/``duration``/``date``/``date-time`` are ``bytes``/``duration``/``timestamp``.
The compiler uses these types to reject what the real type checker rejects (unknown
fields, calls on the wrong type) and to resolve escaped property names; where a type is
``dyn`` the check is deferred to run time, as in cel-go.

Property names that are not CEL identifiers are reachable through escapes:
``foo-bar`` is ``foo__dash__bar``, ``a.b`` is ``a__dot__b``, ``x/y`` is ``x__slash__y``,
``__`` is ``__underscores__``, and reserved words such as ``namespace`` become
``__namespace__``.
"""

from __future__ import annotations

import re

import attrs

__all__ = ["CelType", "display", "escape_property"]

_RESERVED = frozenset(
    {
        "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
        "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
        "void", "while",
    }
)  # fmt: skip
_SIMPLE_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EXPAND = re.compile(r"(__|[-./]|[^a-zA-Z0-9-./_])")
_EXPANSIONS = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


def escape_property(name: str) -> str | None:
    """The CEL identifier for property ``name``, or None if it cannot be referenced."""
    if not name or name[0].isdigit():
        return None
    if name in _RESERVED:
        return f"__{name}__"
    if _SIMPLE_IDENT.match(name) and "__" not in name:
        return name
    ok = True

    def expand(match: re.Match[str]) -> str:
        nonlocal ok
        text = match.group(0)
        if text in _EXPANSIONS:
            return _EXPANSIONS[text]
        ok = False
        return ""

    escaped = _EXPAND.sub(expand, name)
    return escaped if ok else None


@attrs.frozen(slots=True, eq=False)
class CelType:
    """A static CEL type: `kind` is ``dyn``, ``int``, ``uint``, ``double``, ``bool``,
    ``string``, ``bytes``, ``null``, ``duration``, ``timestamp``, ``list``, ``map``,
    ``object``, ``optional``, ``type`` or a library type (``quantity``, ``url``, ``ip``,
    ``cidr``). Lists and optionals have `elem`; maps have `key` and `elem`; objects have
    `fields` (escaped name -> (property name, type))."""

    kind: str
    elem: CelType | None = None
    key: CelType | None = None
    fields: dict[str, tuple[str, CelType]] | None = None
    list_type: str | None = None

    def __str__(self) -> str:
        if self.kind == "list":
            return f"list({self.elem})"
        if self.kind == "map":
            return f"map({self.key}, {self.elem})"
        if self.kind == "optional":
            return f"optional_type({self.elem})"
        if self.kind == "duration":
            return "google.protobuf.Duration"
        if self.kind == "timestamp":
            return "google.protobuf.Timestamp"
        return self.kind

    @property
    def is_dyn(self) -> bool:
        return self.kind == "dyn"


def display(kind: CelType) -> str:
    """How cel-go's checker names a type in its messages."""
    return "object" if kind.kind == "object" else str(kind)


DYN = CelType("dyn")
INT = CelType("int")
UINT = CelType("uint")
DOUBLE = CelType("double")
BOOL = CelType("bool")
STRING = CelType("string")
BYTES = CelType("bytes")
NULL = CelType("null")
DURATION = CelType("duration")
TIMESTAMP = CelType("timestamp")
TYPE = CelType("type")
QUANTITY = CelType("quantity")
URL = CelType("url")
IP = CelType("ip")
CIDR = CelType("cidr")


def list_of(elem: CelType) -> CelType:
    return CelType("list", elem=elem)


def map_of(key: CelType, value: CelType) -> CelType:
    return CelType("map", key=key, elem=value)


def optional_of(inner: CelType) -> CelType:
    return CelType("optional", elem=inner)
