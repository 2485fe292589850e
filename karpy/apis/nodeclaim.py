"""``karpenter.sh/v1`` NodeClaim as an attrs model.

Karpenter creates one NodeClaim per node it launches, from a NodePool's template; the
lifecycle controllers fill in its status as the instance launches, registers and
initializes. The spec never changes after creation (the CRD forbids it), so a parsed
NodeClaim's spec can be cached by uid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from karpy.apis.conditions import Condition, find_condition
from karpy.apis.core import (
    NodeClassReference,
    NodeSelectorRequirement,
    ObjectMeta,
    Taint,
    format_time,
    parse_time,
)
from karpy.apis.duration import (
    DURATION_PATTERN,
    NILLABLE_DURATION_PATTERN,
    duration_text,
    parse_duration_field,
)
from karpy.apis.labels import ANNOTATION_REPLACEMENTS
from karpy.apis.nodeclaim_schema import NODECLAIM, NODECLAIM_SCHEMA
from karpy.apis.nodepool import (
    DEFAULT_EXPIRE_AFTER,
    parse_requirements,
    parse_taints,
)
from karpy.apis.resources import format_resource_list, parse_resource_list
from karpy.apis.wire import KindModel, prepare

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime, timedelta

__all__ = ["NodeClaim", "NodeClaimSpec", "NodeClaimStatus", "ResourceRequirements"]


@attrs.frozen(slots=True, kw_only=True)
class ResourceRequirements:
    requests: Mapping[str, int] = attrs.field(factory=dict)  # milli-units

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, path: str) -> ResourceRequirements:
        data = data or {}
        return cls(requests=parse_resource_list(data.get("requests"), f"{path}.requests"))

    def to_dict(self) -> dict[str, Any]:
        return {"requests": format_resource_list(self.requests)} if self.requests else {}


@attrs.frozen(slots=True, kw_only=True)
class NodeClaimSpec:
    requirements: tuple[NodeSelectorRequirement, ...]
    node_class_ref: NodeClassReference
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    resources: ResourceRequirements = ResourceRequirements()
    expire_after: timedelta | None = DEFAULT_EXPIRE_AFTER  # None = Never
    termination_grace_period: timedelta | None = None
    expire_after_text: str | None = attrs.field(default=None, eq=False, repr=False)
    termination_grace_period_text: str | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodeClaimSpec:
        expire = data["expireAfter"]
        grace = data.get("terminationGracePeriod")
        return cls(
            requirements=parse_requirements(data["requirements"], f"{path}.requirements"),
            node_class_ref=NodeClassReference.from_dict(
                data["nodeClassRef"], f"{path}.nodeClassRef"
            ),
            taints=parse_taints(data.get("taints"), f"{path}.taints"),
            startup_taints=parse_taints(data.get("startupTaints"), f"{path}.startupTaints"),
            resources=ResourceRequirements.from_dict(data.get("resources"), f"{path}.resources"),
            expire_after=parse_duration_field(
                expire, f"{path}.expireAfter", NILLABLE_DURATION_PATTERN, nillable=True
            ),
            termination_grace_period=None
            if grace is None
            else parse_duration_field(grace, f"{path}.terminationGracePeriod", DURATION_PATTERN),
            expire_after_text=expire,
            termination_grace_period_text=grace,
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "expireAfter": duration_text(self.expire_after, self.expire_after_text),
            "nodeClassRef": self.node_class_ref.to_dict(),
            "requirements": [r.to_dict() for r in self.requirements],
        }
        resources = self.resources.to_dict()
        if resources:
            out["resources"] = resources
        if self.startup_taints:
            out["startupTaints"] = [t.to_dict() for t in self.startup_taints]
        if self.taints:
            out["taints"] = [t.to_dict() for t in self.taints]
        if self.termination_grace_period is not None:
            out["terminationGracePeriod"] = duration_text(
                self.termination_grace_period, self.termination_grace_period_text
            )
        return out


@attrs.frozen(slots=True, kw_only=True)
class NodeClaimStatus:
    node_name: str = ""
    provider_id: str = ""
    image_id: str = ""
    capacity: Mapping[str, int] = attrs.field(factory=dict)  # milli-units
    allocatable: Mapping[str, int] = attrs.field(factory=dict)  # milli-units
    last_pod_event_time: datetime | None = None
    conditions: tuple[Condition, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> NodeClaimStatus:
        data = data or {}
        return cls(
            node_name=data.get("nodeName", ""),
            provider_id=data.get("providerID", ""),
            image_id=data.get("imageID", ""),
            capacity=parse_resource_list(data.get("capacity"), "status.capacity"),
            allocatable=parse_resource_list(data.get("allocatable"), "status.allocatable"),
            last_pod_event_time=parse_time(data.get("lastPodEventTime")),
            conditions=tuple(Condition.from_dict(c) for c in data.get("conditions", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.allocatable:
            out["allocatable"] = format_resource_list(self.allocatable)
        if self.capacity:
            out["capacity"] = format_resource_list(self.capacity)
        if self.conditions:
            out["conditions"] = [c.to_dict() for c in self.conditions]
        if self.image_id:
            out["imageID"] = self.image_id
        if self.last_pod_event_time is not None:
            out["lastPodEventTime"] = format_time(self.last_pod_event_time)
        if self.node_name:
            out["nodeName"] = self.node_name
        if self.provider_id:
            out["providerID"] = self.provider_id
        return out

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


@attrs.frozen(slots=True, kw_only=True)
class NodeClaim(KindModel):
    API_VERSION: ClassVar[str] = NODECLAIM.api_version
    KIND: ClassVar[str] = NODECLAIM.kind
    SCHEMA: ClassVar = NODECLAIM_SCHEMA

    metadata: ObjectMeta
    spec: NodeClaimSpec
    status: NodeClaimStatus = NodeClaimStatus()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeClaim:
        wire = prepare(NODECLAIM_SCHEMA, data, cls.API_VERSION, cls.KIND)
        return cls(
            metadata=ObjectMeta.from_dict(wire.get("metadata")),
            spec=NodeClaimSpec.from_dict(wire["spec"], "spec"),
            status=NodeClaimStatus.from_dict(wire.get("status")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.API_VERSION,
            "kind": self.KIND,
            "metadata": self.metadata.to_dict(),
            "spec": self.spec.to_dict(),
        }
        status = self.status.to_dict()
        if status:
            out["status"] = status
        return out

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def awaited_replacements(self) -> tuple[str, ...]:
        """The replacement NodeClaims a disruption decision made this one wait for."""
        value = self.metadata.annotations.get(ANNOTATION_REPLACEMENTS, "")
        return tuple(n for n in value.split(",") if n)
