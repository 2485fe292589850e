"""``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer as an attrs model.

A buffer names the shape of one chunk (a PodTemplate, or the pod template of a
Deployment, StatefulSet or ReplicaSet) and how many chunks to keep room for (``replicas``,
a ``percentage`` of the workload's replicas, or as many as fit under ``limits``). The
buffer controller (`karpy.provisioning.capacitybuffers`) writes what it resolved to the
status; the rounds schedule that many placeholder pods (`karpy.scheduling.buffers`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs

from karpy.apis.capacitybuffer_schema import ACTIVE_CAPACITY, CAPACITYBUFFER
from karpy.apis.conditions import Condition, ConditionTypes, find_condition
from karpy.apis.core import ObjectMeta
from karpy.apis.resources import parse_resource_list
from karpy.apis.wire import opt_int

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "ACTIVE_CAPACITY", "BUFFER_CONDITIONS", "CAPACITYBUFFER", "PROVISIONING",
    "READY_FOR_PROVISIONING", "CapacityBuffer", "CapacityBufferSpec", "CapacityBufferStatus",
    "ScalableRef",
]  # fmt: skip

READY_FOR_PROVISIONING: Final = "ReadyForProvisioning"
PROVISIONING: Final = "Provisioning"
# No root condition: each is set on its own (the buffer API has no Ready).
BUFFER_CONDITIONS: Final = ConditionTypes(dependents=())


@attrs.frozen(slots=True)
class ScalableRef:
    api_group: str
    kind: str
    name: str

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScalableRef:
        return cls(str(data.get("apiGroup") or ""), str(data.get("kind") or ""),
                   str(data.get("name") or ""))  # fmt: skip


def _ref_name(data: Any) -> str | None:
    return str(data.get("name") or "") if isinstance(data, dict) else None


@attrs.frozen(slots=True, kw_only=True)
class CapacityBufferSpec:
    provisioning_strategy: str = ACTIVE_CAPACITY
    pod_template_ref: str | None = None  # a PodTemplate's name, in the buffer's namespace
    scalable_ref: ScalableRef | None = None
    replicas: int | None = None
    percentage: int | None = None
    limits: Mapping[str, int] = attrs.field(factory=dict)  # milli-units

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapacityBufferSpec:
        scalable = data.get("scalableRef")
        return cls(
            provisioning_strategy=str(data.get("provisioningStrategy") or ACTIVE_CAPACITY),
            pod_template_ref=_ref_name(data.get("podTemplateRef")),
            scalable_ref=ScalableRef.from_dict(scalable) if isinstance(scalable, dict) else None,
            replicas=opt_int(data.get("replicas")),
            percentage=opt_int(data.get("percentage")),
            limits=parse_resource_list(data.get("limits"), "spec.limits"),
        )


@attrs.frozen(slots=True, kw_only=True)
class CapacityBufferStatus:
    pod_template_ref: str | None = None
    replicas: int | None = None
    pod_template_generation: int | None = None
    provisioning_strategy: str | None = None
    conditions: tuple[Condition, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapacityBufferStatus:
        return cls(
            pod_template_ref=_ref_name(data.get("podTemplateRef")),
            replicas=opt_int(data.get("replicas")),
            pod_template_generation=opt_int(data.get("podTemplateGeneration")),
            provisioning_strategy=data.get("provisioningStrategy"),
            conditions=tuple(Condition.from_dict(c) for c in data.get("conditions") or ()),
        )

    def to_dict(self) -> dict[str, Any]:
        """The whole status, as written back (a merge patch sets every field, and clears
        with null the references it no longer has)."""
        return {
            "podTemplateRef": None if self.pod_template_ref is None
            else {"name": self.pod_template_ref},
            "replicas": self.replicas,
            "podTemplateGeneration": self.pod_template_generation,
            "provisioningStrategy": self.provisioning_strategy,
            "conditions": [c.to_dict() for c in self.conditions],
        }  # fmt: skip


@attrs.frozen(slots=True, kw_only=True)
class CapacityBuffer:
    API_VERSION: ClassVar[str] = CAPACITYBUFFER.api_version
    KIND: ClassVar[str] = CAPACITYBUFFER.kind

    metadata: ObjectMeta
    spec: CapacityBufferSpec
    status: CapacityBufferStatus = CapacityBufferStatus()

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def namespace(self) -> str:
        return self.metadata.namespace

    @property
    def key(self) -> str:
        return f"{self.metadata.namespace}/{self.metadata.name}"

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.status.conditions, type_)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapacityBuffer:
        return cls(
            metadata=ObjectMeta.from_dict(data.get("metadata")),
            spec=CapacityBufferSpec.from_dict(data.get("spec") or {}),
            status=CapacityBufferStatus.from_dict(data.get("status") or {}),
        )
