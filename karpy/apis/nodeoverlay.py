"""``karpenter.sh/v1alpha1`` NodeOverlay as an attrs model.

An overlay adjusts the simulated price or extended resources of the instance types its
requirements select. Overlays are applied in `precedence` order: the highest weight
first, and among equal weights the name that sorts last.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from karpy.apis import validation
from karpy.apis.conditions import Condition, find_condition
from karpy.apis.core import NodeSelectorRequirement, ObjectMeta
from karpy.apis.fielderrors import FieldError
from karpy.apis.nodeoverlay_schema import NODEOVERLAY, NODEOVERLAY_SCHEMA
from karpy.apis.resources import format_resource_list, parse_resource_list
from karpy.apis.wire import KindModel, opt_int, prepare

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["NodeOverlay", "NodeOverlaySpec", "NodeOverlayStatus", "order_by_precedence"]

# Resources Karpenter (AWS build) refuses in an overlay's capacity at runtime: the four
# every instance type reports plus the ones the AWS provider computes itself.
RUNTIME_RESTRICTED_CAPACITY = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "pods",
        "vpc.amazonaws.com/pod-eni",
        "aws.amazon.com/neuron",
        "aws.amazon.com/neuroncore",
        "habana.ai/gaudi",
        "vpc.amazonaws.com/efa",
    }
)


@attrs.frozen(slots=True, kw_only=True)
class NodeOverlaySpec:
    requirements: tuple[NodeSelectorRequirement, ...]
    price: str | None = None
    price_adjustment: str | None = None
    capacity: Mapping[str, int] = attrs.field(factory=dict)  # milli-units
    weight: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodeOverlaySpec:
        requirements = tuple(
            # Overlay requirements have no minValues: drop one if given, as pruning would.
            attrs.evolve(
                NodeSelectorRequirement.from_dict(r, f"{path}.requirements[{i}]"), min_values=None
            )
            for i, r in enumerate(data["requirements"])
        )
        return cls(
            requirements=requirements,
            price=data.get("price"),
            price_adjustment=data.get("priceAdjustment"),
            capacity=parse_resource_list(data.get("capacity"), f"{path}.capacity"),
            weight=opt_int(data.get("weight")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.capacity:
            out["capacity"] = format_resource_list(self.capacity)
        if self.price is not None:
            out["price"] = self.price
        if self.price_adjustment is not None:
            out["priceAdjustment"] = self.price_adjustment
        out["requirements"] = [r.to_dict() for r in self.requirements]
        if self.weight is not None:
            out["weight"] = self.weight
        return out


@attrs.frozen(slots=True, kw_only=True)
class NodeOverlayStatus:
    conditions: tuple[Condition, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> NodeOverlayStatus:
        data = data or {}
        return cls(conditions=tuple(Condition.from_dict(c) for c in data.get("conditions", ())))

    def to_dict(self) -> dict[str, Any]:
        return {"conditions": [c.to_dict() for c in self.conditions]} if self.conditions else {}

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


@attrs.frozen(slots=True, kw_only=True)
class NodeOverlay(KindModel):
    API_VERSION: ClassVar[str] = NODEOVERLAY.api_version
    KIND: ClassVar[str] = NODEOVERLAY.kind
    SCHEMA: ClassVar = NODEOVERLAY_SCHEMA

    metadata: ObjectMeta
    spec: NodeOverlaySpec
    status: NodeOverlayStatus = NodeOverlayStatus()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodeOverlay:
        wire = prepare(NODEOVERLAY_SCHEMA, data, cls.API_VERSION, cls.KIND)
        return cls(
            metadata=ObjectMeta.from_dict(wire.get("metadata")),
            spec=NodeOverlaySpec.from_dict(wire["spec"], "spec"),
            status=NodeOverlayStatus.from_dict(wire.get("status")),
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

    def validate_runtime(self) -> list[FieldError]:
        """Karpenter's NodeOverlay RuntimeValidate: requirement syntax (NotIn needs
        values) and no capacity for resources the provider computes itself."""
        errors: list[FieldError] = []
        for index, requirement in enumerate(self.spec.requirements):
            errors += validation.validate_requirement(
                requirement, f"spec.requirements[{index}]", values_required_for_not_in=True
            )
        errors.extend(
            FieldError.invalid(
                "spec.capacity", name, f"invalid capacity: {name} in resource, restricted"
            )
            for name in self.spec.capacity
            if name in RUNTIME_RESTRICTED_CAPACITY
        )
        return errors


def order_by_precedence(overlays: Iterable[NodeOverlay]) -> list[NodeOverlay]:
    """Highest weight first (unset = 0); equal weights by name, descending."""
    return sorted(overlays, key=lambda o: (o.spec.weight or 0, o.metadata.name), reverse=True)
