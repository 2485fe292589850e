"""Cluster-wide default topology spread constraints, as kube-scheduler applies them.

A cluster can configure kube-scheduler's PodTopologySpread plugin with ``defaultConstraints``:
every pod that declares no spread constraint of its own is spread by them. Karpenter mirrors
this (``--scheduler-config``), and so does karpy, or it would pack pods the kube-scheduler
then refuses to place together.

A default constraint carries no label selector: the scheduler deduces one per pod from what
selects the pod, so each workload spreads on its own. The selector is the equality labels
of every Service in the pod's namespace that selects it, plus the selector of the pod's
controller when that is a ReplicationController (its labels win over a Service's), a
ReplicaSet or a StatefulSet (its requirements are ANDed on, so a contradiction selects
nothing). A pod with nothing to deduce from is not defaulted: an empty selector would
count every pod in the namespace.

`parse_scheduler_config` reads and validates the configuration (the document Karpenter's
``--scheduler-config`` takes); `Workloads` holds the selectors of Services and controllers;
`with_default_spread` returns the pods to schedule with their defaults applied.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.scheduling.pods import TopologySpreadConstraint
from karpy.scheduling.selectors import NOTHING, LabelSelector, SelectorTerm, selector_from_dict
from karpy.scheduling.validation import is_qualified_name

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.scheduling.pods import Pod

__all__ = [
    "CONTROLLER_KINDS",
    "OwnerSelector",
    "SchedulerConfigError",
    "Workloads",
    "parse_scheduler_config",
    "with_default_spread",
]

# The controllers whose selectors the scheduler deduces from, as (apiVersion, kind).
REPLICATION_CONTROLLER: Final = ("v1", "ReplicationController")
CONTROLLER_KINDS: Final = frozenset(
    {REPLICATION_CONTROLLER, ("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")}
)
_CONSTRAINT_FIELDS: Final = frozenset(
    {
        "maxSkew",
        "topologyKey",
        "whenUnsatisfiable",
        "labelSelector",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "matchLabelKeys",
    }
)


class SchedulerConfigError(ValueError):
    """A scheduler configuration kube-scheduler (and Karpenter) would refuse."""


def _fields(data: Any, allowed: frozenset[str], where: str) -> Mapping[str, Any]:
    if not isinstance(data, dict):
        raise SchedulerConfigError(f"decoding scheduler config, {where} must be an object")
    for key in data:
        if key not in allowed:
            raise SchedulerConfigError(f'decoding scheduler config, unknown field "{key}"')
    return data


def parse_scheduler_config(data: Any) -> tuple[TopologySpreadConstraint, ...]:
    """The default spread constraints of a ``{podTopologySpread: {defaultConstraints: [...]}}``
    document (``None`` or empty: none).

    Each constraint needs ``maxSkew > 0``, a qualified ``topologyKey`` and
    ``whenUnsatisfiable`` DoNotSchedule or ScheduleAnyway; ``labelSelector`` and
    ``matchLabelKeys`` are refused (the selector is deduced per pod), as is a second
    constraint with the same key and action. Unknown fields are errors.
    """
    if not data:
        return ()
    config = _fields(data, frozenset({"podTopologySpread"}), "the document")
    spread = config.get("podTopologySpread")
    if spread is None:
        return ()
    spread = _fields(spread, frozenset({"defaultConstraints"}), "podTopologySpread")
    raw = spread.get("defaultConstraints") or []
    if not isinstance(raw, list):
        raise SchedulerConfigError("decoding scheduler config, defaultConstraints must be a list")
    out: list[TopologySpreadConstraint] = []
    for i, item in enumerate(raw):
        fields = _fields(item, _CONSTRAINT_FIELDS, f"defaultConstraints[{i}]")
        constraint = _default_constraint(fields, f"podTopologySpread.defaultConstraints[{i}]")
        for j, earlier in enumerate(out):
            if (earlier.topology_key, earlier.when_unsatisfiable) == (
                constraint.topology_key,
                constraint.when_unsatisfiable,
            ):
                raise SchedulerConfigError(
                    f"validating scheduler config, podTopologySpread.defaultConstraints[{i}] is a "
                    f"duplicate of [{j}], {{{constraint.topology_key}, "
                    f"{constraint.when_unsatisfiable}}}"
                )
        out.append(constraint)
    return tuple(out)


def _default_constraint(data: Mapping[str, Any], where: str) -> TopologySpreadConstraint:
    def invalid(message: str) -> SchedulerConfigError:
        return SchedulerConfigError(f"validating scheduler config, {where}.{message}")

    try:
        max_skew = int(data.get("maxSkew") or 0)
        min_domains = data.get("minDomains")
        min_domains = None if min_domains is None else int(min_domains)
    except (TypeError, ValueError) as exc:
        raise SchedulerConfigError(f"decoding scheduler config, {where}: {exc}") from exc
    key = str(data.get("topologyKey") or "")
    action = str(data.get("whenUnsatisfiable") or "")
    if max_skew <= 0:
        raise invalid("maxSkew must be greater than 0")
    if not key:
        raise invalid("topologyKey must be set")
    if not is_qualified_name(key):
        raise invalid(f'topologyKey "{key}" is not a valid label name')
    if action not in ("DoNotSchedule", "ScheduleAnyway"):
        raise invalid(
            f'whenUnsatisfiable "{action}" must be one of "DoNotSchedule" or "ScheduleAnyway"'
        )
    if data.get("labelSelector") is not None:
        raise invalid("labelSelector must not be set, as selectors are deduced for each pod")
    if data.get("matchLabelKeys"):
        raise invalid("matchLabelKeys must not be set, as it has no effect on default constraints")
    return TopologySpreadConstraint(
        max_skew=max_skew,
        topology_key=key,
        when_unsatisfiable=action,
        selector=NOTHING,  # replaced by each pod's deduced selector
        min_domains=min_domains,
        node_affinity_policy=data.get("nodeAffinityPolicy"),
        node_taints_policy=data.get("nodeTaintsPolicy"),
    )


@attrs.frozen(slots=True)
class OwnerSelector:
    """What a controller adds to a deduced selector.

    A ReplicationController's equality selector is merged into the labels (overriding a
    Service's value for the same key); a ReplicaSet's or StatefulSet's selector is ANDed on
    as terms.
    """

    labels: tuple[tuple[str, str], ...] = ()
    selector: LabelSelector | None = None


def owner_selector_from_dict(data: Mapping[str, Any]) -> tuple[tuple[str, ...], OwnerSelector]:
    """A ReplicationController, ReplicaSet or StatefulSet as ((namespace, apiVersion, kind,
    name), its contribution)."""
    meta = data.get("metadata") or {}
    api_version, kind = str(data.get("apiVersion", "")), str(data.get("kind", ""))
    key = (str(meta.get("namespace") or "default"), api_version, kind, str(meta.get("name", "")))
    spec = data.get("spec") or {}
    if (api_version, kind) == REPLICATION_CONTROLLER:
        labels = spec.get("selector") or {}
        return key, OwnerSelector(labels=tuple(sorted((str(k), str(v)) for k, v in labels.items())))
    raw = spec.get("selector")
    return key, OwnerSelector(selector=None if raw is None else selector_from_dict(raw))


def service_selector_from_dict(
    data: Mapping[str, Any],
) -> tuple[str, str, Mapping[str, str] | None]:
    """A Service as (namespace, name, its pod selector); ``None`` selects no pod."""
    meta = data.get("metadata") or {}
    selector = (data.get("spec") or {}).get("selector")
    return (
        str(meta.get("namespace") or "default"),
        str(meta.get("name", "")),
        None if selector is None else {str(k): str(v) for k, v in selector.items()},
    )


@attrs.frozen(slots=True)
class Workloads:
    """The selectors a default spread constraint is deduced from."""

    # namespace -> Service selectors, in Service name order
    services: Mapping[str, tuple[Mapping[str, str], ...]] = attrs.field(factory=dict)
    # (namespace, apiVersion, kind, name) -> contribution of that controller
    owners: Mapping[tuple[str, ...], OwnerSelector] = attrs.field(factory=dict)

    @classmethod
    def build(
        cls,
        services: Iterable[tuple[str, str, Mapping[str, str] | None]],
        owners: Iterable[tuple[tuple[str, ...], OwnerSelector]],
    ) -> Workloads:
        by_namespace: dict[str, list[tuple[str, Mapping[str, str]]]] = {}
        for namespace, name, selector in services:
            if selector is not None:  # a Service without a selector selects no pod
                by_namespace.setdefault(namespace, []).append((name, selector))
        return cls(
            services={
                ns: tuple(s for _, s in sorted(items, key=lambda i: i[0]))
                for ns, items in by_namespace.items()
            },
            owners=dict(owners),
        )

    def selector_for(self, pod: Pod) -> LabelSelector | None:
        """The selector the scheduler deduces for ``pod``, or None if there is none."""
        labels: dict[str, str] = {}
        for selector in self.services.get(pod.namespace, ()):
            if all(pod.labels.get(k) == v for k, v in selector.items()):
                labels.update(selector)
        extra: LabelSelector | None = None
        controller = pod.controller
        if controller is not None and (controller[0], controller[1]) in CONTROLLER_KINDS:
            owner = self.owners.get((pod.namespace, *controller))
            if owner is not None:
                labels.update(owner.labels)
                extra = owner.selector
        if extra is not None and extra.matches_nothing:
            return NOTHING
        terms = {SelectorTerm(k, "In", frozenset((v,))) for k, v in labels.items()}
        if extra is not None:
            terms.update(extra.terms)
        if not terms:
            return None
        return LabelSelector().with_terms(*terms)


def with_default_spread(
    pods: Sequence[Pod], defaults: Sequence[TopologySpreadConstraint], workloads: Workloads
) -> list[Pod]:
    """``pods`` with ``defaults`` applied to each that declares no spread constraint and
    has a deducible selector; other pods are returned as they are."""
    if not defaults:
        return list(pods)
    deduced: dict[tuple[Any, ...], tuple[TopologySpreadConstraint, ...] | None] = {}
    out = []
    for pod in pods:
        if pod.topology_spread:
            out.append(pod)
            continue
        key = (pod.namespace, pod.controller, tuple(sorted(pod.labels.items())))
        if key not in deduced:
            selector = workloads.selector_for(pod)
            deduced[key] = (
                None
                if selector is None
                else tuple(attrs.evolve(c, selector=selector) for c in defaults)
            )
        constraints = deduced[key]
        out.append(pod if constraints is None else attrs.evolve(pod, topology_spread=constraints))
    return out
