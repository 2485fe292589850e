"""Pod shapes: the scheduling-relevant content of a pod, shared by identical pods.

Thousands of pending pods usually come from a few owners and are identical for scheduling
purposes. A `PodShape` holds everything placement reads (requests, node requirements,
tolerations, spread constraints, (anti-)affinity terms, host ports, volume topology, the
labels selectors can see) and pods with equal content share one shape: the equivalence
class. Everything the solver derives from a pod (requirement sets, topology groups it owns
or is selected by, answers about NodePool taints) is computed once per shape and cached on
it, never per pod.

Preference relaxation (see `relax`) also works on shapes: relaxing a shape yields another
shape (memoised), so every pod of a class walks the same chain of relaxed shapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.scheduling.clusterindex import bound_selector_keys
from karpy.scheduling.kinds import PreferencePolicy
from karpy.scheduling.requirements import IN, Requirement, Requirements
from karpy.scheduling.taints import PREFER_NO_SCHEDULE_TOLERATION

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.core import Taint
    from karpy.scheduling.pods import (
        HostPort,
        NodeSelectorTerm,
        Pod,
        PodAffinityTerm,
        PreferredSchedulingTerm,
        TopologySpreadConstraint,
        WeightedPodAffinityTerm,
    )
    from karpy.scheduling.taints import Toleration
    from karpy.scheduling.topologygroup import TopologyGroup

__all__ = [
    "PodShape",
    "ShapeBuilder",
    "node_alternatives",
    "term_requirements",
    "visible_label_keys",
]


def term_requirements(term: NodeSelectorTerm) -> Requirements:
    return Requirements(Requirement.new(r.key, r.operator, r.values) for r in term)


def node_alternatives(pod: Pod) -> list[Requirements]:
    """The node requirements ``pod`` accepts, one per required node-affinity term, each
    with its node selector (a node must satisfy one of them)."""
    base = Requirements(Requirement.new(k, IN, (v,)) for k, v in pod.node_selector)
    if not pod.required_node_terms:
        return [base]
    return [base.merge(term_requirements(t)) for t in pod.required_node_terms]


@attrs.define(slots=True)
class ShapeMemo:
    """What the round learned about one shape, so later pods of it skip known answers.

    Only refusals that cannot heal as nodes fill up are remembered (see
    `karpy.scheduling.kinds.RejectionKind.monotone`)."""

    # Existing nodes before this position refuse the shape for the rest of the round.
    existing_cursor: int = 0
    # Planned claims (by index) that refuse the shape for the rest of the round.
    rejected_claims: set[int] = attrs.field(factory=set)
    # NodePools (by position) whose fresh claims refuse the shape.
    rejected_pools: set[int] = attrs.field(factory=set)
    # The first taint of a pool (by identity) the shape does not tolerate, if any.
    untolerated: dict[int, Taint | None] = attrs.field(factory=dict)
    # The topology groups selecting the shape, as of a topology generation.
    selecting: tuple[int, list[TopologyGroup], list[TopologyGroup]] | None = None


class PodShape:
    """One equivalence class of pods, possibly with some preferences relaxed."""

    __slots__ = (
        "_relaxed",
        "host_ports",
        "hostname_requirement",
        "id",
        "inverse_owned",
        "labels",
        "memo",
        "namespace",
        "node_selector",
        "owned_groups",
        "preferred_affinity",
        "preferred_anti_affinity",
        "preferred_node_terms",
        "relaxation",
        "requests",
        "required_affinity",
        "required_anti_affinity",
        "required_node_terms",
        "requirements",
        "root",
        "strict_requirements",
        "tolerations",
        "topology_spread",
        "volume_alternatives",
    )

    def __init__(
        self,
        *,
        namespace: str,
        labels: Mapping[str, str],
        requests: Mapping[str, int],
        node_selector: tuple[tuple[str, str], ...],
        required_node_terms: tuple[NodeSelectorTerm, ...],
        preferred_node_terms: tuple[PreferredSchedulingTerm, ...],
        required_affinity: tuple[PodAffinityTerm, ...],
        preferred_affinity: tuple[WeightedPodAffinityTerm, ...],
        required_anti_affinity: tuple[PodAffinityTerm, ...],
        preferred_anti_affinity: tuple[WeightedPodAffinityTerm, ...],
        tolerations: tuple[Toleration, ...],
        topology_spread: tuple[TopologySpreadConstraint, ...],
        host_ports: tuple[HostPort, ...],
        volume_alternatives: tuple[Requirements, ...],
        policy: str,
        relaxation: str = "",
        root: PodShape | None = None,
    ) -> None:
        self.namespace = namespace
        self.labels = labels
        self.requests = requests
        self.node_selector = node_selector
        self.required_node_terms = required_node_terms
        self.preferred_node_terms = preferred_node_terms
        self.required_affinity = required_affinity
        self.preferred_affinity = preferred_affinity
        self.required_anti_affinity = required_anti_affinity
        self.preferred_anti_affinity = preferred_anti_affinity
        self.tolerations = tolerations
        self.topology_spread = topology_spread
        self.host_ports = host_ports
        self.volume_alternatives = volume_alternatives
        self.relaxation = relaxation
        self.root: PodShape = root if root is not None else self
        self.id = 0
        self._relaxed: PodShape | bool | None = False  # False: not computed yet
        self.memo = ShapeMemo()
        self.owned_groups: list[TopologyGroup] | None = None
        self.inverse_owned: list[TopologyGroup] | None = None
        base = Requirements(Requirement.new(k, IN, (v,)) for k, v in node_selector)
        strict = base
        if required_node_terms:
            strict = base.merge(term_requirements(required_node_terms[0]))
        self.strict_requirements = strict
        if policy == PreferencePolicy.RESPECT and preferred_node_terms:
            heaviest = max(preferred_node_terms, key=lambda p: p.weight)
            requirements = strict.merge(term_requirements(heaviest.term))
        else:
            requirements = strict
        # Nodes keep their hostname out of their requirement sets (so nodes share them);
        # a pod's (preferred) hostname requirement is checked against the node directly.
        self.hostname_requirement = requirements.find(LABEL_HOSTNAME)
        if self.hostname_requirement is not None:
            requirements = requirements.without(LABEL_HOSTNAME)
        self.requirements = requirements

    @property
    def has_preferences(self) -> bool:
        return bool(
            self.preferred_node_terms
            or self.preferred_affinity
            or self.preferred_anti_affinity
            or any(not t.is_required for t in self.topology_spread)
            or len(self.required_node_terms) > 1
        )

    def relax(self, tolerate_prefer_no_schedule: bool, policy: str) -> PodShape | None:
        """The next relaxed shape in Karpenter's order, or None when nothing is left.

        Order: drop the first required node-affinity term (while more than one remains,
        they are ORed), the heaviest preferred pod-affinity term, the heaviest preferred
        pod anti-affinity term, the heaviest preferred node-affinity term, one
        ``ScheduleAnyway`` spread constraint, and finally tolerate ``PreferNoSchedule``
        taints (only if some NodePool has one).
        """
        if self._relaxed is not False:
            return self._relaxed  # type: ignore[return-value]
        relaxed = self._relax_once(tolerate_prefer_no_schedule, policy)
        self._relaxed = relaxed
        return relaxed

    def _evolve(self, policy: str, relaxation: str, **changes: Any) -> PodShape:
        fields: dict[str, Any] = {
            "namespace": self.namespace,
            "labels": self.labels,
            "requests": self.requests,
            "node_selector": self.node_selector,
            "required_node_terms": self.required_node_terms,
            "preferred_node_terms": self.preferred_node_terms,
            "required_affinity": self.required_affinity,
            "preferred_affinity": self.preferred_affinity,
            "required_anti_affinity": self.required_anti_affinity,
            "preferred_anti_affinity": self.preferred_anti_affinity,
            "tolerations": self.tolerations,
            "topology_spread": self.topology_spread,
            "host_ports": self.host_ports,
            "volume_alternatives": self.volume_alternatives,
        }
        fields.update(changes)
        return PodShape(**fields, policy=policy, relaxation=relaxation, root=self.root)

    def _relax_once(self, tolerate_prefer_no_schedule: bool, policy: str) -> PodShape | None:
        if len(self.required_node_terms) > 1:
            return self._evolve(
                policy,
                "removed a required node affinity term",
                required_node_terms=self.required_node_terms[1:],
            )
        if self.preferred_affinity:
            terms = sorted(self.preferred_affinity, key=lambda t: -t.weight)
            return self._evolve(
                policy, "removed a preferred pod affinity term", preferred_affinity=tuple(terms[1:])
            )
        if self.preferred_anti_affinity:
            terms = sorted(self.preferred_anti_affinity, key=lambda t: -t.weight)
            return self._evolve(
                policy,
                "removed a preferred pod anti-affinity term",
                preferred_anti_affinity=tuple(terms[1:]),
            )
        if self.preferred_node_terms:
            terms_n = sorted(self.preferred_node_terms, key=lambda t: -t.weight)
            return self._evolve(
                policy,
                "removed a preferred node affinity term",
                preferred_node_terms=tuple(terms_n[1:]),
            )
        for i, tsc in enumerate(self.topology_spread):
            if not tsc.is_required:
                spread = list(self.topology_spread)
                spread[i] = spread[-1]
                spread.pop()
                return self._evolve(
                    policy,
                    "removed a ScheduleAnyway topology spread constraint",
                    topology_spread=tuple(spread),
                )
        if tolerate_prefer_no_schedule and PREFER_NO_SCHEDULE_TOLERATION not in self.tolerations:
            return self._evolve(
                policy,
                "tolerated PreferNoSchedule taints",
                tolerations=(*self.tolerations, PREFER_NO_SCHEDULE_TOLERATION),
            )
        return None


class ShapeBuilder:
    """Interns pods into shapes: equal scheduling content, one shared `PodShape`."""

    __slots__ = ("_by_content", "_visible_labels", "policy", "shapes")

    def __init__(self, visible_label_keys: frozenset[str] | None, policy: str) -> None:
        self._visible_labels = visible_label_keys
        self._by_content: dict[tuple[Any, ...], PodShape] = {}
        self.shapes: list[PodShape] = []
        self.policy = policy

    def shape_of(self, pod: Pod, volume_alternatives: tuple[Requirements, ...] = ()) -> PodShape:
        labels: Mapping[str, str] = pod.labels
        visible = self._visible_labels
        if visible is not None:
            labels = {k: v for k, v in labels.items() if k in visible}
        content = (
            pod.namespace,
            tuple(sorted(labels.items())),
            tuple(sorted(pod.requests.items())),
            pod.node_selector,
            pod.required_node_terms,
            pod.preferred_node_terms,
            pod.required_affinity,
            pod.preferred_affinity,
            pod.required_anti_affinity,
            pod.preferred_anti_affinity,
            pod.tolerations,
            pod.topology_spread,
            pod.host_ports,
            volume_alternatives,
        )
        existing = self._by_content.get(content)
        if existing is not None:
            return existing
        shape = PodShape(
            namespace=pod.namespace,
            labels=labels,
            requests=pod.requests,
            node_selector=pod.node_selector,
            required_node_terms=pod.required_node_terms,
            preferred_node_terms=pod.preferred_node_terms,
            required_affinity=pod.required_affinity,
            preferred_affinity=pod.preferred_affinity,
            required_anti_affinity=pod.required_anti_affinity,
            preferred_anti_affinity=pod.preferred_anti_affinity,
            tolerations=pod.tolerations,
            topology_spread=pod.topology_spread,
            host_ports=pod.host_ports,
            volume_alternatives=volume_alternatives,
            policy=self.policy,
        )
        shape.id = len(self.shapes)
        self._by_content[content] = shape
        self.shapes.append(shape)
        return shape


def visible_label_keys(pods: Sequence[Pod], bound: Sequence[Pod]) -> frozenset[str]:
    """Every pod label key some selector in a round can look at.

    Shapes keep only these labels, so pods that differ in labels nobody selects on (a
    StatefulSet's per-pod name label, say) still share a shape.
    """
    keys: set[str] = set()
    for pod in pods:
        for tsc in pod.topology_spread:
            keys.update(tsc.selector.keys())
            keys.update(tsc.match_label_keys)
        for term in (*pod.required_affinity, *pod.required_anti_affinity):
            keys.update(term.selector.keys())
        for weighted in (*pod.preferred_affinity, *pod.preferred_anti_affinity):
            keys.update(weighted.term.selector.keys())
    return frozenset(keys) | bound_selector_keys(bound)
