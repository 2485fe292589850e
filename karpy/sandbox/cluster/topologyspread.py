"""PodTopologySpread as kube-scheduler runs it: who counts, the global minimum, the skew.

Follows ``pkg/scheduler/framework/plugins/podtopologyspread/`` (``common.go``,
``filtering.go``, ``scoring.go``):

- **Counting** (PreFilter's ``calPreFilterState``): over every node in the snapshot
  (schedulable or not) that has *all* the topology keys of the pod's constraints of the
  same kind (``DoNotSchedule`` ones for filtering, ``ScheduleAnyway`` ones for
  scoring), that passes
  the pod's node selector and required node affinity when ``nodeAffinityPolicy`` is
  Honor (the default), and whose ``NoSchedule``/``NoExecute`` taints the pod tolerates
  when ``nodeTaintsPolicy`` is Honor (default Ignore), count the pods in the pod's
  namespace that match the constraint's selector (``matchLabelKeys`` merged in) and are
  not terminating. Every such node's domain exists with count 0 even if empty.
- **Filter**: a node without the topology key fails; otherwise
  ``count(domain) + (1 if the pod matches its own selector) - globalMin > maxSkew`` fails,
  where globalMin is the smallest count over the eligible domains, or 0 when there are
  fewer eligible domains than ``minDomains``. Only ``DoNotSchedule`` constraints filter.
- **Score**: ``ScheduleAnyway`` constraints only: per node, ``sum(count * log(size + 2)
  + maxSkew - 1)`` over constraints whose key the node has, then normalised so that the
  node with the fewest matching pods scores 100.

Upstream recomputes the counts for every pod; a pass here keeps one `DomainCounts` per
distinct (namespace, selector, key, eligibility) and adds each pod it places, as
kube-scheduler's PreFilter state is updated by ``AddPod`` — so a pod's work is one
dictionary lookup per node and constraint. Not modelled: the cluster-level default
constraints (the stand-in's pods are spread only by their own constraints).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any

from karpy.sandbox.cluster.kubepod import first_untolerated
from karpy.sandbox.cluster.nodematch import info_accepts

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.sandbox.cluster.kubepod import NodeSpec, PodInfo, Selector, SpreadConstraint

MISSING_LABEL = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW = "node(s) didn't match pod topology spread constraints"
HARD_EFFECTS = ("NoSchedule", "NoExecute")


class DomainCounts:
    """Matching pods per domain of one topology key, with an incremental minimum."""

    __slots__ = ("_hist", "_min", "counts", "eligible", "key", "namespace", "selector")

    def __init__(self, key: str, namespace: str, selector: Selector) -> None:
        self.key = key
        self.namespace = namespace
        self.selector = selector
        self.counts: dict[str, int] = {}
        self.eligible: set[str] = set()  # node names whose pods count
        self._hist: Counter[int] = Counter()
        self._min = 0

    def open(self, domain: str) -> None:
        if domain not in self.counts:
            self.counts[domain] = 0
            self._hist[0] += 1
            self._min = 0

    def add(self, domain: str, n: int = 1) -> None:
        old = self.counts[domain]
        self.counts[domain] = old + n
        self._hist[old] -= 1
        if not self._hist[old]:
            del self._hist[old]
        self._hist[old + n] += 1
        if old == self._min and old not in self._hist:
            self._min = min(self._hist) if self._hist else 0

    def global_min(self, min_domains: int) -> int:
        if len(self.counts) < min_domains:
            return 0
        return self._min

    def counts_pod(self, pod: PodInfo) -> bool:
        return (
            pod.namespace == self.namespace
            and not pod.terminating
            and self.selector.matches(pod.labels)
        )


def node_counts_for(pod: PodInfo, constraint: SpreadConstraint, node: NodeSpec) -> bool:
    """Whether ``node``'s pods count toward ``constraint`` of ``pod`` (policies honoured)."""
    if any(c.key not in node.labels for c in pod.spread if c.hard == constraint.hard):
        return False
    if constraint.honor_affinity and not info_accepts(
        pod.node_selector, pod.required_terms, node.labels, node.name
    ):
        return False
    return not (
        constraint.honor_taints
        and first_untolerated(node.taints, pod.tolerations, HARD_EFFECTS) is not None
    )


class SpreadState:
    """The pass's count tables, shared by pods with the same constraints."""

    def __init__(self, nodes: Iterable[NodeSpec], pods_by_node: dict[str, list[PodInfo]]) -> None:
        self.nodes = list(nodes)
        self.pods_by_node = pods_by_node
        self._tables: dict[tuple[object, ...], DomainCounts] = {}
        # Per node, its countable (not terminating) pods by (namespace, labels): a selector
        # is matched once per distinct label set, not once per pod. Built on first use.
        self._kinds: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]]] | None = (
            None
        )

    def tables(self, pod: PodInfo) -> list[DomainCounts]:
        """One table per constraint of ``pod``, built on first use."""
        out = []
        for c in pod.spread:
            keys = tuple(sorted({k.key for k in pod.spread if k.hard == c.hard}))
            signature = (
                pod.namespace, c.selector, c.key, keys,
                (tuple(sorted(pod.node_selector.items())), repr(pod.required_terms))
                if c.honor_affinity else None,
                repr(pod.tolerations) if c.honor_taints else None,
            )  # fmt: skip
            table = self._tables.get(signature)
            if table is None:
                table = self._tables[signature] = self._build(pod, c)
            out.append(table)
        return out

    def _build(self, pod: PodInfo, constraint: SpreadConstraint) -> DomainCounts:
        table = DomainCounts(constraint.key, pod.namespace, constraint.selector)
        kinds = self._pod_kinds()
        for node in self.nodes:
            if not node_counts_for(pod, constraint, node):
                continue
            domain = node.labels[constraint.key]
            table.open(domain)
            table.eligible.add(node.name)
            n = sum(
                count
                for (namespace, _), (labels, count) in kinds.get(node.name, {}).items()
                if namespace == table.namespace and table.selector.matches(labels)
            )
            if n:
                table.add(domain, n)
        return table

    def _pod_kinds(self) -> dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], list[Any]]]:
        if self._kinds is None:
            self._kinds = {}
            for name, pods in self.pods_by_node.items():
                for pod in pods:
                    self._count_kind(name, pod)
        return self._kinds

    def _count_kind(self, node: str, pod: PodInfo) -> None:
        assert self._kinds is not None
        if pod.terminating:
            return
        key = (pod.namespace, tuple(sorted(pod.labels.items())))
        entry = self._kinds.setdefault(node, {}).setdefault(key, [pod.labels, 0])
        entry[1] += 1

    def assume(self, pod: PodInfo, node: NodeSpec) -> None:
        """``pod`` now runs on ``node``: count it wherever it matches."""
        if self._kinds is not None:
            self._count_kind(node.name, pod)
        for table in self._tables.values():
            if node.name in table.eligible and table.counts_pod(pod):
                table.add(node.labels[table.key])


def filter_reason(
    pod: PodInfo, tables: list[DomainCounts], node: NodeSpec, self_match: list[bool]
) -> str | None:
    """None when ``node`` keeps every ``DoNotSchedule`` constraint, else the reason."""
    for constraint, table, matches in zip(pod.spread, tables, self_match, strict=True):
        if not constraint.hard:
            continue
        domain = node.labels.get(constraint.key)
        if domain is None:
            return MISSING_LABEL
        skew = table.counts.get(domain, 0) + matches - table.global_min(constraint.min_domains)
        if skew > constraint.max_skew:
            return SKEW
    return None


def scores(pod: PodInfo, tables: list[DomainCounts], feasible: list[NodeSpec]) -> list[float]:
    """Normalised 0-100 scores of ``feasible`` for the pod's ``ScheduleAnyway`` constraints."""
    soft = [(c, t) for c, t in zip(pod.spread, tables, strict=True) if not c.hard]
    if not soft:
        return [0.0] * len(feasible)
    ignored = [any(c.key not in n.labels for c, _ in soft) for n in feasible]
    weights = []
    for c, _ in soft:
        size = len({n.labels[c.key] for n, skip in zip(feasible, ignored, strict=True) if not skip})
        weights.append(math.log(size + 2))
    raw: list[float] = []
    for node, skip in zip(feasible, ignored, strict=True):
        if skip:
            raw.append(0.0)
            continue
        total = 0.0
        for (c, table), weight in zip(soft, weights, strict=True):
            total += table.counts.get(node.labels[c.key], 0) * weight + c.max_skew - 1
        raw.append(total)
    kept = [s for s, skip in zip(raw, ignored, strict=True) if not skip]
    if not kept:
        return [0.0] * len(feasible)
    low, high = min(kept), max(kept)
    return [
        0.0 if skip else (100.0 if high == 0 else 100.0 * (high + low - s) / high)
        for s, skip in zip(raw, ignored, strict=True)
    ]
