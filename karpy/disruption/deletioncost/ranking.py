"""Which pod-deletion-cost each ReplicaSet pod on a managed node should carry.

The ReplicaSet controller, scaling down, deletes the pods with the lowest
``controller.kubernetes.io/pod-deletion-cost`` first; left alone it spreads deletions
across nodes, so a scale-down rarely empties one. Disruption removes *nodes*, so the
hint worth giving is per node: every pod on a node gets the node's value, and the nodes
consolidation would remove first get the lowest values. A scale-down then empties those
nodes, which emptiness removes without evicting anyone.

Nodes fall into four groups (Karpenter's design, kubernetes-sigs/karpenter#2935 and
#2894), tried in this order:

A. *being disrupted*: deleting or tainted ``karpenter.sh/disrupted``. Its pods are going
   anyway, so they get the floor, -2^31, whatever else is true of the node.
D. *not ours to steer*: the node or one of its pods says ``karpenter.sh/do-not-disrupt``,
   a PodDisruptionBudget blocks a pod, a pod is not owned by a ReplicaSet, Job or
   DaemonSet (kube-system aside), the NodePool never consolidates (``consolidateAfter:
   Never``), or disruption cannot take the node for any other reason (not initialized,
   NodePool gone). Emptying it would gain nothing, so its pods get no value: karpy
   clears the annotation, and the ReplicaSet controller falls back to its own order.
B. *drifted*: it will be replaced anyway, so it is emptied before
C. *normal* candidates.

B and C are ordered as consolidation orders its candidates, by disruption cost (the
eviction costs of their pods, scaled by the lifetime they have left) and then by name,
and take the values -n .. -1 (n = how many are ranked): below the 0 of a pod without the
annotation, so a new pod is never preferred over a ranked one. Only the first
`MAX_RANKED_NODES` are ranked; the rest go to D, which keeps how many pods a change of
rank rewrites bounded.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

from karpy.disruption.candidates import Blocked, BlockedBy, find_candidates
from karpy.disruption.conditions import DRIFTED
from karpy.lifecycle.conditions import is_true

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from datetime import datetime

    from karpy.disruption.candidates import Candidate
    from karpy.state.records import PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "FLOOR",
    "MAX_RANKED_NODES",
    "Group",
    "NodeRank",
    "PodWrite",
    "is_managed_pod",
    "rank_nodes",
    "writes_for",
]

FLOOR: Final = -(2**31)  # math.MinInt32: the lowest value the annotation can hold
MAX_RANKED_NODES: Final = 50  # Karpenter's alpha cap on nodes ranked per cycle

# Owners whose pods do not pin a node: the ReplicaSet controller and the Job controller
# recreate theirs elsewhere, a DaemonSet's pods go with the node.
_MOVABLE_OWNERS: Final = frozenset({"ReplicaSet", "Job", "DaemonSet"})


class Group(enum.StrEnum):
    DISRUPTING = "disrupting"  # A
    DRIFTED = "drifted"  # B
    NORMAL = "normal"  # C
    UNRANKED = "unranked"  # D


@attrs.frozen(slots=True)
class NodeRank:
    """One managed node's group and the value its ReplicaSet pods should carry (None:
    no annotation)."""

    node: str
    group: Group
    cost: int | None


@attrs.frozen(slots=True)
class PodWrite:
    """One pod whose annotation differs from what its node's rank asks for."""

    pod: PodInfo
    node: str
    cost: int | None  # None: remove the annotation


def is_managed_pod(pod: PodInfo) -> bool:
    """A pod whose annotation karpy may write: live and controlled by a ReplicaSet (the
    only controller that reads pod-deletion-cost)."""
    owner = pod.owner
    return pod.pod.is_active and owner is not None and owner.kind == "ReplicaSet"


def rank_nodes(
    snapshot: StateSnapshot, *, now: datetime, max_ranked: int = MAX_RANKED_NODES
) -> list[NodeRank]:
    """Every managed node with a Node, in the order its pods should go (A, B, C, then D,
    which carries no value)."""
    # The gate is on whenever this runs, so candidates cost what consolidation sees then.
    candidates, blocked = find_candidates(
        snapshot, now=now, nominated=(), types_by_name={}, deletion_cost_managed=True
    )
    disrupting = sorted(b.name for b in blocked if _has_node(snapshot, b) and _disrupting(b))
    unranked = [b.name for b in blocked if _has_node(snapshot, b) and not _disrupting(b)]
    steerable = []
    for candidate in candidates:
        if _steerable(candidate):
            steerable.append(candidate)
        else:
            unranked.append(candidate.name)
    steerable.sort(key=lambda c: (not is_true(c.claim, DRIFTED), c.disruption_cost, c.name))
    ranked, overflow = steerable[:max_ranked], steerable[max_ranked:]
    unranked += (c.name for c in overflow)
    ranks = [NodeRank(name, Group.DISRUPTING, FLOOR) for name in disrupting]
    for value, candidate in enumerate(ranked, start=-len(ranked)):
        group = Group.DRIFTED if is_true(candidate.claim, DRIFTED) else Group.NORMAL
        ranks.append(NodeRank(candidate.name, group, value))
    ranks += (NodeRank(name, Group.UNRANKED, None) for name in sorted(unranked))
    return ranks


def writes_for(snapshot: StateSnapshot, ranks: Sequence[NodeRank]) -> Iterator[PodWrite]:
    """The ReplicaSet pods whose annotation is not what their node's rank asks for, in
    rank order (the writes that matter most first)."""
    for rank in ranks:
        wanted = None if rank.cost is None else str(rank.cost)
        for pod in snapshot.pods_on(rank.node):
            if is_managed_pod(pod) and pod.deletion_cost_text != wanted:
                yield PodWrite(pod, rank.node, rank.cost)


def _has_node(snapshot: StateSnapshot, blocked: Blocked) -> bool:
    return blocked.by is not BlockedBy.NOT_REGISTERED and blocked.name in snapshot.nodes


def _disrupting(blocked: Blocked) -> bool:
    return blocked.by is BlockedBy.DELETING


def _steerable(candidate: Candidate) -> bool:
    """Would emptying this candidate help disruption? Not when its NodePool never
    consolidates, nor when a pod on it would stay behind (no controller moves it)."""
    if candidate.pool.spec.disruption.consolidate_after is None:
        return False
    return all(_movable(pod) for pod in candidate.pods if pod.pod.is_active)


def _movable(pod: PodInfo) -> bool:
    if pod.pod.namespace == "kube-system":
        return True
    return pod.owner is not None and pod.owner.kind in _MOVABLE_OWNERS
