"""Small value types shared by every karpy API kind: object metadata, node selector
requirements, taints and node class references (status conditions are in `conditions`).

Each type parses from the plain dict Kubernetes sends (`from_dict`) and prints back to
one (`to_dict`), using the JSON field names on the wire and snake_case in Python.
Parsing here is lenient about absent optional fields and strict about types: a value of
the wrong type raises `InvalidObject` carrying field-path errors, so a caller always
learns *where* an object is wrong.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.fielderrors import FieldError

if TYPE_CHECKING:
    from collections.abc import Mapping


class InvalidObject(ValueError):
    """An object that cannot be parsed into its model; `errors` says where and why."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(e.render() for e in errors))


def parse_time(value: str | None) -> datetime | None:
    """An RFC 3339 timestamp as Kubernetes writes it (``2024-05-01T10:00:00Z``)."""
    if value is None:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with second precision and a ``Z``, as metav1.Time marshals."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _expect(value: Any, kind: type | tuple[type, ...], path: str) -> Any:
    if not isinstance(value, kind):
        names = kind if isinstance(kind, tuple) else (kind,)
        expected = " or ".join(_JSON_TYPE_NAMES.get(k, k.__name__) for k in names)
        raise InvalidObject([FieldError.invalid(path, value, f"must be of type {expected}")])
    return value


_JSON_TYPE_NAMES = {str: "string", int: "integer", dict: "object", list: "array", bool: "boolean"}


def _str_map(value: Any, path: str) -> dict[str, str]:
    if value is None:
        return {}
    _expect(value, dict, path)
    for key, item in value.items():
        _expect(item, str, f"{path}[{key}]")
    return dict(value)


def _str_list(value: Any, path: str) -> tuple[str, ...]:
    if value is None:
        return ()
    _expect(value, list, path)
    return tuple(_expect(item, str, f"{path}[{i}]") for i, item in enumerate(value))


@attrs.frozen(slots=True)
class OwnerReference:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool = False
    block_owner_deletion: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OwnerReference:
        return cls(
            api_version=data.get("apiVersion", ""),
            kind=data.get("kind", ""),
            name=data.get("name", ""),
            uid=data.get("uid", ""),
            controller=bool(data.get("controller", False)),
            block_owner_deletion=bool(data.get("blockOwnerDeletion", False)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "uid": self.uid,
        }
        if self.controller:
            out["controller"] = True
        if self.block_owner_deletion:
            out["blockOwnerDeletion"] = True
        return out


@attrs.frozen(slots=True)
class ObjectMeta:
    """The parts of ``metadata`` karpy reads or writes."""

    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    finalizers: tuple[str, ...] = ()
    owner_references: tuple[OwnerReference, ...] = ()
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, path: str = "metadata") -> ObjectMeta:
        if data is None:
            return cls()
        _expect(data, dict, path)
        owners = data.get("ownerReferences") or []
        return cls(
            name=data.get("name", ""),
            namespace=data.get("namespace", ""),
            uid=data.get("uid", ""),
            resource_version=data.get("resourceVersion", ""),
            generation=int(data.get("generation", 0)),
            labels=_str_map(data.get("labels"), f"{path}.labels"),
            annotations=_str_map(data.get("annotations"), f"{path}.annotations"),
            finalizers=_str_list(data.get("finalizers"), f"{path}.finalizers"),
            owner_references=tuple(OwnerReference.from_dict(o) for o in owners),
            creation_timestamp=parse_time(data.get("creationTimestamp")),
            deletion_timestamp=parse_time(data.get("deletionTimestamp")),
        )

    def to_dict(self) -> dict[str, Any]:
        identity = {
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "resourceVersion": self.resource_version,
        }
        out: dict[str, Any] = {key: value for key, value in identity.items() if value}
        if self.generation:
            out["generation"] = self.generation
        if self.labels:
            out["labels"] = dict(self.labels)
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.finalizers:
            out["finalizers"] = list(self.finalizers)
        if self.owner_references:
            out["ownerReferences"] = [o.to_dict() for o in self.owner_references]
        if self.creation_timestamp is not None:
            out["creationTimestamp"] = format_time(self.creation_timestamp)
        if self.deletion_timestamp is not None:
            out["deletionTimestamp"] = format_time(self.deletion_timestamp)
        return out


@attrs.frozen(slots=True)
class NodeSelectorRequirement:
    """A requirement on a node label: ``{key, operator, values, minValues}``.

    Operators: In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte. ``min_values`` (NodePool
    and NodeClaim requirements only) is the least number of distinct values of ``key``
    that the candidate instance types must still cover.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()
    min_values: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodeSelectorRequirement:
        _expect(data, dict, path)
        errors = [
            FieldError.required(f"{path}.{field}")
            for field in ("key", "operator")
            if field not in data
        ]
        if errors:
            raise InvalidObject(errors)
        min_values = data.get("minValues")
        if min_values is not None:
            _expect(min_values, int, f"{path}.minValues")
        return cls(
            key=_expect(data["key"], str, f"{path}.key"),
            operator=_expect(data["operator"], str, f"{path}.operator"),
            values=_str_list(data.get("values"), f"{path}.values"),
            min_values=min_values,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "operator": self.operator}
        if self.values:
            out["values"] = list(self.values)
        if self.min_values is not None:
            out["minValues"] = self.min_values
        return out


TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@attrs.frozen(slots=True)
class Taint:
    key: str
    effect: str
    value: str = ""
    time_added: datetime | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> Taint:
        _expect(data, dict, path)
        errors = [FieldError.required(f"{path}.{f}") for f in ("key", "effect") if f not in data]
        if errors:
            raise InvalidObject(errors)
        return cls(
            key=_expect(data["key"], str, f"{path}.key"),
            effect=_expect(data["effect"], str, f"{path}.effect"),
            value=_expect(data.get("value", ""), str, f"{path}.value"),
            time_added=parse_time(data.get("timeAdded")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.key, "effect": self.effect}
        if self.value:
            out["value"] = self.value
        if self.time_added is not None:
            out["timeAdded"] = format_time(self.time_added)
        return out

    def matches(self, other: Taint) -> bool:
        """Same key and effect: Kubernetes' identity for taints on one node."""
        return self.key == other.key and self.effect == other.effect


@attrs.frozen(slots=True)
class NodeClassReference:
    group: str
    kind: str
    name: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodeClassReference:
        _expect(data, dict, path)
        errors = [
            FieldError.required(f"{path}.{f}") for f in ("group", "kind", "name") if f not in data
        ]
        if errors:
            raise InvalidObject(errors)
        return cls(
            group=_expect(data["group"], str, f"{path}.group"),
            kind=_expect(data["kind"], str, f"{path}.kind"),
            name=_expect(data["name"], str, f"{path}.name"),
        )

    def to_dict(self) -> dict[str, Any]:
        return {"group": self.group, "kind": self.kind, "name": self.name}
