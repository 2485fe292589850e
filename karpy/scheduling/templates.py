"""NodePools compiled into the scheduler's NodeClaim templates.

The scheduler never reads a NodePool object in its hot path. Each NodePool is compiled once
(per resourceVersion) into a `NodeClaimTemplate`: the labels every node of the pool gets,
the requirements a pod must be compatible with (the pool's requirements, its template
labels as ``In`` requirements, its name under ``karpenter.sh/nodepool``, the node class
label, and ``karpenter.sh/registered`` / ``karpenter.sh/initialized`` so DaemonSets that
select on those count as running there), taints, limits and weight.

`ordered_templates` keeps the pools Karpenter would use in a round, in Karpenter's order:
ready, not being deleted, not static, weight descending then name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from karpy.apis.labels import (
    LABEL_INITIALIZED,
    LABEL_NODEPOOL,
    LABEL_REGISTERED,
    nodeclass_label_key,
)
from karpy.scheduling.requirements import IN, Requirement, Requirements
from karpy.scheduling.usage import NodePoolUsage

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.core import NodeSelectorRequirement, Taint

__all__ = ["SIMULATION_ONLY_KEYS", "NodeClaimTemplate", "NodePoolLike", "compile_nodepool"]

# Requirement keys that exist only so DaemonSet simulation sees a registered, initialized
# node; they never become labels or NodeClaim requirements.
SIMULATION_ONLY_KEYS: Final = frozenset({LABEL_REGISTERED, LABEL_INITIALIZED})


class _Meta(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def deletion_timestamp(self) -> Any: ...


class _TemplateMeta(Protocol):
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def annotations(self) -> Mapping[str, str]: ...


class _NodeClassRef(Protocol):
    @property
    def group(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...


class _TemplateSpec(Protocol):
    @property
    def requirements(self) -> Sequence[NodeSelectorRequirement]: ...
    @property
    def taints(self) -> Sequence[Taint]: ...
    @property
    def startup_taints(self) -> Sequence[Taint]: ...
    @property
    def node_class_ref(self) -> _NodeClassRef: ...


class _Template(Protocol):
    @property
    def metadata(self) -> _TemplateMeta: ...
    @property
    def spec(self) -> _TemplateSpec: ...


class _Spec(Protocol):
    @property
    def template(self) -> _Template: ...
    @property
    def weight(self) -> int | None: ...
    @property
    def limits(self) -> Mapping[str, int]: ...
    @property
    def replicas(self) -> int | None: ...


class _Condition(Protocol):
    @property
    def type(self) -> str: ...
    @property
    def status(self) -> str: ...


class _Status(Protocol):
    @property
    def resources(self) -> Mapping[str, int]: ...
    @property
    def conditions(self) -> Sequence[_Condition]: ...


class NodePoolLike(Protocol):
    """The parts of `karpy.apis.nodepool.NodePool` compiled here."""

    @property
    def metadata(self) -> _Meta: ...
    @property
    def spec(self) -> _Spec: ...
    @property
    def status(self) -> _Status: ...


@attrs.frozen(slots=True)
class NodeClaimTemplate:
    nodepool: str
    weight: int
    labels: Mapping[str, str]
    requirements: Requirements
    taints: tuple[Taint, ...]
    startup_taints: tuple[Taint, ...]
    limits: Mapping[str, int]
    usage: NodePoolUsage  # the pool's status.resources
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    ready: bool = True
    deleting: bool = False
    static: bool = False

    @property
    def usable(self) -> bool:
        """Does Karpenter provision from this pool in a round?"""
        return self.ready and not self.deleting and not self.static

    def custom_labels(
        self, requirements: Requirements, well_known: frozenset[str]
    ) -> dict[str, str]:
        """Concrete values for user-defined keys of ``requirements`` (as Karpenter resolves)."""
        out: dict[str, str] = {}
        for key, req in requirements.items():
            if key in well_known or key in SIMULATION_ONLY_KEYS or key == "kubernetes.io/hostname":
                continue
            value = req.any_value()
            if value:
                out[key] = value
        return out


def _requirement(req: NodeSelectorRequirement) -> Requirement:
    return Requirement.new(req.key, req.operator, req.values, min_values=req.min_values)


def compile_nodepool(nodepool: NodePoolLike) -> NodeClaimTemplate:
    spec = nodepool.spec
    template = spec.template
    ref = template.spec.node_class_ref
    labels = dict(template.metadata.labels)
    labels[LABEL_NODEPOOL] = nodepool.metadata.name
    if ref.kind:
        labels[nodeclass_label_key(ref.group, ref.kind)] = ref.name
    reqs: list[Requirement] = [_requirement(r) for r in template.spec.requirements]
    reqs += [Requirement.new(k, IN, (v,)) for k, v in labels.items()]
    reqs.append(Requirement.new(LABEL_REGISTERED, IN, ("true",)))
    reqs.append(Requirement.new(LABEL_INITIALIZED, IN, ("true",)))
    ready = True
    for condition in nodepool.status.conditions:
        if condition.type == "Ready":
            ready = condition.status == "True"
    return NodeClaimTemplate(
        nodepool=nodepool.metadata.name,
        weight=spec.weight or 0,
        labels=labels,
        requirements=Requirements(reqs),
        taints=tuple(template.spec.taints),
        startup_taints=tuple(template.spec.startup_taints),
        limits=dict(spec.limits),
        usage=NodePoolUsage.from_resource_list(nodepool.status.resources),
        annotations=dict(template.metadata.annotations),
        ready=ready,
        deleting=nodepool.metadata.deletion_timestamp is not None,
        static=spec.replicas is not None,
    )


def ordered_templates(templates: Iterable[NodeClaimTemplate]) -> list[NodeClaimTemplate]:
    """Usable templates by weight (highest first), then name."""
    return sorted((t for t in templates if t.usable), key=lambda t: (-t.weight, t.nodepool))
