"""Just enough of Kubernetes' protobuf encoding to accept what kubectl's typed clients send.

kubectl sends most requests as JSON, but a few commands use client-go's typed clients,
which encode request bodies as protobuf (``application/vnd.kubernetes.protobuf``):
``kubectl create namespace|configmap|secret`` and ``kubectl drain`` (its evictions).
This module decodes those few kinds into the JSON objects the rest of the emulator works
with. The envelope is the magic ``k8s\\x00`` followed by a ``runtime.Unknown`` message
whose ``raw`` field holds the object; field numbers come from ``k8s.io/api``'s
``generated.proto``. Anything else answers 415, as before.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

Schema = dict[int, tuple[str, str, Any]]  # field number -> (json name, kind, sub-schema)

_TIME: Schema = {1: ("seconds", "int", None), 2: ("nanos", "int", None)}
_OWNER: Schema = {
    1: ("kind", "string", None),
    3: ("name", "string", None),
    4: ("uid", "string", None),
    5: ("apiVersion", "string", None),
    6: ("controller", "bool", None),
    7: ("blockOwnerDeletion", "bool", None),
}
_META: Schema = {
    1: ("name", "string", None),
    2: ("generateName", "string", None),
    3: ("namespace", "string", None),
    5: ("uid", "string", None),
    6: ("resourceVersion", "string", None),
    7: ("generation", "int", None),
    8: ("creationTimestamp", "time", None),
    9: ("deletionTimestamp", "time", None),
    10: ("deletionGracePeriodSeconds", "int", None),
    11: ("labels", "map", "string"),
    12: ("annotations", "map", "string"),
    13: ("ownerReferences", "repeated", _OWNER),
    14: ("finalizers", "strings", None),
}
_PRECONDITIONS: Schema = {1: ("uid", "string", None), 2: ("resourceVersion", "string", None)}
_DELETE_OPTIONS: Schema = {
    1: ("gracePeriodSeconds", "int", None),
    2: ("preconditions", "message", _PRECONDITIONS),
    3: ("orphanDependents", "bool", None),
    4: ("propagationPolicy", "string", None),
    5: ("dryRun", "strings", None),
}
_KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: ("metadata", "message", _META),
        2: ("spec", "message", {1: ("finalizers", "strings", None)}),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", "message", _META),
        2: ("data", "map", "string"),
        3: ("binaryData", "map", "bytes"),
        4: ("immutable", "bool", None),
    },
    ("v1", "Secret"): {
        1: ("metadata", "message", _META),
        2: ("data", "map", "bytes"),
        3: ("type", "string", None),
        4: ("stringData", "map", "string"),
        5: ("immutable", "bool", None),
    },
    ("policy/v1", "Eviction"): {
        1: ("metadata", "message", _META),
        2: ("deleteOptions", "message", _DELETE_OPTIONS),
    },
    ("v1", "DeleteOptions"): _DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): _DELETE_OPTIONS,
}


class ProtobufError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    fields: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            fields.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            fields.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
    return fields


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _decode(data: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind, sub = schema[number]
        if kind == "string" and isinstance(value, bytes):
            out[name] = value.decode()
        elif kind == "int" and isinstance(value, int):
            out[name] = _signed(value)
        elif kind == "bool" and isinstance(value, int):
            out[name] = bool(value)
        elif kind == "strings" and isinstance(value, bytes):
            out.setdefault(name, []).append(value.decode())
        elif kind == "message" and isinstance(value, bytes):
            out[name] = _decode(value, sub)
        elif kind == "repeated" and isinstance(value, bytes):
            out.setdefault(name, []).append(_decode(value, sub))
        elif kind == "time" and isinstance(value, bytes):
            seconds = _decode(value, _TIME).get("seconds", 0)
            out[name] = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        elif kind == "map" and isinstance(value, bytes):
            entry = dict(_fields(value))
            key = entry.get(1, b"")
            item = entry.get(2, b"")
            assert isinstance(key, bytes) and isinstance(item, bytes)
            text = base64.b64encode(item).decode() if sub == "bytes" else item.decode()
            out.setdefault(name, {})[key.decode()] = text
    return out


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the JSON object it stands for; `ProtobufError` when it
    is not one of the kinds this module knows."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf envelope")
    envelope = dict(_fields(body[len(MAGIC) :]))
    type_meta = envelope.get(1, b"")
    raw = envelope.get(2, b"")
    if not isinstance(type_meta, bytes) or not isinstance(raw, bytes):
        raise ProtobufError("malformed runtime.Unknown")
    meta = {n: v.decode() for n, v in _fields(type_meta) if isinstance(v, bytes)}
    api_version, kind = meta.get(1, ""), meta.get(2, "")
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        raise ProtobufError(f"{api_version} {kind} is not decodable from protobuf here")
    obj = _decode(raw, schema)
    return {"apiVersion": api_version, "kind": kind, **obj}
