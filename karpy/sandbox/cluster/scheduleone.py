"""kube-scheduler's scheduling cycle for one pod: filter, score, select, assume.

Follows ``pkg/scheduler/schedule_one.go`` and the default profile's plugins:

1. **PreFilter**: volumes (`kubevolumes`), the pod's spread counts (`topologyspread`)
   and affinity counts (`podaffinity`). A pod with ``status.nominatedNodeName`` naming a
   schedulable node is then filtered against that node alone, and goes there unscored
   if it passes (``findNodesThatFitPod`` / ``evaluateNominatedNode``); only if it fails
   are all nodes scanned, and the scan's start does not move for it.
2. **Filter**, per node, each plugin in the default profile's order, the first failure
   being the node's reason: NodeUnschedulable and the not-ready taint (a node that is
   not Ready carries ``node.kubernetes.io/not-ready:NoSchedule``, which the node
   lifecycle controller adds), TaintToleration (``NoSchedule``/``NoExecute``),
   NodeAffinity (``nodeSelector`` and required terms), NodePorts, NodeResourcesFit
   (every short resource counted), VolumeBinding, PodTopologySpread, InterPodAffinity.
   NodePorts and NodeResourcesFit count the pods nominated to the node as if they ran
   there (those of priority >= the pod's, `nominated`).
   As ``findNodesThatPassFilters`` does, the scan starts where the previous pod's
   stopped and ends once ``numFeasibleNodesToFind`` nodes pass (all nodes below 100,
   else ``max(5, 50 - nodes/125)`` percent of them, at least 100).
3. **Score** the feasible nodes with the default weights: NodeResourcesFit 1
   (``LeastAllocated``, or ``MostAllocated`` — the profile that packs pods the way
   karpy plans them), NodeResourcesBalancedAllocation 1, TaintToleration 3 (untolerated
   ``PreferNoSchedule`` taints), NodeAffinity 2 (preferred terms), PodTopologySpread 2,
   InterPodAffinity 2. ImageLocality is left out (the sandbox has no images).
4. **Select** the highest total, a tie broken at random (``selectHost``; the random
   source is injected), and **assume** the pod there so the next pod sees it.

A pod that fits nowhere gets a histogram of reasons, rendered as kube-scheduler's
``0/N nodes are available: ...`` message (`unschedulable`).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import TYPE_CHECKING, Final, Literal

import attrs

from karpy.sandbox.cluster.kubepod import (
    CPU,
    MEMORY,
    PODS,
    NodeSpec,
    PodInfo,
    first_untolerated,
    tolerates,
)
from karpy.sandbox.cluster.nodematch import info_accepts, term_matches
from karpy.sandbox.cluster.nominated import Held, Reservations
from karpy.sandbox.cluster.podaffinity import AffinityIndex, AffinityState
from karpy.sandbox.cluster.topologyspread import DomainCounts, SpreadState
from karpy.sandbox.cluster.topologyspread import filter_reason as spread_reason
from karpy.sandbox.cluster.topologyspread import scores as spread_scores
from karpy.sandbox.cluster.unschedulable import NoFit

if TYPE_CHECKING:
    from collections.abc import Container

    from karpy.sandbox.cluster.kubepod import Labels
    from karpy.sandbox.cluster.kubevolumes import VolumeView

Scoring = Literal["LeastAllocated", "MostAllocated"]
SCORING_STRATEGIES: Final = ("LeastAllocated", "MostAllocated")
MIN_FEASIBLE_NODES: Final = 100
MIN_FEASIBLE_PERCENTAGE: Final = 5
MAX_SCORE: Final = 100

CORDONED: Final = "node(s) were unschedulable"
AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
PORTS: Final = "node(s) didn't have free ports for the requested pod ports"
TOO_MANY_PODS: Final = "Too many pods"
HARD_EFFECTS: Final = ("NoSchedule", "NoExecute")


def num_feasible_nodes_to_find(nodes: int) -> int:
    """``numFeasibleNodesToFind`` with ``percentageOfNodesToScore`` unset (adaptive)."""
    if nodes < MIN_FEASIBLE_NODES:
        return nodes
    percentage = max(MIN_FEASIBLE_PERCENTAGE, 50 - nodes // 125)
    return max(MIN_FEASIBLE_NODES, nodes * percentage // 100)


def taint_reason(taint_key: str, taint_value: str) -> str:
    return f"node(s) had untolerated taint {{{taint_key}: {taint_value}}}"


class NodeState:
    """A schedulable node's room during a pass: what is free, ports in use."""

    __slots__ = (
        "alloc_cpu", "alloc_memory", "free", "free_pods", "nonzero_cpu", "nonzero_memory",
        "ports", "spec",
    )  # fmt: skip

    def __init__(self, spec: NodeSpec) -> None:
        self.spec = spec
        self.free = dict(spec.allocatable)
        self.free_pods = spec.allocatable.get(PODS, 0) // 1000
        self.alloc_cpu = spec.allocatable.get(CPU, 0)
        self.alloc_memory = spec.allocatable.get(MEMORY, 0)
        self.nonzero_cpu = 0
        self.nonzero_memory = 0
        self.ports: set[tuple[str, str, int]] = set()

    def add(self, pod: PodInfo) -> None:
        free = self.free
        for resource, value in pod.requests.items():
            free[resource] = free.get(resource, 0) - value
        self.nonzero_cpu += pod.nonzero_cpu
        self.nonzero_memory += pod.nonzero_memory
        self.free_pods -= 1
        self.ports.update(pod.host_ports)

    def short_of(self, pod: PodInfo, held: Held | None = None) -> list[str] | None:
        """NodeResourcesFit's reasons, every resource the pod does not fit in (with the
        room ``held`` by pods nominated to the node counted as used)."""
        if held is not None:
            return self._short_of_held(pod, held)
        out = None
        if self.free_pods < 1:
            out = [TOO_MANY_PODS]
        free = self.free
        for resource, value in pod.request_items:
            if value > free.get(resource, 0):
                if out is None:
                    out = []
                out.append(f"Insufficient {resource}")
        return out

    def _short_of_held(self, pod: PodInfo, held: Held) -> list[str] | None:
        out = None
        if self.free_pods - held.pods < 1:
            out = [TOO_MANY_PODS]
        free = self.free
        reserved = held.requests
        for resource, value in pod.request_items:
            if value > free.get(resource, 0) - reserved.get(resource, 0):
                if out is None:
                    out = []
                out.append(f"Insufficient {resource}")
        return out


def _ports_conflict(
    used: set[tuple[str, str, int]], wanted: tuple[tuple[str, str, int], ...]
) -> bool:
    for ip, protocol, port in wanted:
        for other_ip, other_protocol, other_port in used:
            if (
                port == other_port
                and protocol == other_protocol
                and (ip == other_ip or "0.0.0.0" in (ip, other_ip))
            ):
                return True
    return False


class Cycle:
    """The pods of one pass, scheduled one at a time against the pass's snapshot."""

    def __init__(
        self,
        nodes: list[NodeSpec],
        bound: list[PodInfo],
        *,
        reserved: dict[str, list[PodInfo]] | None = None,
        nominated: Reservations | None = None,
        namespace_labels: dict[str, Labels] | None = None,
        volumes: VolumeView | None = None,
        scoring: Scoring = "LeastAllocated",
        rng: random.Random | None = None,
    ) -> None:
        self.nodes = {n.name: n for n in nodes}
        self.states = {n.name: NodeState(n) for n in sorted(nodes, key=lambda n: n.name)}
        self.candidates = [s for s in self.states.values() if s.spec.schedulable]
        pods_by_node: dict[str, list[PodInfo]] = {}
        for pod in bound:
            pods_by_node.setdefault(pod.node_name, []).append(pod)
            state = self.states.get(pod.node_name)
            if state is not None:
                state.add(pod)
        for name, pods in (reserved or {}).items():
            for pod in pods:
                if name in self.states:
                    self.states[name].add(pod)
        self.pods_by_node = pods_by_node
        self.nominated = nominated if nominated is not None else Reservations()
        self.any_nominated = bool(self.nominated)  # a flag: the filter's hot path reads it
        self.volumes = volumes
        self.scoring = scoring
        self.rng = rng or random.Random(0)
        self.spread = SpreadState(nodes, pods_by_node)
        self.affinity = AffinityIndex(self.nodes, pods_by_node, namespace_labels or {})
        self.next_start = 0

    # -- the cycle ---------------------------------------------------------------------

    def schedule(
        self,
        pod: PodInfo,
        among: list[NodeState] | None = None,
        among_names: Container[str] = (),
    ) -> str | NoFit:
        """The node ``pod`` is assumed on, or why it fits none.

        ``among`` narrows the nodes tried (the pass's incremental retries; their names are
        ``among_names``); the scan then starts at its first node. A pod nominated to a
        schedulable node (among those) is filtered against that node alone first and,
        if it passes, goes there unscored (``evaluateNominatedNode``: one feasible node
        is chosen directly); otherwise every node is scanned as usual."""
        nodes = self.candidates if among is None else among
        reasons: Counter[str] = Counter()
        if self.volumes is not None and pod.claims:
            problem = self.volumes.prefilter(pod)
            if problem is not None:
                return NoFit(prefilter=problem)
        tables = self.spread.tables(pod) if pod.spread else []
        self_match = [c.selector.matches(pod.labels) for c in pod.spread]
        affinity = (
            self.affinity.state(pod)
            if pod.affinity or pod.anti_affinity or self.affinity.anti_pods
            else None
        )
        if pod.nominated:
            state = self.states.get(pod.nominated)
            if (
                state is not None
                and state.spec.schedulable
                and (among is None or pod.nominated in among_names)
                and self._filter(pod, state, tables, self_match, affinity) is None
            ):
                self.assume(pod, pod.nominated)
                return pod.nominated
        total = len(nodes)
        wanted = num_feasible_nodes_to_find(total)
        start = self.next_start % total if among is None and total else 0
        feasible: list[NodeState] = []
        processed = 0
        for i in range(total):
            node = nodes[(start + i) % total]
            processed += 1
            reason = self._filter(pod, node, tables, self_match, affinity)
            if reason is None:
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
            elif isinstance(reason, list):
                reasons.update(reason)
            else:
                reasons[reason] += 1
        if among is None and total:
            self.next_start = (start + processed) % total
        if not feasible:
            return NoFit(reasons)
        chosen = feasible[0] if len(feasible) == 1 else self._select(pod, feasible, tables)
        self.assume(pod, chosen.spec.name)
        return chosen.spec.name

    def feasible(self, pod: PodInfo) -> list[str]:
        """Every schedulable node that passes all filters for ``pod`` (no scoring, nothing
        assumed): what upstream's plugin tests call the candidate nodes."""
        tables = self.spread.tables(pod) if pod.spread else []
        self_match = [c.selector.matches(pod.labels) for c in pod.spread]
        affinity = (
            self.affinity.state(pod)
            if pod.affinity or pod.anti_affinity or self.affinity.anti_pods
            else None
        )
        return [
            node.spec.name
            for node in self.candidates
            if self._filter(pod, node, tables, self_match, affinity) is None
        ]

    def _filter(
        self,
        pod: PodInfo,
        node: NodeState,
        tables: list[DomainCounts],
        self_match: list[bool],
        affinity: AffinityState | None,
    ) -> str | list[str] | None:
        spec = node.spec
        if spec.taints:
            taint = first_untolerated(spec.taints, pod.tolerations, HARD_EFFECTS)
            if taint is not None:
                return taint_reason(taint.key, taint.value)
        if (pod.node_selector or pod.required_terms is not None) and not info_accepts(
            pod.node_selector, pod.required_terms, spec.labels, spec.name
        ):
            return AFFINITY
        held = self.nominated.on(spec.name, pod) if self.any_nominated else None
        if pod.host_ports:
            used = node.ports if held is None or not held.ports else node.ports | held.ports
            if used and _ports_conflict(used, pod.host_ports):
                return PORTS
        short = node.short_of(pod, held)
        if short:
            return short
        if pod.claims and self.volumes is not None:
            problem = self.volumes.filter_reason(pod, spec)
            if problem is not None:
                return problem
        if tables:
            problem = spread_reason(pod, tables, spec, self_match)
            if problem is not None:
                return problem
        if affinity is not None:
            return self.affinity.filter_reason(affinity, spec)
        return None

    def _select(
        self, pod: PodInfo, feasible: list[NodeState], tables: list[DomainCounts]
    ) -> NodeState:
        specs = [n.spec for n in feasible]
        totals = self._resource_scores(pod, feasible)
        for weight, plugin in (
            (3, _taint_scores(pod, specs)),
            (2, _node_affinity_scores(pod, specs)),
            (2, spread_scores(pod, tables, specs) if tables else None),
            (2, self.affinity.scores(pod, specs)
             if pod.preferred_affinity or pod.preferred_anti_affinity else None),
        ):  # fmt: skip
            if plugin is not None:
                totals = [t + weight * s for t, s in zip(totals, plugin, strict=True)]
        best = max(totals)
        ties = [n for n, t in zip(feasible, totals, strict=True) if t == best]
        return ties[0] if len(ties) == 1 else self.rng.choice(ties)

    def _resource_scores(self, pod: PodInfo, feasible: list[NodeState]) -> list[float]:
        """NodeResourcesFit (weight 1) plus NodeResourcesBalancedAllocation (weight 1),
        both on the non-zero requests of CPU and memory (weights 1 each)."""
        pod_cpu, pod_memory = pod.nonzero_cpu, pod.nonzero_memory
        most = self.scoring == "MostAllocated"
        out = []
        for node in feasible:
            fit = 0
            fractions = []
            for requested, capacity in (
                (node.nonzero_cpu + pod_cpu, node.alloc_cpu),
                (node.nonzero_memory + pod_memory, node.alloc_memory),
            ):
                if capacity <= 0:
                    fractions.append(1.0)
                    continue
                if most:
                    fit += min(requested, capacity) * MAX_SCORE // capacity
                elif requested <= capacity:
                    fit += (capacity - requested) * MAX_SCORE // capacity
                fractions.append(min(1.0, requested / capacity))
            balanced = (1 - abs(fractions[0] - fractions[1]) / 2) * MAX_SCORE
            out.append(fit / 2 + balanced)
        return out

    def assume(self, pod: PodInfo, node_name: str) -> None:
        """``pod`` now runs on ``node_name``: its room, counts and affinity see it."""
        placed = pod if pod.node_name == node_name else _on(pod, node_name)
        self.nominated.release(pod)
        self.states[node_name].add(placed)
        self.pods_by_node.setdefault(node_name, []).append(placed)
        spec = self.nodes[node_name]
        self.spread.assume(placed, spec)
        self.affinity.assume(placed, spec)


def _on(pod: PodInfo, node_name: str) -> PodInfo:
    return attrs.evolve(pod, node_name=node_name)


def _taint_scores(pod: PodInfo, nodes: list[NodeSpec]) -> list[float] | None:
    if not any(t.effect == "PreferNoSchedule" for n in nodes for t in n.taints):
        return None
    prefer = tuple(
        t for t in pod.tolerations if (t.get("effect") or "PreferNoSchedule") == "PreferNoSchedule"
    )
    counts = [
        sum(1 for t in n.taints if t.effect == "PreferNoSchedule" and not tolerates(prefer, t))
        for n in nodes
    ]
    high = max(counts)
    if high == 0:
        return [float(MAX_SCORE)] * len(nodes)
    return [MAX_SCORE - c * MAX_SCORE / high for c in counts]


def _node_affinity_scores(pod: PodInfo, nodes: list[NodeSpec]) -> list[float] | None:
    if not pod.preferred_terms:
        return None
    raw = [
        sum(w for w, term in pod.preferred_terms if term_matches(term, n.labels, n.name))
        for n in nodes
    ]
    high = max(raw)
    return [0.0 if high == 0 else s * MAX_SCORE / high for s in raw]
