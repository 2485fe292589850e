"""Which nodes disruption may act on now, and for each node that it may not, why.

A *candidate* is a managed node that could be removed right now if a method finds it
worth it (Karpenter's ``NewCandidate``). A node is not a candidate, and `Blocked` says
why in the words ``karpy explain node`` and the ``DisruptionBlocked`` Event use, when:

* it has no NodeClaim, no Node, or is not initialized yet;
* it is deleting, or already tainted ``karpenter.sh/disrupted`` (being disrupted);
* a provisioning round nominated it for pending pods (they are on their way to it), or
  an unbound pod's ``nominatedNodeName`` names it;
* it carries ``karpenter.sh/do-not-disrupt: "true"`` (Node or NodeClaim);
* its NodePool is gone;
* one of its pods is protected by an active ``karpenter.sh/do-not-disrupt`` annotation
  ("true", or a duration not yet run out since the pod started);
* evicting one of its pods would violate a PodDisruptionBudget (one with no disruption
  allowed right now), or a pod is covered by more than one budget (the Eviction API
  refuses those).

The last two do not block *eventual* methods (drift) when the NodeClaim has a
``terminationGracePeriod``: its drain ends by the deadline whatever the pods say
(`Blocked.eventual` carries the candidate they may use).

Each candidate carries its *reschedulable* pods (those that need a new home: active, not
DaemonSet or mirror pods; a candidate without any is *empty*), its price (the offering
of its instance type, zone and capacity type), and two costs of disrupting it, each
Karpenter's and each for its own use:

* ``disruption_cost``, the eviction cost of all its pods scaled by how much of its
  lifetime is left: the order in which consolidation tries candidates, cheapest to
  disrupt first (a node about to expire costs little to take now);
* ``reschedule_cost``, `PER_NODE_DISRUPTION_COST` plus the eviction cost of each pod that
  must move, counted from 0 when negative and never scaled by lifetime: what the
  ``Balanced`` policy weighs a move's savings against (`karpy.disruption.balanced`). The
  lifetime scaling would make a node near expiry look free to disrupt, and the pool's
  other nodes, priced the same way, would not be comparable.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import (
    ANNOTATION_DO_NOT_DISRUPT,
    LABEL_CAPACITY_TYPE,
    LABEL_INITIALIZED,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
    TAINT_DISRUPTED,
)
from karpy.base.gcpause import gc_paused
from karpy.lifecycle.conditions import DISRUPTION_REASON, INITIALIZED, is_true
from karpy.lifecycle.termination.pods import do_not_disrupt, tolerates_disrupted_taint

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
    from datetime import datetime

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodepool import NodePool
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.pods import Pod
    from karpy.state.records import BudgetInfo, NodeInfo, PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "PER_NODE_DISRUPTION_COST",
    "REPAIR_IGNORES",
    "Blocked",
    "BlockedBy",
    "Candidate",
    "eviction_cost",
    "find_candidates",
    "is_disrupting",
    "is_marked",
    "lifetime_remaining",
    "node_price",
    "reschedule_cost",
]

# What removing a node costs before any of its pods: cordon, drain, a replacement's
# latency (Karpenter's PerNodeBaseDisruptionCost, a placeholder it may refine).
PER_NODE_DISRUPTION_COST: Final = 1.0


@attrs.frozen(slots=True)
class Candidate:
    name: str  # the Node's
    claim: NodeClaim
    node: NodeInfo
    pool: NodePool
    instance_type: str
    capacity_type: str
    zone: str
    price: float | None  # per hour; None when the instance type is not in the catalog
    pods: tuple[PodInfo, ...]
    reschedulable: tuple[Pod, ...]
    disruption_cost: float  # lifetime-scaled: the order consolidation tries candidates in
    reschedule_cost: float  # unscaled, from 1: what Balanced weighs savings against
    # The last provisioning round kept CapacityBuffer room here (`karpy.rounds.buffers`):
    # then the node is not empty, whatever its pods.
    holds_buffer: bool = False

    @property
    def empty(self) -> bool:
        return not self.reschedulable and not self.holds_buffer

    @property
    def nodepool(self) -> str:
        return self.pool.name


class BlockedBy(enum.StrEnum):
    """What keeps a node from disruption, in a word: the ``reason`` label of
    ``karpy_disruption_blocked_nodes`` (the sentence is `Blocked.reason`)."""

    NOT_REGISTERED = "NotRegistered"
    NOT_INITIALIZED = "NotInitialized"
    DELETING = "Deleting"
    NOMINATED = "Nominated"
    DO_NOT_DISRUPT_NODE = "DoNotDisruptNode"
    NODEPOOL_NOT_FOUND = "NodePoolNotFound"
    DO_NOT_DISRUPT_POD = "DoNotDisruptPod"
    PDB = "PodDisruptionBudget"
    MULTIPLE_PDBS = "MultiplePodDisruptionBudgets"

    @property
    def passing(self) -> bool:
        """A state every node goes through (launch, deletion): not worth an Event."""
        return self in (BlockedBy.NOT_REGISTERED, BlockedBy.NOT_INITIALIZED, BlockedBy.DELETING)


@attrs.frozen(slots=True)
class Blocked:
    """A node disruption may not touch now, and why."""

    name: str
    claim: str | None
    reason: str
    pod_level: bool  # blocked by a pod (do-not-disrupt or a PDB), not the node
    by: BlockedBy
    nodepool: str  # as the NodeClaim names it ("" when it names none)
    # For eventual methods (drift), a node blocked only by its pods is still a candidate
    # when its NodeClaim has a terminationGracePeriod: this one.
    eventual: Candidate | None = None
    # For node repair, an unhealthy node blocked by nothing repair heeds (`REPAIR_IGNORES`)
    # is still a candidate: this one.
    repairable: Candidate | None = None


# What keeps a node from voluntary disruption but not from node repair (Karpenter 1.15,
# RFC core#3192): do-not-disrupt protects against discretionary disruption, not against
# fixing a broken node (repair's veto is karpenter.sh/do-not-repair); PodDisruptionBudgets
# are honoured by the drain, bounded by the repair's grace period; pods nominated to a
# broken node are better off elsewhere.
REPAIR_IGNORES: Final = frozenset({
    BlockedBy.NOMINATED, BlockedBy.DO_NOT_DISRUPT_NODE, BlockedBy.DO_NOT_DISRUPT_POD,
    BlockedBy.PDB, BlockedBy.MULTIPLE_PDBS,
})  # fmt: skip


def is_marked(claim: NodeClaim) -> bool:
    """Has a decision chosen this NodeClaim (and not been rolled back)? Its node is
    tainted only once its replacements exist (`karpy.disruption.orchestration`); until
    then the mark alone keeps the next pass from choosing it again."""
    return is_true(claim, DISRUPTION_REASON) and claim.metadata.deletion_timestamp is None


def is_disrupting(node: NodeInfo) -> bool:
    """Deleting or tainted for disruption: it counts against budgets, and is no
    candidate."""
    return node.deletion_timestamp is not None or any(
        t.key == TAINT_DISRUPTED and t.effect == "NoSchedule" for t in node.spec_taints
    )


def find_candidates(
    snapshot: StateSnapshot,
    *,
    now: datetime,
    nominated: Collection[str],
    types_by_name: Mapping[str, InstanceType],
    deletion_cost_managed: bool = False,
    unhealthy: Callable[[NodeInfo], bool] | None = None,
) -> tuple[list[Candidate], list[Blocked]]:
    """The candidates among managed nodes, and the nodes blocked with their reasons.
    ``nominated`` holds NodeClaim and Node names that pending pods were nominated to;
    every node an unbound pod's ``nominatedNodeName`` names counts too (a preemption, a
    binding in progress, karpy's own hint), as KEP-5278 asks of anything scaling down.
    A node blocked only by its pods whose NodeClaim has a terminationGracePeriod carries
    the candidate eventual methods (drift) may still use (`Blocked.eventual`); with node
    repair on, a node ``unhealthy`` says is, blocked only by what repair ignores, the
    candidate repair may use (`Blocked.repairable`).
    ``deletion_cost_managed`` is the PodDeletionCostManagement gate (`eviction_cost`)."""
    if snapshot.named:
        nominated = {*nominated, *(i.pod.nominated_node_name for i in snapshot.named.values())}
    with gc_paused():
        return _find(snapshot, now, nominated, types_by_name, deletion_cost_managed, unhealthy)


def _find(  # noqa: PLR0917 - find_candidates' arguments, passed on
    snapshot: StateSnapshot,
    now: datetime,
    nominated: Collection[str],
    types_by_name: Mapping[str, InstanceType],
    managed: bool,
    unhealthy: Callable[[NodeInfo], bool] | None = None,
) -> tuple[list[Candidate], list[Blocked]]:
    budgets = list(snapshot.budgets.values())
    candidates: list[Candidate] = []
    blocked: list[Blocked] = []
    for claim in snapshot.nodeclaims.values():
        node = snapshot.node_for_claim(claim.name)
        verdict = _judge(snapshot, claim, node, now, nominated, budgets)
        if isinstance(verdict, Blocked):
            if verdict.pod_level and claim.spec.termination_grace_period is not None:
                assert node is not None
                pool, pods, reschedulable = _admitted(snapshot, claim, node)
                eventual = _candidate(
                    claim, node, pool, pods, reschedulable, now, types_by_name, managed
                )
                verdict = attrs.evolve(verdict, eventual=eventual)
            if (
                unhealthy is not None
                and node is not None
                and verdict.by in REPAIR_IGNORES
                and _pool_name(claim, node) in snapshot.nodepools
                and unhealthy(node)
            ):
                repairable = verdict.eventual or _candidate(
                    claim, node, *_admitted(snapshot, claim, node), now, types_by_name, managed
                )
                verdict = attrs.evolve(verdict, repairable=repairable)
            blocked.append(verdict)
            continue
        assert node is not None
        candidates.append(_candidate(claim, node, *verdict, now, types_by_name, managed))
    return candidates, blocked


def _candidate(  # noqa: PLR0917 - the parts of one candidate
    claim: NodeClaim,
    node: NodeInfo,
    pool: NodePool,
    pods: tuple[PodInfo, ...],
    reschedulable: tuple[Pod, ...],
    now: datetime,
    types_by_name: Mapping[str, InstanceType],
    managed: bool,
) -> Candidate:
    labels = node.node.labels
    instance_type = labels.get(LABEL_INSTANCE_TYPE, "")
    capacity_type = labels.get(LABEL_CAPACITY_TYPE, "")
    zone = labels.get(LABEL_ZONE, "")
    return Candidate(
        name=node.name,
        claim=claim,
        node=node,
        pool=pool,
        instance_type=instance_type,
        capacity_type=capacity_type,
        zone=zone,
        price=node_price(types_by_name.get(instance_type), zone, capacity_type),
        pods=pods,
        reschedulable=reschedulable,
        disruption_cost=sum(eviction_cost(p, deletion_cost_managed=managed) for p in pods)
        * lifetime_remaining(claim, now),
        reschedule_cost=reschedule_cost(
            (p for p in pods if p.pod.is_reschedulable), deletion_cost_managed=managed
        ),
    )


_Verdict = tuple["NodePool", tuple["PodInfo", ...], tuple["Pod", ...]] | Blocked


def _judge(  # noqa: PLR0917 - one check per rule, in Karpenter's order
    snapshot: StateSnapshot,
    claim: NodeClaim,
    node: NodeInfo | None,
    now: datetime,
    nominated: Collection[str],
    budgets: Sequence[BudgetInfo],
) -> _Verdict:
    name = node.name if node is not None else claim.name
    pool_name = claim.metadata.labels.get(LABEL_NODEPOOL, "")

    def no(by: BlockedBy, reason: str, pod_level: bool = False) -> Blocked:
        return Blocked(name, claim.name, reason, pod_level, by, pool_name)

    if node is None:
        return no(BlockedBy.NOT_REGISTERED, "the NodeClaim has no Node yet")
    if not is_true(claim, INITIALIZED) or node.node.labels.get(LABEL_INITIALIZED) != "true":
        return no(BlockedBy.NOT_INITIALIZED, "the node is not initialized")
    if claim.metadata.deletion_timestamp is not None or is_disrupting(node) or is_marked(claim):
        return no(BlockedBy.DELETING, "the node is deleting or already being disrupted")
    if claim.name in nominated or node.name in nominated:
        return no(BlockedBy.NOMINATED, "the node is nominated for pending pods")
    if "true" in (node.do_not_disrupt, claim.metadata.annotations.get(ANNOTATION_DO_NOT_DISRUPT)):
        why = 'disruption is blocked by the "karpenter.sh/do-not-disrupt" annotation'
        return no(BlockedBy.DO_NOT_DISRUPT_NODE, why)
    pool_name = _pool_name(claim, node)
    if pool_name not in snapshot.nodepools:
        return no(BlockedBy.NODEPOOL_NOT_FOUND, f'nodepool "{pool_name}" not found')
    admitted = _admitted(snapshot, claim, node)
    problem = _pod_block(admitted[1], budgets, now)
    if problem is not None:
        by, reason = problem
        return no(by, reason, pod_level=True)
    return admitted


def _pool_name(claim: NodeClaim, node: NodeInfo) -> str:
    return node.node.labels.get(LABEL_NODEPOOL) or claim.metadata.labels.get(LABEL_NODEPOOL, "")


def _admitted(
    snapshot: StateSnapshot, claim: NodeClaim, node: NodeInfo
) -> tuple[NodePool, tuple[PodInfo, ...], tuple[Pod, ...]]:
    pool = snapshot.nodepools[_pool_name(claim, node)]
    pods = tuple(snapshot.pods_on(node.name))
    reschedulable = tuple(p.pod for p in pods if p.pod.is_reschedulable)
    return pool, pods, reschedulable


def _pod_block(
    pods: Sequence[PodInfo], budgets: Sequence[BudgetInfo], now: datetime
) -> tuple[BlockedBy, str] | None:
    """Why evicting ``pods`` is not possible now, if it is not."""
    for pod in pods:
        if pod.do_not_disrupt is not None and pod.pod.is_active and do_not_disrupt(pod, now).active:
            return (BlockedBy.DO_NOT_DISRUPT_POD,
                    f'pod {pod.key} has the "karpenter.sh/do-not-disrupt" annotation')  # fmt: skip
    if not budgets:
        return None
    for pod in pods:
        if not _evictable(pod):
            continue
        covering = [
            b
            for b in budgets
            if b.budget.namespace == pod.pod.namespace and b.budget.selector.matches(pod.pod.labels)
        ]
        if len(covering) > 1:
            names = ", ".join(sorted(f"{b.budget.namespace}/{b.budget.name}" for b in covering))
            why = f"pod {pod.key} is covered by more than one PodDisruptionBudget ({names})"
            return BlockedBy.MULTIPLE_PDBS, why
        if covering and covering[0].disruptions_allowed <= 0:
            budget = covering[0].budget
            return BlockedBy.PDB, (
                f"PodDisruptionBudget {budget.namespace}/{budget.name} allows no disruption "
                f"of pod {pod.key} now"
            )
    return None


def _evictable(pod: PodInfo) -> bool:
    """Would a drain evict it (Karpenter's IsEvictable, less do-not-disrupt)?"""
    return pod.pod.is_active and not tolerates_disrupted_taint(pod) and not pod.pod.is_static_pod


def eviction_cost(pod: PodInfo, *, deletion_cost_managed: bool = False) -> float:
    """Karpenter's per-pod cost: 1 plus the user's cost and the priority, scaled, in
    [-10, 10]. The user's cost is ``karpenter.sh/disruption-cost`` when the pod has it;
    otherwise ``controller.kubernetes.io/pod-deletion-cost``, unless karpy writes that
    annotation itself (``deletion_cost_managed``, the PodDeletionCostManagement gate):
    then it is a scale-down hint derived from this very cost, not the user's word, and
    reading it back would make the ranking feed on itself."""
    if pod.disruption_cost is not None:
        steering = pod.disruption_cost
    else:
        steering = 0 if deletion_cost_managed else pod.deletion_cost
    cost = 1.0 + steering / 2**27 + pod.priority / 2**25
    return max(-10.0, min(10.0, cost))


def reschedule_cost(pods: Iterable[PodInfo], *, deletion_cost_managed: bool = False) -> float:
    """What evicting ``pods`` and removing their node costs: `PER_NODE_DISRUPTION_COST`
    plus each pod's `eviction_cost`, a negative one counting as 0 (a pod that asks to go
    first makes the move no cheaper than an empty node)."""
    return PER_NODE_DISRUPTION_COST + sum(
        max(0.0, eviction_cost(p, deletion_cost_managed=deletion_cost_managed)) for p in pods
    )


def lifetime_remaining(claim: NodeClaim, now: datetime) -> float:
    """The share of ``expireAfter`` the node has left (1 when it never expires): a node
    about to expire is cheaper to disrupt."""
    expire = claim.spec.expire_after
    created = claim.metadata.creation_timestamp
    if expire is None or created is None or expire.total_seconds() <= 0:
        return 1.0
    left = 1.0 - (now - created).total_seconds() / expire.total_seconds()
    return max(0.0, min(1.0, left))


def node_price(instance_type: InstanceType | None, zone: str, capacity_type: str) -> float | None:
    """Per hour: the offering of ``instance_type`` in ``zone`` with ``capacity_type`` (the
    cheapest of that capacity type when the zone has none); None when it is unknown."""
    if instance_type is None:
        return None
    exact = [o.price for o in instance_type.offerings
             if o.zone == zone and o.capacity_type == capacity_type]  # fmt: skip
    if exact:
        return min(exact)
    same_type = [o.price for o in instance_type.offerings if o.capacity_type == capacity_type]
    return min(same_type) if same_type else None
