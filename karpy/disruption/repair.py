"""`NodeRepair`: replace nodes the cloud provider calls unhealthy (Karpenter's
``node.health``, behind the ``NodeRepair`` feature gate), as Karpenter did before 1.15.
Since 1.15 this controller runs only with ``LEGACY_NODE_REPAIR=true``; otherwise repair is
a budgeted disruption method (`karpy.disruption.methods.repair`). A policy's reason regex
is honoured here too (a policy without one matches any reason, as before); its action,
grace period and priority are not: this controller only ever replaces, forcefully.

Each of the provider's repair policies names a node condition and status (``Ready``
``False`` or ``Unknown``, say) and how long it may hold. A node whose condition has held
that long is unhealthy, and is replaced *forcefully*: its NodeClaim gets the termination
timestamp annotation set to now (the drain deadline has passed, so pods are deleted
rather than evicted: no budget, PDB or do-not-disrupt holds it) and is deleted; the
provisioner schedules its pods elsewhere. No disruption budget applies.

Unless too much is broken at once: when more than 20% of a NodePool's nodes (rounded
up: of three nodes, one may be) are unhealthy, the cause is probably not the nodes (a
network or control-plane outage), and replacing them would only add load; nothing of
that pool is repaired, and a ``NodeRepairBlocked`` Event says why. Counted in
``karpenter_nodeclaims_unhealthy_disrupted_total``.

A blocked node is looked at again as soon as the share can have fallen: when a node of
its pool changes health (a policy condition takes or leaves its status) or joins or
leaves the pool. Karpenter retries blocked nodes on a timer; here the timer
(`BLOCKED_RETRY`) is only the fallback, so a node is repaired the moment its pool is
healthy enough, not minutes later. A kubelet heartbeat changes no health and wakes
nobody.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

from karpy.apis.core import format_time
from karpy.apis.labels import ANNOTATION_TERMINATION_TIMESTAMP, LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.disruption.events import node_and_claim_events
from karpy.kube.errors import NotFound
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import NODECLAIMS
from karpy.log import get_logger, obj_ref
from karpy.observability.labels import snake_case
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.keys import NodeName

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from datetime import datetime

    from karpy.base.clock import Clock
    from karpy.cloud.provider import RepairPolicy
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import NodeInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["UNHEALTHY_SHARE", "NodeRepair", "unhealthy_condition"]

log = get_logger("disruption")

UNHEALTHY_SHARE: Final = 0.2  # more than this share of a pool unhealthy blocks repair
BLOCKED_RETRY: Final = 300.0  # seconds


def unhealthy_condition(
    node: NodeInfo, policies: Sequence[RepairPolicy], now: datetime
) -> tuple[str, float | None]:
    """The condition type that makes ``node`` unhealthy now ("" if none), and else in
    how many seconds one would (None: no policy condition holds)."""
    soonest: float | None = None
    for policy in policies:
        condition = node.condition(policy.condition_type)
        if condition is None or not policy.matches(condition.status, condition.reason):
            continue
        since = condition.last_transition_time or now
        left = (since + policy.toleration - now).total_seconds()
        if left <= 0:
            return policy.condition_type, None
        soonest = left if soonest is None else min(soonest, left)
    return "", soonest


class NodeRepair:
    name = "node.health"
    watches = frozenset({kinds.NODE})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        recorder: EventRecorder,
        policies: Sequence[RepairPolicy],
        *,
        clock: Clock,
        metrics: KarpenterMetrics | None = None,
    ) -> None:
        self.state = state
        self.client = client
        self.recorder = recorder
        self.policies = tuple(policies)
        self.clock = clock
        self.metrics = metrics
        # pool -> its nodes that are unhealthy but held back by the share (reconcile's).
        self._blocked: dict[str, set[NodeName]] = {}

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeName]:
        key = NodeName(change.key)
        keys = {key} if change.new is not None else set()
        node = change.new if change.new is not None else change.old
        if node is not None and self._health_moved(change.old, change.new):
            # A deleted blocked node is among them: its reconcile forgets it.
            keys.update(self._blocked.get(_pool_of(node), ()))
        return keys

    def _health_moved(self, old: NodeInfo | None, new: NodeInfo | None) -> bool:
        """Whether this change can move its pool's unhealthy share: a node joined or
        left (or changed pool), or one of the policies' conditions changed status."""
        if old is None or new is None:
            return True
        if _pool_of(old) != _pool_of(new):
            return True
        return any(
            _status(old, policy.condition_type) != _status(new, policy.condition_type)
            for policy in self.policies
        )

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeName]:
        return map(NodeName, snapshot.nodes)

    async def reconcile(self, key: NodeName) -> Result:
        if not self.policies:
            return DONE
        for blocked in self._blocked.values():
            blocked.discard(key)
        snapshot = self.state.snapshot()
        node = snapshot.nodes.get(key)
        claim = snapshot.claim_for_node(key)
        if node is None or claim is None or node.deletion_timestamp is not None:
            return DONE
        if claim.metadata.deletion_timestamp is not None:
            return DONE
        now = self.clock.now()
        condition, left = unhealthy_condition(node, self.policies, now)
        if not condition:
            return requeue_after(left) if left is not None else DONE
        pool = _pool_of(node)
        members = [n for n in snapshot.nodes.values() if _pool_of(n) == pool]
        unhealthy = sum(1 for n in members if unhealthy_condition(n, self.policies, now)[0])
        # Up to 20% may be unhealthy, rounded up: of three nodes, one may be.
        allowed = math.ceil(len(members) * UNHEALTHY_SHARE)
        if unhealthy > allowed:
            message = (
                f'more than 20% of nodepool "{pool}" is unhealthy ({unhealthy} of '
                f"{len(members)} nodes); not repairing"
            )
            for event in node_and_claim_events(key, claim, "NodeRepairBlocked", message,
                                               type_="Warning"):  # fmt: skip
                self.recorder.publish(event)
            pool_ref = ObjectRef("NodePool", pool, api_version="karpenter.sh/v1")
            self.recorder.publish(Event(pool_ref, "Warning", "NodeRepairBlocked", message))
            log.info("node repair blocked", **obj_ref("Node", key), nodepool=pool,
                     unhealthy=unhealthy, nodes=len(members))  # fmt: skip
            self._blocked.setdefault(pool, set()).add(key)
            return requeue_after(BLOCKED_RETRY)
        annotate = {
            "metadata": {"annotations": {ANNOTATION_TERMINATION_TIMESTAMP: format_time(now)}}
        }
        try:
            await self.client.patch(NODECLAIMS, claim.name, annotate)
            await self.client.delete(NODECLAIMS, claim.name)
        except NotFound:
            return DONE
        log.info("repairing unhealthy node", **obj_ref("Node", key),
                 **obj_ref("NodeClaim", claim.name), condition=condition)  # fmt: skip
        if self.metrics is not None:
            self.metrics.nodeclaims_unhealthy_disrupted.labels(
                snake_case(condition), pool, node.node.labels.get(LABEL_CAPACITY_TYPE, ""),
                claim.status.image_id,
            ).inc()  # fmt: skip
            self.metrics.disrupted(
                "unhealthy",
                pool,
                node.node.labels.get(LABEL_CAPACITY_TYPE, ""),
                pods=snapshot.reschedulable_count(key),
                termination_mode="forceful",
            )
        return DONE


def _pool_of(node: NodeInfo) -> str:
    return node.node.labels.get(LABEL_NODEPOOL, "")


def _status(node: NodeInfo, condition_type: str) -> tuple[str, str] | None:
    """The condition's status and reason (reason-aware policies match the latter)."""
    condition = node.condition(condition_type)
    return None if condition is None else (condition.status, condition.reason)
