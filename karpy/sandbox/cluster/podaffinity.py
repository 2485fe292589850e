"""InterPodAffinity as kube-scheduler runs it: required terms filter, preferred terms score.

Follows ``pkg/scheduler/framework/plugins/interpodaffinity/`` (``filtering.go``,
``scoring.go``). PreFilter counts, over every node in the snapshot that has the term's
topology key, keyed by (key, the node's value):

- the existing pods whose required anti-affinity terms match the incoming pod;
- the existing pods that match *all* of the incoming pod's required affinity terms;
- the existing pods that match each of its required anti-affinity terms.

Filter, in upstream's order: a node in a domain an existing pod's anti-affinity claims
fails ("didn't satisfy existing pods anti-affinity rules"); for affinity, the node must
have every term's key and a matching pod in each term's domain — unless no pod matches
anywhere and the pod matches its own terms (the first pod of a group); a node in a domain
holding a pod the anti-affinity terms match fails. Terminating pods count, as upstream.

Score: the incoming pod's preferred terms, ``+weight`` (affinity) or ``-weight``
(anti-affinity) per matching pod in the node's domain, normalised to 0-100 between the
lowest and highest node. Not modelled: the symmetric part of scoring (existing pods'
preferred terms toward the incoming pod) and ``matchLabelKeys`` on affinity terms.

As for spread, the counts are built once per pass for each distinct (namespace, labels,
terms) and updated as the pass places pods.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.sandbox.cluster.kubepod import AffinityTerm, Labels, NodeSpec, PodInfo

EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI = "node(s) didn't match pod anti-affinity rules"

Pair = tuple[str, str]


class AffinityState:
    """One incoming pod shape's counts (see the module docstring)."""

    __slots__ = ("affinity", "anti", "existing_anti", "pod")

    def __init__(self, pod: PodInfo) -> None:
        self.pod = pod
        self.existing_anti: Counter[Pair] = Counter()
        self.affinity: Counter[Pair] = Counter()
        self.anti: Counter[Pair] = Counter()


class AffinityIndex:
    def __init__(
        self,
        nodes: dict[str, NodeSpec],
        pods_by_node: dict[str, list[PodInfo]],
        namespace_labels: dict[str, Labels],
    ) -> None:
        self.nodes = nodes
        self.pods_by_node = pods_by_node
        self.namespace_labels = namespace_labels
        self.anti_pods = [
            (p, nodes[n])
            for n, ps in pods_by_node.items()
            if n in nodes
            for p in ps
            if p.anti_affinity
        ]
        self._states: dict[tuple[object, ...], AffinityState] = {}
        # The preferred terms' weights per (key, value), per distinct set of terms.
        self._preferred: dict[tuple[tuple[AffinityTerm, int], ...], Counter[Pair]] = {}

    def state(self, pod: PodInfo) -> AffinityState:
        signature = (
            pod.namespace, tuple(sorted(pod.labels.items())), pod.affinity, pod.anti_affinity,
        )  # fmt: skip
        found = self._states.get(signature)
        if found is None:
            found = self._states[signature] = AffinityState(pod)
            for existing, node in self.anti_pods:
                self._count_existing_anti(found, existing, node)
            if pod.affinity or pod.anti_affinity:
                for name, pods in self.pods_by_node.items():
                    where = self.nodes.get(name)
                    if where is not None:
                        for existing in pods:
                            self._count(found, existing, where)
        return found

    def _count_existing_anti(self, state: AffinityState, existing: PodInfo, node: NodeSpec) -> None:
        for term in existing.anti_affinity:
            value = node.labels.get(term.key)
            if value is not None and term.matches(state.pod, self.namespace_labels):
                state.existing_anti[(term.key, value)] += 1

    def _count(self, state: AffinityState, existing: PodInfo, node: NodeSpec) -> None:
        pod = state.pod
        if pod.affinity and all(t.matches(existing, self.namespace_labels) for t in pod.affinity):
            for term in pod.affinity:
                value = node.labels.get(term.key)
                if value is not None:
                    state.affinity[(term.key, value)] += 1
        for term in pod.anti_affinity:
            value = node.labels.get(term.key)
            if value is not None and term.matches(existing, self.namespace_labels):
                state.anti[(term.key, value)] += 1

    def assume(self, pod: PodInfo, node: NodeSpec) -> None:
        for terms, per_pair in self._preferred.items():
            self._weigh(per_pair, terms, pod, node)
        if pod.anti_affinity:
            self.anti_pods.append((pod, node))
        for state in self._states.values():
            if pod.anti_affinity:
                self._count_existing_anti(state, pod, node)
            if state.pod.affinity or state.pod.anti_affinity:
                self._count(state, pod, node)

    def filter_reason(self, state: AffinityState, node: NodeSpec) -> str | None:
        labels = node.labels
        if state.existing_anti and any(
            state.existing_anti.get((key, value), 0) > 0 for key, value in labels.items()
        ):
            return EXISTING_ANTI
        pod = state.pod
        if pod.affinity:
            exist = True
            for term in pod.affinity:
                value = labels.get(term.key)
                if value is None:
                    return AFFINITY
                if state.affinity.get((term.key, value), 0) <= 0:
                    exist = False
            if not exist and (
                state.affinity
                or not all(t.matches(pod, self.namespace_labels) for t in pod.affinity)
            ):
                return AFFINITY
        for term in pod.anti_affinity:
            value = labels.get(term.key)
            if value is not None and state.anti.get((term.key, value), 0) > 0:
                return ANTI
        return None

    def scores(self, pod: PodInfo, feasible: list[NodeSpec]) -> list[float]:
        terms = _weighted(pod)
        if not terms:
            return [0.0] * len(feasible)
        per_pair = self._preferred.get(terms)
        if per_pair is None:
            per_pair = self._preferred[terms] = Counter()
            for name, pods in self.pods_by_node.items():
                node = self.nodes.get(name)
                if node is not None:
                    for existing in pods:
                        self._weigh(per_pair, terms, existing, node)
        raw = []
        for n in feasible:
            labels = n.labels
            raw.append(
                float(sum(v for (k, value), v in per_pair.items() if labels.get(k) == value))
            )
        low, high = min(raw), max(raw)
        if high == low:
            return [0.0] * len(feasible)
        return [100.0 * (s - low) / (high - low) for s in raw]

    def _weigh(
        self,
        per_pair: Counter[Pair],
        terms: tuple[tuple[AffinityTerm, int], ...],
        existing: PodInfo,
        node: NodeSpec,
    ) -> None:
        for term, weight in terms:
            value = node.labels.get(term.key)
            if value is not None and term.matches(existing, self.namespace_labels):
                per_pair[(term.key, value)] += weight


def _weighted(pod: PodInfo) -> tuple[tuple[AffinityTerm, int], ...]:
    return (
        *((t, t.weight) for t in pod.preferred_affinity),
        *((t, -t.weight) for t in pod.preferred_anti_affinity),
    )
