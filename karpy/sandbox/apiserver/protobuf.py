"""Just enough of Kubernetes' protobuf encoding to accept what kubectl's typed clients send.

kubectl sends most requests as JSON, but a few commands use client-go's typed clients,
which encode request bodies as protobuf (``application/vnd.kubernetes.protobuf``):
``kubectl create namespace|configmap|secret|deployment|pdb|serviceaccount|token`` and
``kubectl drain`` (its evictions). This module decodes those few kinds into the JSON
objects the rest of the emulator works with. The envelope is the magic ``k8s\\x00`` followed by a
``runtime.Unknown`` message whose ``raw`` field holds the object; field numbers come from
``k8s.io/api``'s ``generated.proto``. Anything else answers 415, as before.

gogo-protobuf writes every non-pointer field, zero or not, where Go's JSON encoder leaves
``omitempty`` fields out: fields marked `OMIT` drop their zero value (``""``, ``0``,
``false``) so the decoded object is what ``kubectl create ... -o json`` would have sent;
pointer fields (``replicas``, ``terminationGracePeriodSeconds``) keep an explicit zero.
Only the fields named here are decoded (for a Deployment: what ``kubectl create
deployment`` sets and the common pod-template fields); others are dropped.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

Schema = dict[int, tuple[str, str, Any]]  # field number -> (json name, kind, sub-schema)

OMIT = "omitempty"  # a scalar's sub-schema: leave its zero value out

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
    1: ("name", "string", OMIT),
    2: ("generateName", "string", OMIT),
    3: ("namespace", "string", OMIT),
    5: ("uid", "string", OMIT),
    6: ("resourceVersion", "string", OMIT),
    7: ("generation", "int", OMIT),
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
_LABEL_SELECTOR: Schema = {
    1: ("matchLabels", "map", "string"),
    2: (
        "matchExpressions",
        "repeated",
        {
            1: ("key", "string", None),
            2: ("operator", "string", None),
            3: ("values", "strings", None),
        },
    ),
}
_CONTAINER: Schema = {
    1: ("name", "string", None),
    2: ("image", "string", OMIT),
    3: ("command", "strings", None),
    4: ("args", "strings", None),
    5: ("workingDir", "string", OMIT),
    6: (
        "ports",
        "repeated",
        {
            1: ("name", "string", OMIT),
            2: ("hostPort", "int", OMIT),
            3: ("containerPort", "int", None),
            4: ("protocol", "string", OMIT),
            5: ("hostIP", "string", OMIT),
        },
    ),
    7: ("env", "repeated", {1: ("name", "string", None), 2: ("value", "string", OMIT)}),
    8: (
        "resources",
        "message",
        {1: ("limits", "map", "quantity"), 2: ("requests", "map", "quantity")},
    ),
    13: ("terminationMessagePath", "string", OMIT),
    14: ("imagePullPolicy", "string", OMIT),
    16: ("stdin", "bool", OMIT),
    17: ("stdinOnce", "bool", OMIT),
    18: ("tty", "bool", OMIT),
    20: ("terminationMessagePolicy", "string", OMIT),
    24: ("restartPolicy", "string", None),
}
_TOLERATION: Schema = {
    1: ("key", "string", OMIT),
    2: ("operator", "string", OMIT),
    3: ("value", "string", OMIT),
    4: ("effect", "string", OMIT),
    5: ("tolerationSeconds", "int", None),
}
_POD_SPEC: Schema = {
    2: ("containers", "repeated", _CONTAINER),
    20: ("initContainers", "repeated", _CONTAINER),
    3: ("restartPolicy", "string", OMIT),
    4: ("terminationGracePeriodSeconds", "int", None),
    5: ("activeDeadlineSeconds", "int", None),
    6: ("dnsPolicy", "string", OMIT),
    7: ("nodeSelector", "map", "string"),
    8: ("serviceAccountName", "string", OMIT),
    10: ("nodeName", "string", OMIT),
    11: ("hostNetwork", "bool", OMIT),
    19: ("schedulerName", "string", OMIT),
    22: ("tolerations", "repeated", _TOLERATION),
    24: ("priorityClassName", "string", OMIT),
    25: ("priority", "int", None),
    29: ("runtimeClassName", "string", None),
}
_DEPLOYMENT_SPEC: Schema = {
    1: ("replicas", "int", None),
    2: ("selector", "message", _LABEL_SELECTOR),
    3: (
        "template",
        "message",
        {1: ("metadata", "message", _META), 2: ("spec", "message", _POD_SPEC)},
    ),
    4: (
        "strategy",
        "message",
        {
            1: ("type", "string", OMIT),
            2: (
                "rollingUpdate",
                "message",
                {1: ("maxUnavailable", "intstr", None), 2: ("maxSurge", "intstr", None)},
            ),
        },
    ),
    5: ("minReadySeconds", "int", OMIT),
    6: ("revisionHistoryLimit", "int", None),
    7: ("paused", "bool", OMIT),
    9: ("progressDeadlineSeconds", "int", None),
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
    ("v1", "ServiceAccount"): {  # kubectl create serviceaccount
        1: ("metadata", "message", _META),
        4: ("automountServiceAccountToken", "bool", None),
    },
    ("authentication.k8s.io/v1", "TokenRequest"): {  # kubectl create token
        1: ("metadata", "message", _META),
        2: (
            "spec",
            "message",
            {1: ("audiences", "strings", None), 4: ("expirationSeconds", "int", None)},
        ),
    },
    ("policy/v1", "Eviction"): {
        1: ("metadata", "message", _META),
        2: ("deleteOptions", "message", _DELETE_OPTIONS),
    },
    ("v1", "DeleteOptions"): _DELETE_OPTIONS,
    ("meta.k8s.io/v1", "DeleteOptions"): _DELETE_OPTIONS,
    ("apps/v1", "Deployment"): {
        1: ("metadata", "message", _META),
        2: ("spec", "message", _DEPLOYMENT_SPEC),
    },
    ("policy/v1", "PodDisruptionBudget"): {
        1: ("metadata", "message", _META),
        2: (
            "spec",
            "message",
            {
                1: ("minAvailable", "intstr", None),
                2: ("selector", "message", _LABEL_SELECTOR),
                3: ("maxUnavailable", "intstr", None),
                4: ("unhealthyPodEvictionPolicy", "string", OMIT),
            },
        ),
    },
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


def _scalar(kind: str, value: int | bytes) -> Any:
    """A scalar field's JSON value, or None when the wire value does not fit the kind."""
    if kind == "string" and isinstance(value, bytes):
        return value.decode()
    if kind == "int" and isinstance(value, int):
        return _signed(value)
    if kind == "bool" and isinstance(value, int):
        return bool(value)
    return None


def _int_or_string(data: bytes) -> int | str:
    """``intstr.IntOrString``: type 0 is an int, 1 a string."""
    fields = dict(_fields(data))
    if fields.get(1, 0) == 1:
        text = fields.get(3, b"")
        return text.decode() if isinstance(text, bytes) else ""
    number = fields.get(2, 0)
    return _signed(number) if isinstance(number, int) else 0


def _map_value(item: bytes, sub: str) -> str:
    if sub == "bytes":
        return base64.b64encode(item).decode()
    if sub == "quantity":  # resource.Quantity: its string form is field 1
        text = dict(_fields(item)).get(1, b"")
        return text.decode() if isinstance(text, bytes) else ""
    return item.decode()


def _decode(data: bytes, schema: Schema) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue
        name, kind, sub = schema[number]
        if kind in ("string", "int", "bool"):
            scalar = _scalar(kind, value)
            if scalar is not None and not (sub == OMIT and not scalar):
                out[name] = scalar
        elif kind == "strings" and isinstance(value, bytes):
            out.setdefault(name, []).append(value.decode())
        elif kind == "message" and isinstance(value, bytes):
            out[name] = _decode(value, sub)
        elif kind == "repeated" and isinstance(value, bytes):
            out.setdefault(name, []).append(_decode(value, sub))
        elif kind == "intstr" and isinstance(value, bytes):
            out[name] = _int_or_string(value)
        elif kind == "time" and isinstance(value, bytes):
            seconds = _decode(value, _TIME).get("seconds", 0)
            if seconds:  # the zero time is what Go's JSON writes as null
                out[name] = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        elif kind == "map" and isinstance(value, bytes):
            entry = dict(_fields(value))
            key = entry.get(1, b"")
            item = entry.get(2, b"")
            assert isinstance(key, bytes) and isinstance(item, bytes)
            out.setdefault(name, {})[key.decode()] = _map_value(item, sub)
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
