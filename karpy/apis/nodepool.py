"""``karpenter.sh/v1`` NodePool as an attrs model.

A NodePool is read far more often than written: the scheduler reads its template's
requirements, taints and labels on every round, disruption reads its budgets and
consolidation policy. So the model is parsed once per resourceVersion into typed,
immutable records (durations as `timedelta`, resource lists as integer milli-units)
and prints back to the same wire form. Defaults come from the schema in
`karpy.apis.nodepool_schema`, exactly as a cluster would fill them in.
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import TYPE_CHECKING, Any, ClassVar, Final

import attrs
from croniter import croniter

from karpy.apis import labels, validation
from karpy.apis.conditions import Condition, find_condition
from karpy.apis.core import (
    NodeClassReference,
    NodeSelectorRequirement,
    ObjectMeta,
    Taint,
)
from karpy.apis.disruption import ConsolidationPolicy, DisruptionReason
from karpy.apis.duration import (
    BUDGET_DURATION_PATTERN,
    DURATION_PATTERN,
    NILLABLE_DURATION_PATTERN,
    duration_text,
    parse_duration_field,
)
from karpy.apis.fielderrors import FieldError
from karpy.apis.nodepool_schema import NODEPOOL, NODEPOOL_SCHEMA
from karpy.apis.openapi import QUANTITY_PATTERN
from karpy.apis.openapi_engine import child_path
from karpy.apis.resources import format_resource_list, parse_resource_list
from karpy.apis.wire import KindModel, opt_int, prepare
from karpy.base.quantity import QuantityError, parse_quantity

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "Budget",
    "Disruption",
    "NodeClaimTemplate",
    "NodeClaimTemplateSpec",
    "NodePool",
    "NodePoolSpec",
    "NodePoolStatus",
    "TemplateMetadata",
]

DEFAULT_EXPIRE_AFTER = timedelta(hours=720)
_POLICIES: Final = {policy.value: policy for policy in ConsolidationPolicy}


@attrs.frozen(slots=True, kw_only=True)
class Budget:
    """A cap on concurrent voluntary disruptions, optionally within a cron window."""

    nodes: str = "10%"
    schedule: str | None = None
    duration: timedelta | None = None
    reasons: tuple[str, ...] = ()
    duration_text: str | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> Budget:
        text = data.get("duration")
        duration = None
        if text is not None:
            duration = parse_duration_field(text, f"{path}.duration", BUDGET_DURATION_PATTERN)
        return cls(
            nodes=data["nodes"],
            schedule=data.get("schedule"),
            duration=duration,
            reasons=tuple(data.get("reasons", ())),
            duration_text=text,
        )

    def applies_to(self, reason: DisruptionReason) -> bool:
        """Does the budget limit disruptions for ``reason``? All reasons, when it names
        none; a reason karpy does not know (the schema refuses it) limits none."""
        return not self.reasons or reason in self.reasons

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": self.nodes}
        if self.schedule is not None:
            out["schedule"] = self.schedule
        if self.duration is not None or self.duration_text is not None:
            out["duration"] = duration_text(self.duration, self.duration_text)
        if self.reasons:
            out["reasons"] = list(self.reasons)
        return out


@attrs.frozen(slots=True, kw_only=True)
class Disruption:
    consolidation_policy: str = ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED.value  # as given
    consolidate_after: timedelta | None = timedelta(0)  # None = Never
    budgets: tuple[Budget, ...] = (Budget(),)
    consolidate_after_text: str | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> Disruption:
        text = data["consolidateAfter"]
        return cls(
            consolidation_policy=data["consolidationPolicy"],
            consolidate_after=parse_duration_field(
                text, f"{path}.consolidateAfter", NILLABLE_DURATION_PATTERN, nillable=True
            ),
            budgets=tuple(
                Budget.from_dict(b, f"{path}.budgets[{i}]") for i, b in enumerate(data["budgets"])
            ),
            consolidate_after_text=text,
        )

    @property
    def policy(self) -> ConsolidationPolicy | None:
        """The consolidation policy; None for a text the schema refuses."""
        return _POLICIES.get(self.consolidation_policy)

    def to_dict(self) -> dict[str, Any]:
        return {
            "budgets": [b.to_dict() for b in self.budgets],
            "consolidateAfter": duration_text(self.consolidate_after, self.consolidate_after_text),
            "consolidationPolicy": self.consolidation_policy,
        }


@attrs.frozen(slots=True, kw_only=True)
class TemplateMetadata:
    """The labels and annotations a NodePool stamps on its NodeClaims and nodes."""

    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TemplateMetadata:
        data = data or {}
        return cls(
            labels=dict(data.get("labels", {})), annotations=dict(data.get("annotations", {}))
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.annotations:
            out["annotations"] = dict(self.annotations)
        if self.labels:
            out["labels"] = dict(self.labels)
        return out


def parse_requirements(items: list[Any], path: str) -> tuple[NodeSelectorRequirement, ...]:
    return tuple(NodeSelectorRequirement.from_dict(r, f"{path}[{i}]") for i, r in enumerate(items))


def parse_taints(items: list[Any] | None, path: str) -> tuple[Taint, ...]:
    return tuple(Taint.from_dict(t, f"{path}[{i}]") for i, t in enumerate(items or ()))


@attrs.frozen(slots=True, kw_only=True)
class NodeClaimTemplateSpec:
    requirements: tuple[NodeSelectorRequirement, ...]
    node_class_ref: NodeClassReference
    taints: tuple[Taint, ...] = ()
    startup_taints: tuple[Taint, ...] = ()
    expire_after: timedelta | None = DEFAULT_EXPIRE_AFTER  # None = Never
    termination_grace_period: timedelta | None = None  # None = wait forever
    expire_after_text: str | None = attrs.field(default=None, eq=False, repr=False)
    termination_grace_period_text: str | None = attrs.field(default=None, eq=False, repr=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodeClaimTemplateSpec:
        expire = data["expireAfter"]
        grace = data.get("terminationGracePeriod")
        return cls(
            requirements=parse_requirements(data["requirements"], f"{path}.requirements"),
            node_class_ref=NodeClassReference.from_dict(
                data["nodeClassRef"], f"{path}.nodeClassRef"
            ),
            taints=parse_taints(data.get("taints"), f"{path}.taints"),
            startup_taints=parse_taints(data.get("startupTaints"), f"{path}.startupTaints"),
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
        if self.startup_taints:
            out["startupTaints"] = [t.to_dict() for t in self.startup_taints]
        if self.taints:
            out["taints"] = [t.to_dict() for t in self.taints]
        if self.termination_grace_period is not None:
            out["terminationGracePeriod"] = duration_text(
                self.termination_grace_period, self.termination_grace_period_text
            )
        return out

    def validate_runtime(self, path: str) -> list[FieldError]:
        """Karpenter's checks on taints and requirements (shared by NodeClaims' specs)."""
        errors = validation.validate_taints(
            [(f"{path}.taints", self.taints), (f"{path}.startupTaints", self.startup_taints)]
        )
        for index, requirement in enumerate(self.requirements):
            errors += validation.validate_requirement(requirement, f"{path}.requirements[{index}]")
        return errors


@attrs.frozen(slots=True, kw_only=True)
class NodeClaimTemplate:
    spec: NodeClaimTemplateSpec
    metadata: TemplateMetadata = TemplateMetadata()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodeClaimTemplate:
        return cls(
            metadata=TemplateMetadata.from_dict(data.get("metadata")),
            spec=NodeClaimTemplateSpec.from_dict(data["spec"], f"{path}.spec"),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        metadata = self.metadata.to_dict()
        if metadata:
            out["metadata"] = metadata
        out["spec"] = self.spec.to_dict()
        return out


# Kubernetes' own words (resource.ErrFormatWrong) for a quantity its pattern admits but
# its parser refuses, such as a fractional exponent ("1e1.5").
QUANTITY_FORMAT_WRONG: Final = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


_ADMITTED: Final = re.compile(QUANTITY_PATTERN)


@attrs.frozen(slots=True, kw_only=True)
class NodePoolSpec:
    template: NodeClaimTemplate
    disruption: Disruption = Disruption()
    limits: Mapping[str, int] = attrs.field(factory=dict)  # milli-units
    # Limits the CRD admits but no Kubernetes parser reads (resource -> text): kept, so the
    # pool is not lost, and reported by `NodePool.validate_runtime`; such a pool is unusable.
    unreadable_limits: Mapping[str, str] = attrs.field(factory=dict)
    weight: int | None = None
    replicas: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], path: str) -> NodePoolSpec:
        limits, unreadable = _limits(data.get("limits") or {}, f"{path}.limits")
        return cls(
            template=NodeClaimTemplate.from_dict(data["template"], f"{path}.template"),
            disruption=Disruption.from_dict(data["disruption"], f"{path}.disruption"),
            limits=limits,
            unreadable_limits=unreadable,
            weight=opt_int(data.get("weight")),
            replicas=opt_int(data.get("replicas")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"disruption": self.disruption.to_dict()}
        if self.limits or self.unreadable_limits:
            out["limits"] = {**format_resource_list(self.limits), **self.unreadable_limits}
        if self.replicas is not None:
            out["replicas"] = self.replicas
        out["template"] = self.template.to_dict()
        if self.weight is not None:
            out["weight"] = self.weight
        return out


@attrs.frozen(slots=True, kw_only=True)
class NodePoolStatus:
    resources: Mapping[str, int] = attrs.field(factory=dict)  # milli-units, incl. "nodes"
    nodes: int = 0
    node_class_observed_generation: int = 0
    conditions: tuple[Condition, ...] = ()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> NodePoolStatus:
        data = data or {}
        return cls(
            resources=parse_resource_list(data.get("resources"), "status.resources"),
            nodes=int(data.get("nodes", 0)),
            node_class_observed_generation=int(data.get("nodeClassObservedGeneration", 0)),
            conditions=tuple(Condition.from_dict(c) for c in data.get("conditions", ())),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.conditions:
            out["conditions"] = [c.to_dict() for c in self.conditions]
        if self.node_class_observed_generation:
            out["nodeClassObservedGeneration"] = self.node_class_observed_generation
        out["nodes"] = self.nodes
        if self.resources:
            out["resources"] = format_resource_list(self.resources)
        return out

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)


@attrs.frozen(slots=True, kw_only=True)
class NodePool(KindModel):
    API_VERSION: ClassVar[str] = NODEPOOL.api_version
    KIND: ClassVar[str] = NODEPOOL.kind
    SCHEMA: ClassVar = NODEPOOL_SCHEMA

    metadata: ObjectMeta
    spec: NodePoolSpec
    status: NodePoolStatus = NodePoolStatus()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NodePool:
        wire = prepare(NODEPOOL_SCHEMA, data, cls.API_VERSION, cls.KIND)
        return cls(
            metadata=ObjectMeta.from_dict(wire.get("metadata")),
            spec=NodePoolSpec.from_dict(wire["spec"], "spec"),
            status=NodePoolStatus.from_dict(wire.get("status")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.API_VERSION,
            "kind": self.KIND,
            "metadata": self.metadata.to_dict(),
            "spec": self.spec.to_dict(),
        }
        if self.status != NodePoolStatus():
            out["status"] = self.status.to_dict()
        return out

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def is_static(self) -> bool:
        """A static pool keeps ``replicas`` nodes regardless of pending pods."""
        return self.spec.replicas is not None

    def validate_runtime(self) -> list[FieldError]:
        """Karpenter's NodePool RuntimeValidate, plus a parse of each budget schedule."""
        template = self.spec.template
        errors = validation.validate_label_map(
            template.metadata.labels, "spec.template.metadata.labels"
        )
        errors += template.spec.validate_runtime("spec.template.spec")
        for index, requirement in enumerate(template.spec.requirements):
            if requirement.key == labels.LABEL_NODEPOOL:
                errors.append(
                    FieldError.invalid(
                        f"spec.template.spec.requirements[{index}].key",
                        requirement.key,
                        f'invalid key: "{requirement.key}" in requirements, restricted',
                    )
                )
        for index, budget in enumerate(self.spec.disruption.budgets):
            if budget.schedule is not None:
                problem = cron_schedule_error(budget.schedule)
                if problem is not None:
                    path = f"spec.disruption.budgets[{index}].schedule"
                    errors.append(FieldError.invalid(path, budget.schedule, problem))
        return errors + self.limit_errors()

    def limit_errors(self) -> list[FieldError]:
        """The limits that are no quantity (`NodePoolSpec.unreadable_limits`), in
        Kubernetes' words; a pool with any is not provisioned from."""
        return [
            FieldError.invalid(child_path("spec.limits", resource), text, QUANTITY_FORMAT_WRONG)
            for resource, text in sorted(self.spec.unreadable_limits.items())
        ]


def _limits(raw: Mapping[str, Any], path: str) -> tuple[dict[str, int], dict[str, str]]:
    """The limits karpy reads (milli-units) and, apart, the texts the CRD's pattern admits
    that are no quantity at all (``1e1.5``). A text the pattern refuses raises
    `InvalidObject`, as the API server would have refused it."""
    admitted = {k: v for k, v in raw.items() if not isinstance(v, str) or _ADMITTED.fullmatch(v)}
    limits = parse_resource_list({k: v for k, v in raw.items() if k not in admitted}, path)
    unreadable: dict[str, str] = {}
    for resource, value in admitted.items():
        try:
            limits[resource] = parse_quantity(value)
        except QuantityError:
            unreadable[resource] = str(value)
    return limits, unreadable


_CRON_MACROS = frozenset(
    {"@annually", "@yearly", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"}
)


def cron_schedule_error(schedule: str) -> str | None:
    """Why a budget schedule is not a standard five-field cron expression (or one of
    the macros), as Karpenter's cron parser would refuse it; None when it parses."""
    text = schedule.strip()
    if text in _CRON_MACROS:
        return None
    fields = text.split()
    if len(fields) != 5:
        return f"invalid cron schedule: expected exactly 5 fields, found {len(fields)}"
    if any(c in field for field in fields for c in "LW#"):
        return "invalid cron schedule: L, W and # are not supported"
    if not croniter.is_valid(text):
        return f"invalid cron schedule: {text!r} does not parse"
    return _day_of_week_error(fields[4])


def _day_of_week_error(field: str) -> str | None:
    # croniter also takes 7 for Sunday; Karpenter's parser allows days 0-6 only.
    for part in field.split(","):
        bounds = part.split("/", 1)[0].split("-")
        numbers = [int(b) for b in bounds if b.isdigit()]
        if numbers and max(numbers) > 6:
            return f"invalid cron schedule: day of week {max(numbers)} is above the maximum (6)"
    return None
