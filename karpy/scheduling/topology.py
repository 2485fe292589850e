"""Topology for one round: spread constraints, pod affinity and anti-affinity.

`Topology` owns every `TopologyGroup` of a round and answers two questions for the solver:

* `add_requirements`: given a pod shape and a candidate node (its requirements, taints and
  hostname), which domains may the pod use there? The answer narrows the node's
  requirements (e.g. ``zone In [b]``) or says no.
* `record`: the pod was placed; count it in every group that selects it.

Groups come from the pending pods' spread constraints and (anti-)affinity terms, created
when a shape is first seen (and again for relaxed shapes whose terms differ), each counted
from the pods already bound in the cluster. Anti-affinity also works in reverse: a bound pod
with required anti-affinity to ``app=db`` keeps ``app=db`` pods out of its domain, so such
terms of bound and pending pods form *inverse* groups, consulted for every pod they select.

Which groups select a shape is computed once per shape (and refreshed only when a group is
added), through an index on the selectors' ``key=value`` terms, so placing a pod touches
only the groups that care about it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.scheduling.boundpods import BoundPods, selector_anchor
from karpy.scheduling.kinds import GroupKind, NodeInclusionPolicy, PreferencePolicy
from karpy.scheduling.requirements import IN, Requirement, Requirements
from karpy.scheduling.selectors import SelectorTerm
from karpy.scheduling.shapes import term_requirements
from karpy.scheduling.topologygroup import (
    EMPTY_FILTER,
    MAX_SKEW_UNBOUNDED,
    HostIndex,
    TopologyGroup,
    TopologyNodeFilter,
    pod_domains_for,
)

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.core import Taint
    from karpy.scheduling.domains import DomainUniverse
    from karpy.scheduling.nodes import ClusterNode, Node
    from karpy.scheduling.pods import PodAffinityTerm
    from karpy.scheduling.queue import Lane
    from karpy.scheduling.shapes import PodShape
    from karpy.scheduling.taints import Toleration

__all__ = ["Topology", "TopologyFailure"]

_NO_TAINTS: Final[tuple[Taint, ...]] = ()


@attrs.frozen(slots=True)
class TopologyFailure:
    """No domain satisfies ``group`` on the candidate node."""

    group: TopologyGroup
    pod_domains: Requirement
    node_domains: Requirement

    def render(self) -> str:
        group = self.group
        key, selector = group.key, group.selector.render()
        where = ""
        if not self.node_domains.complement:
            where = f" among [{', '.join(sorted(self.node_domains.values))}]"
        if group.kind == GroupKind.SPREAD:
            limits = f"maxSkew {group.max_skew}"
            if group.min_domains is not None:
                limits += f", minDomains {group.min_domains}"
            if group.is_hostname:
                return (
                    f"topology spread on {key} ({limits}) for pods with {selector}: "
                    "a new node would exceed the skew"
                )
            return (
                f"topology spread on {key} ({limits}) for pods with {selector}: every {key}"
                f"{where} would exceed the skew (counts {_counts(group)})"
            )
        if group.kind == GroupKind.AFFINITY:
            if not group.nonzero:
                return f"pod affinity on {key}: no pod with {selector} is running or planned"
            return (
                f"pod affinity on {key}: pods with {selector} are only in "
                f"{_counts(group)}, which this node cannot join"
            )
        if group.is_hostname:
            return f"pod anti-affinity on {key}: the node already holds a pod with {selector}"
        return (
            f"pod anti-affinity on {key}: every {key}{where} holds (or may hold) a pod with "
            f"{selector} (counts {_counts(group)})"
        )


def _counts(group: TopologyGroup) -> str:
    items = sorted(group.domains.items())
    shown = ", ".join(f"{d}={c}" for d, c in items[:10])
    more = f", +{len(items) - 10} more" if len(items) > 10 else ""
    return "{" + shown + more + "}"


class _SelectionIndex:
    """Groups by the ``key=value`` their selector requires (or in a general list)."""

    __slots__ = ("_by_anchor", "_general", "groups")

    def __init__(self) -> None:
        self.groups: dict[tuple[object, ...], TopologyGroup] = {}
        self._by_anchor: dict[tuple[str, str], list[TopologyGroup]] = {}
        self._general: list[TopologyGroup] = []

    def add(self, group: TopologyGroup) -> None:
        self.groups[group.identity()] = group
        anchor = selector_anchor(group.selector)
        if group.selector.matches_nothing:
            return
        if anchor is None:
            self._general.append(group)
        else:
            self._by_anchor.setdefault(anchor, []).append(group)

    def selecting(self, namespace: str, labels: Mapping[str, str]) -> list[TopologyGroup]:
        found = [g for g in self._general if g.selects(namespace, labels)]
        by_anchor = self._by_anchor
        if by_anchor:
            for item in labels.items():
                found.extend(g for g in by_anchor.get(item, ()) if g.selects(namespace, labels))
        return found


class Topology:
    __slots__ = (
        "_admitted",
        "_domain_nodes",
        "_domains_seen",
        "_groups",
        "_inverse",
        "_namespace_labels",
        "_node_requirements",
        "_nodes_by_name",
        "_pods",
        "_universe",
        "excluded",
        "generation",
        "hosts",
        "policy",
    )

    def __init__(
        self,
        *,
        universe: DomainUniverse,
        nodes_by_name: Mapping[str, Node],
        domain_nodes: Sequence[ClusterNode],
        bound_pods: BoundPods,
        namespace_labels: Mapping[str, Mapping[str, str]],
        excluded: frozenset[str] = frozenset(),
        policy: str = PreferencePolicy.RESPECT,
        hostnames: Sequence[str] = (),
    ) -> None:
        """``hostnames`` (of the existing nodes, in the order they are tried) take the first
        host positions, so position order is try order."""
        self._universe = universe
        self._nodes_by_name = nodes_by_name
        self._domain_nodes = [n for n in domain_nodes if n.has_node]
        self._pods = bound_pods
        self._namespace_labels = namespace_labels
        self._groups = _SelectionIndex()
        self._inverse = _SelectionIndex()
        self._node_requirements: dict[str, Requirements] = {}
        self._domains_seen: dict[tuple[str, TopologyNodeFilter], list[str]] = {}
        self._admitted: dict[TopologyNodeFilter, dict[str, bool]] = {}
        self.hosts = HostIndex()
        for hostname in hostnames:
            self.hosts.position(hostname)
        self.excluded = excluded
        self.policy = policy
        self.generation = 0
        for pod in bound_pods.with_anti_affinity:
            if pod.uid in excluded:
                continue
            node = nodes_by_name.get(pod.node_name)
            labels = node.labels if node is not None else {}
            for term in pod.required_anti_affinity:
                group = self._inverse_group(pod.namespace, term, pod.tolerations)
                domain = labels.get(group.key)
                if domain is not None:
                    group.record(domain)

    # -- group construction --------------------------------------------------------------
    def namespaces_for(self, namespace: str, term: PodAffinityTerm) -> frozenset[str]:
        if not term.namespaces and term.namespace_selector is None:
            return frozenset((namespace,))
        selected = set(term.namespaces)
        if term.namespace_selector is not None:
            selector = term.namespace_selector
            selected.update(
                n for n, labels in self._namespace_labels.items() if selector.matches(labels)
            )
        return frozenset(selected)

    def _inverse_group(
        self, namespace: str, term: PodAffinityTerm, tolerations: tuple[Toleration, ...]
    ) -> TopologyGroup:
        group = TopologyGroup(
            GroupKind.ANTI_AFFINITY,
            term.topology_key,
            term.selector,
            self.namespaces_for(namespace, term),
            MAX_SKEW_UNBOUNDED,
            None,
            EMPTY_FILTER,
            self._universe.domains(term.topology_key, tolerations),
            self.hosts,
        )
        existing = self._inverse.groups.get(group.identity())
        if existing is not None:
            return existing
        self._inverse.add(group)
        self._created(group)
        return group

    def _group(self, candidate: TopologyGroup) -> TopologyGroup:
        existing = self._groups.groups.get(candidate.identity())
        if existing is not None:
            return existing
        self._count_cluster(candidate)
        self._groups.add(candidate)
        self._created(candidate)
        return candidate

    def _created(self, group: TopologyGroup) -> None:
        self.generation += 1

    def prepare(self, shape: PodShape) -> None:
        """Create (and count) the groups ``shape`` owns; Karpenter's ``Topology.Update``."""
        if shape.owned_groups is not None:
            return
        owned: list[TopologyGroup] = []
        for tsc in shape.topology_spread:
            if self.policy != PreferencePolicy.RESPECT and not tsc.is_required:
                continue
            selector = tsc.selector
            extra = [
                SelectorTerm(k, "In", frozenset((shape.labels[k],)))
                for k in tsc.match_label_keys
                if k in shape.labels
            ]
            if extra:
                selector = selector.with_terms(*extra)
            node_filter = TopologyNodeFilter(
                terms=self._filter_terms(shape),
                taint_policy=tsc.node_taints_policy or NodeInclusionPolicy.IGNORE,
                affinity_policy=tsc.node_affinity_policy or NodeInclusionPolicy.HONOR,
                tolerations=shape.tolerations,
            )
            honor = node_filter.taint_policy != NodeInclusionPolicy.IGNORE
            owned.append(
                self._group(
                    TopologyGroup(
                        GroupKind.SPREAD,
                        tsc.topology_key,
                        selector,
                        frozenset((shape.namespace,)),
                        tsc.max_skew,
                        tsc.min_domains,
                        node_filter,
                        self._universe.domains(
                            tsc.topology_key, shape.tolerations if honor else None
                        ),
                        self.hosts,
                    )
                )
            )
        respect = self.policy == PreferencePolicy.RESPECT
        terms: list[tuple[str, PodAffinityTerm]] = [
            (GroupKind.AFFINITY, t) for t in shape.required_affinity
        ]
        if respect:
            terms += [(GroupKind.AFFINITY, w.term) for w in shape.preferred_affinity]
        terms += [(GroupKind.ANTI_AFFINITY, t) for t in shape.required_anti_affinity]
        if respect:
            terms += [(GroupKind.ANTI_AFFINITY, w.term) for w in shape.preferred_anti_affinity]
        for kind, term in terms:
            owned.append(
                self._group(
                    TopologyGroup(
                        kind,
                        term.topology_key,
                        term.selector,
                        self.namespaces_for(shape.namespace, term),
                        MAX_SKEW_UNBOUNDED,
                        None,
                        EMPTY_FILTER,
                        self._universe.domains(term.topology_key, shape.tolerations),
                        self.hosts,
                    )
                )
            )
        shape.owned_groups = owned
        shape.inverse_owned = [
            self._inverse_group(shape.namespace, t, shape.tolerations)
            for t in shape.required_anti_affinity
        ]

    @staticmethod
    def _filter_terms(shape: PodShape) -> tuple[Requirements, ...]:
        base = Requirements(Requirement.new(k, IN, (v,)) for k, v in shape.node_selector)
        if not shape.required_node_terms:
            return (base,)
        return tuple(base.merge(term_requirements(t)) for t in shape.required_node_terms)

    def _labels_requirements(self, name: str, labels: Mapping[str, str]) -> Requirements:
        reqs = self._node_requirements.get(name)
        if reqs is None:
            reqs = self._node_requirements[name] = Requirements.from_labels(labels)
        return reqs

    def _admits(self, node_filter: TopologyNodeFilter, node: Node) -> bool:
        admitted = self._admitted.setdefault(node_filter, {})
        verdict = admitted.get(node.name)
        if verdict is None:
            requirements = self._labels_requirements(node.name, node.labels)
            verdict = admitted[node.name] = node_filter.matches(node.taints, requirements)
        return verdict

    def _cluster_domains(self, key: str, node_filter: TopologyNodeFilter) -> list[str]:
        """The ``key`` values of existing nodes ``node_filter`` admits (shared by groups)."""
        cached = self._domains_seen.get((key, node_filter))
        if cached is not None:
            return cached
        domains: dict[str, None] = {}
        for cluster_node in self._domain_nodes:
            domain = cluster_node.labels.get(key)
            if domain is None or domain in domains:
                continue
            node = self._nodes_by_name.get(cluster_node.name)
            taints = node.taints if node is not None else cluster_node.node_taints
            requirements = self._labels_requirements(cluster_node.name, cluster_node.labels)
            if node_filter.matches(taints, requirements):
                domains[domain] = None
        out = self._domains_seen[(key, node_filter)] = list(domains)
        return out

    def _count_cluster(self, group: TopologyGroup) -> None:
        """Seed a new group with the domains of existing nodes and the bound pods it selects."""
        node_filter = group.node_filter
        admits_all = node_filter is EMPTY_FILTER or node_filter.admits_all
        if admits_all:
            node_filter = EMPTY_FILTER  # one cache entry for every filter that admits all
        key = group.key
        if not group.is_hostname:
            for domain in self._cluster_domains(key, node_filter):
                group.register(domain)
        for pod in self._pods.matching(group.namespaces, group.selector):
            if pod.uid in self.excluded:
                continue
            node = self._nodes_by_name.get(pod.node_name)
            if node is None:
                continue
            found = node.labels.get(key)
            if found is None and group.is_hostname:
                found = node.name
            if found is None:
                continue
            if not admits_all and not self._admits(node_filter, node):
                continue
            group.record(found)

    # -- per-shape views -------------------------------------------------------------------
    def _selecting(self, shape: PodShape) -> tuple[list[TopologyGroup], list[TopologyGroup]]:
        cached = shape.memo.selecting
        if cached is not None and cached[0] == self.generation:
            return cached[1], cached[2]
        groups = self._groups.selecting(shape.namespace, shape.labels)
        inverse = self._inverse.selecting(shape.namespace, shape.labels)
        shape.memo.selecting = (self.generation, groups, inverse)
        return groups, inverse

    def constrains(self, shape: PodShape) -> bool:
        """Does any topology group restrict where ``shape`` may go?"""
        self.prepare(shape)
        return bool(shape.owned_groups) or bool(self._selecting(shape)[1])

    def matching_groups(self, shape: PodShape) -> list[TopologyGroup]:
        """Groups that decide where ``shape`` may go: its own and inverse ones selecting it."""
        self.prepare(shape)
        owned = shape.owned_groups or []
        inverse = self._selecting(shape)[1]
        if not inverse:
            return owned
        return [*owned, *inverse]

    def screen(self, shape: PodShape) -> Screen:
        """A cheap pre-check of nodes for a pod of ``shape`` under the current counts:
        `Screen.rejects` is True only for nodes `allowed_domains` would refuse."""
        checks: list[tuple[TopologyGroup, bool, Requirement, frozenset[str] | None]] = []
        strict = shape.strict_requirements
        for group in self.matching_groups(shape):
            pod_domains = pod_domains_for(group.key, strict)
            selects = group.selects(shape.namespace, shape.labels)
            allowed = None if group.is_hostname else group.allowed_set(selects, pod_domains)
            if group.is_hostname or allowed is not None:
                checks.append((group, selects, pod_domains, allowed))
        return Screen(tuple(checks))

    # -- the two questions ----------------------------------------------------------------
    def allowed_domains(
        self,
        shape: PodShape,
        taints: Sequence[Taint],
        node_requirements: Requirements,
        hostname: str,
    ) -> tuple[Requirement, ...] | TopologyFailure:
        """Domain requirements topology adds for a pod of ``shape`` on this node, or why not.

        An empty tuple means topology has nothing to say (or only hostname groups, which
        were satisfied). Groups on other keys each return the domains they allow.
        """
        groups = self.matching_groups(shape)
        if not groups:
            return ()
        strict = shape.strict_requirements
        namespace, labels = shape.namespace, shape.labels
        added: list[Requirement] = []
        for group in groups:
            pod_domains = pod_domains_for(group.key, strict)
            selects = group.selects(namespace, labels)
            if group.is_hostname:
                if not group.allows_host(selects, pod_domains, hostname):
                    return TopologyFailure(
                        group,
                        pod_domains,
                        Requirement(LABEL_HOSTNAME, False, frozenset((hostname,))),
                    )
                continue
            node_domains = node_requirements.get(group.key)
            domains = group.next_domains(selects, pod_domains, node_domains)
            if not domains.values:
                return TopologyFailure(group, pod_domains, node_domains)
            added.append(domains)
        return tuple(added)

    def record(
        self,
        shape: PodShape,
        taints: Sequence[Taint],
        requirements: Requirements,
        hostname: str,
        allow_undefined: frozenset[str] = frozenset(),
    ) -> None:
        """Count a pod of ``shape`` placed on a node with ``requirements``."""
        groups, _ = self._selecting(shape)
        for group in groups:
            node_filter = group.node_filter
            if node_filter is not EMPTY_FILTER and not node_filter.matches(
                taints, requirements, allow_undefined
            ):
                continue
            if group.is_hostname:
                group.record(hostname)
                continue
            req = requirements.find(group.key)
            if req is None or req.complement:
                continue
            if group.kind == GroupKind.ANTI_AFFINITY:
                for domain in req.values:
                    group.record(domain)
            elif len(req.values) == 1:
                group.record(next(iter(req.values)))
        for group in shape.inverse_owned or ():
            if group.is_hostname:
                group.record(hostname)
                continue
            req = requirements.find(group.key)
            if req is not None and not req.complement:
                for domain in req.values:
                    group.record(domain)

    def domain_keys(self) -> tuple[str, ...]:
        """The keys other than hostname that some group of the round decides by."""
        keys = {
            g.key
            for index in (self._groups, self._inverse)
            for g in index.groups.values()
            if not g.is_hostname
        }
        return tuple(sorted(keys))

    def describe(self) -> dict[str, Any]:
        return {
            "groups": len(self._groups.groups),
            "inverseGroups": len(self._inverse.groups),
        }


@attrs.frozen(slots=True)
class Screen:
    """See `Topology.screen`."""

    checks: tuple[tuple[TopologyGroup, bool, Requirement, frozenset[str] | None], ...]

    def rejects(self, requirements: Requirements, hostname: str) -> bool:
        """Would topology refuse a node with ``requirements`` named ``hostname``?"""
        for group, selects, pod_domains, allowed in self.checks:
            if allowed is None:  # a hostname group: the node's own name decides
                if not group.allows_host(selects, pod_domains, hostname):
                    return True
                continue
            node = requirements.get(group.key)
            if not node.complement and not any(d in allowed for d in node.values):
                return True
        return False

    def admits(self, keys: tuple[str, ...], lane: Lane) -> bool:
        """Could a node whose values for ``keys`` are ``lane`` pass? False only where
        `rejects` is True for every node of the lane."""
        for group, _, _, allowed in self.checks:
            if allowed is None or group.key not in keys:
                continue
            values = lane[keys.index(group.key)]
            if values is not None and values.isdisjoint(allowed):
                return False
        return True
