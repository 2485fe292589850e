"""A small type-driven codec between attrs records and their JSON wire form.

EC2NodeClass has some twenty nested structs whose parsing and printing follow one
pattern (read each JSON field into a typed attribute, print it back with ``omitempty``
semantics). Rather than hand-writing twenty ``from_dict``/``to_dict`` pairs, a record
declares its attributes with `wire` (the JSON name) and inherits `Record`; the codec
reads the attribute's annotation (``str | None``, ``tuple[Term, ...]``,
``Mapping[str, str]``, another record, ``datetime``...) and converts accordingly.

The input has already been checked against the schema (types and required fields), so
decoding only converts; it never validates.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Self

import attrs

from karpy.apis.conditions import Condition
from karpy.apis.core import format_time, parse_time

__all__ = ["Record", "wire"]

_WIRE = "karpy.wire"
_ALWAYS = "karpy.wire.always"


def wire(
    name: str, *, default: Any = attrs.NOTHING, factory: Any = None, always: bool = False
) -> Any:
    """An attribute stored under ``name`` on the wire. Empty values (None, "", (), {},
    False) are left out when printing unless ``always`` (Go fields without omitempty)."""
    metadata = {_WIRE: name, _ALWAYS: always}
    if factory is not None:
        return attrs.field(factory=factory, metadata=metadata)
    return attrs.field(default=default, metadata=metadata)


_FIELDS: dict[type, list[tuple[str, str, Any, bool]]] = {}


def wire_fields(cls: type) -> list[tuple[str, str, Any, bool]]:
    """(attribute, JSON name, annotation, always printed) of each attribute of a record
    class; computed once per class (resolving annotations is slow)."""
    fields = _FIELDS.get(cls)
    if fields is None:
        hints = typing.get_type_hints(cls)
        fields = [
            (f.name, f.metadata[_WIRE], hints[f.name], bool(f.metadata[_ALWAYS]))
            for f in attrs.fields(cls)
            if _WIRE in f.metadata
        ]
        _FIELDS[cls] = fields
    return fields


class Record:
    """Mixin giving an attrs class ``from_dict``/``to_dict`` from its `wire` fields."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> Self:
        values = {
            attr: _decode(tp, data[name], f"{path}.{name}")
            for attr, name, tp, _ in wire_fields(cls)
            if data.get(name) is not None
        }
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for attr, name, tp, always in wire_fields(type(self)):
            value = getattr(self, attr)
            if not always and _omitted(tp, value):
                continue
            out[name] = _encode(value)
        return out


def _omitted(tp: Any, value: Any) -> bool:
    """Go's omitempty: a nil pointer (``X | None``) is left out, a zero value otherwise."""
    if value is None:
        return True
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return False
    return not value


def _decode(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = (a for a in args if a is not type(None))
        return _decode(inner, value, path)
    if origin is tuple:
        return tuple(_decode(args[0], item, f"{path}[{i}]") for i, item in enumerate(value))
    if origin in (Mapping, dict):
        return {key: _decode(args[1], item, f"{path}[{key}]") for key, item in value.items()}
    if tp is int:
        return int(value)
    if tp is datetime:
        return parse_time(value)
    if tp is Condition:
        return Condition.from_dict(value)
    if isinstance(tp, type) and attrs.has(tp):
        return tp.from_dict(value, path)  # type: ignore[attr-defined]
    return value


def _encode(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return format_time(value)
    if attrs.has(type(value)):
        return value.to_dict()
    return value
