"""Go's ``hashstructure`` (v2, FormatV2) over explicit descriptions of Go values.

Karpenter detects drift by stamping a hash of a NodePool's template (and of an
EC2NodeClass's spec) on each NodeClaim and comparing it later. The hash is
``mitchellh/hashstructure`` run over Go structs with ``SlicesAsSets``,
``IgnoreZeroValue`` and ``ZeroNil``, so it depends on Go details Python objects do not
have: struct type names, field names and order, integer widths, pointers versus values.
Callers therefore describe the Go value explicitly (`GoStruct`, `Ptr`, `Int`, ...) and
this module reproduces the walk: FNV-1 (64-bit) of little-endian integers and raw
strings, structs as the XOR of (field name, value) pairs re-hashed after every field,
maps as an order-free XOR, slices as an order-free XOR when hashed as sets.

``tests/apis/test_gohash.py`` checks the result against the static hashes in the AWS
provider's own tests.
"""

from __future__ import annotations

import struct
from typing import Any

import attrs

__all__ = ["Bool", "GoStruct", "Int", "Map", "Ptr", "Slice", "go_hash"]

_FNV_OFFSET = 14695981039346656037
_FNV_PRIME = 1099511628211
_MASK = 2**64 - 1


def _fnv1(data: bytes) -> int:
    h = _FNV_OFFSET
    for byte in data:
        h = (h * _FNV_PRIME) & _MASK
        h ^= byte
    return h


def _ordered(a: int, b: int) -> int:
    return _fnv1(struct.pack("<QQ", a, b))


def _finish(a: int) -> int:
    return _fnv1(struct.pack("<Q", a))


@attrs.frozen(slots=True)
class Int:
    """A Go integer of ``bits`` width (time.Duration is a 64-bit integer)."""

    value: int
    bits: int = 64


@attrs.frozen(slots=True)
class Bool:
    value: bool


@attrs.frozen(slots=True)
class Ptr:
    """A non-nil pointer: never a zero value, even when it points at one. A nil pointer
    is None."""

    target: Any


@attrs.frozen(slots=True)
class Map:
    items: tuple[tuple[Any, Any], ...]


@attrs.frozen(slots=True)
class Slice:
    items: tuple[Any, ...]
    as_set: bool = False  # hashStructure's `set` tag (not SlicesAsSets)


@attrs.frozen(slots=True)
class GoStruct:
    """A struct value: its type name and its exported, not ignored fields, in
    declaration order. A field's value is None when it is nil or zero."""

    type_name: str
    fields: tuple[tuple[str, Any], ...]
    # Go also looks at unexported fields when deciding whether a struct is zero
    # (time.Time has only those); mark such structs explicitly.
    nonzero: bool = False


def _is_zero(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, Ptr):
        return False
    if isinstance(value, GoStruct):
        return not value.nonzero and all(_is_zero(v) for _, v in value.fields)
    if isinstance(value, Int | Bool):
        return not value.value
    if isinstance(value, Map | Slice):
        return False  # only nil maps and slices (None) are zero
    return not value  # strings


def go_hash(value: Any) -> int:
    """hashstructure.Hash(value, FormatV2, {SlicesAsSets, IgnoreZeroValue, ZeroNil})."""
    while isinstance(value, Ptr):
        value = value.target
    if value is None:
        # ZeroNil: a nil reaching here hashes as the zero of its type; callers pass the
        # zero explicitly where the type matters.
        raise ValueError("nil values must be given as the zero of their type")
    if isinstance(value, bool):
        value = Bool(value)
    if isinstance(value, Bool):
        return _fnv1(struct.pack("<b", 1 if value.value else 0))
    if isinstance(value, Int):
        fmt = {8: "<b", 16: "<h", 32: "<i", 64: "<q"}[value.bits]
        return _fnv1(struct.pack(fmt, value.value))
    if isinstance(value, str):
        return _fnv1(value.encode())
    if isinstance(value, Map):
        h = 0
        for key, item in value.items:
            h ^= _ordered(go_hash(key), go_hash(item))
        return _finish(h)
    if isinstance(value, Slice):
        h = 0
        for item in value.items:
            h ^= go_hash(item)  # SlicesAsSets: order-free
        return _finish(h) if value.as_set else h
    if isinstance(value, GoStruct):
        h = go_hash(value.type_name)
        for name, field in value.fields:
            if _is_zero(field):
                continue
            h ^= _ordered(go_hash(name), go_hash(field))
            h = _finish(h)
        return h
    raise TypeError(f"cannot hash {type(value).__name__} as a Go value")
