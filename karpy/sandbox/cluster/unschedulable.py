"""The message kube-scheduler leaves on a pod it could not place.

Upstream runs every filter plugin on every node and reports a histogram of the first
failure per node: ``0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had
untolerated taint {karpenter.sh/unregistered: }.`` This stand-in places pods with karpy's
solver, which says only *that* a pod found no node, so the histogram is rebuilt here with
kube-scheduler's wording for the cheap, common filters, checked in upstream's order per
node: not Ready, cordoned (``unschedulable``), being deleted, an untolerated
``NoSchedule``/``NoExecute`` taint, node selector and required node affinity, then
resources (``Insufficient cpu``, ``Too many pods``). A node that passes all of those but
was still not chosen failed on topology spread, pod (anti-)affinity, host ports or volumes
and is counted under one honest catch-all. Room is counted after the pass's own
placements, so pods that lost a node to their siblings read "Insufficient", as upstream.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Final

import attrs

from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.nodematch import pod_accepts
from karpy.scheduling.taints import first_untolerated

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.sandbox.apiserver.store import Entry
    from karpy.scheduling.nodes import Node
    from karpy.scheduling.pods import Pod

NOT_READY: Final = "node(s) were not ready"
CORDONED: Final = "node(s) were unschedulable"
DELETING: Final = "node(s) were being deleted"
AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
OTHER: Final = (
    "node(s) didn't satisfy the pod's topology spread, pod affinity, host port or volume "
    "constraints"
)
NO_NODES: Final = "no nodes available to schedule pods"


@attrs.frozen(slots=True)
class Candidate:
    node: Node
    free: Mapping[str, int]  # allocatable minus the requests of the pods bound there


@attrs.frozen(slots=True)
class NodeCensus:
    """Every node, sorted by why it is out of the running, with room for the rest."""

    total: int
    excluded: Mapping[str, int]
    candidates: tuple[Candidate, ...]

    @classmethod
    def take(
        cls, nodes: Iterable[tuple[Entry, Node]], used: Mapping[str, Mapping[str, int]]
    ) -> NodeCensus:
        excluded: Counter[str] = Counter()
        candidates = []
        total = 0
        for entry, node in nodes:
            total += 1
            obj = entry.obj
            if not facts.node_is_ready(obj):
                excluded[NOT_READY] += 1
            elif facts.spec(obj).get("unschedulable"):
                excluded[CORDONED] += 1
            elif facts.is_deleting(obj):
                excluded[DELETING] += 1
            else:
                taken = used.get(node.name, {})
                free = {k: v - taken.get(k, 0) for k, v in node.allocatable.items()}
                candidates.append(Candidate(node, free))
        return cls(total, dict(excluded), tuple(candidates))


def explain(pod: Pod, census: NodeCensus) -> str:
    """``0/N nodes are available: ...`` for ``pod``, as kube-scheduler phrases it."""
    if census.total == 0:
        return NO_NODES
    reasons: Counter[str] = Counter(census.excluded)
    for candidate in census.candidates:
        node = candidate.node
        hard = [t for t in node.taints if t.effect in ("NoSchedule", "NoExecute")]
        taint = first_untolerated(hard, pod.tolerations)
        if taint is not None:
            reasons[f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"] += 1
            continue
        if not pod_accepts(pod, node.labels):
            reasons[AFFINITY] += 1
            continue
        short = [r for r, v in pod.requests.items() if v > candidate.free.get(r, 0)]
        for resource in short:
            reasons["Too many pods" if resource == "pods" else f"Insufficient {resource}"] += 1
        if not short:
            reasons[OTHER] += 1
    parts = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{census.total} nodes are available: {', '.join(parts)}."
