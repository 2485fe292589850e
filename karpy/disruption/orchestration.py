"""`DisruptionQueue`: carry out a disruption decision, step by step, from what the API
says (Karpenter's orchestration queue, without the queue in memory).

A decision (`karpy.disruption.controller`) marks each NodeClaim it disrupts with the
``DisruptionReason`` condition (reason Empty, Underutilized, Drifted, Unhealthy) and the
``disruption.karpy.dev/replacements`` annotation (the names of the NodeClaims it creates
to replace them, possibly none), then creates those replacements. From there this
reconciler takes each marked NodeClaim through:

1. **wait for the replacements to be seen**, then taint the node
   ``karpenter.sh/disrupted:NoSchedule`` (tainting sooner would have the provisioner
   launch capacity for its pods a second time);
2. **wait for every replacement to be initialized** (Event ``DisruptionWaitingReadiness``);
3. **delete the NodeClaim** (Event ``DisruptionTerminating``): termination drains it
   through the Eviction API, respecting PodDisruptionBudgets, and removes the instance.
   A node repair decision first sets the drain deadline
   (``karpenter.sh/nodeclaim-termination-timestamp``) from its policy's grace period
   (`repair_grace_of`): now, for a forceful repair, which skips the drain.

A NodeClaim a repair decision chose to reboot takes another path
(`karpy.disruption.reboot`): drained, rebooted once, unmarked when its node boots again.

If a replacement is deleted (its launch failed, say) or never appears, or the
replacements are not all initialized within ten minutes, the decision is rolled back:
the taint, the condition and the annotation go, and the node is an ordinary node again
(``karpenter_voluntary_disruption_queue_failures_total``). A taint of a node whose
NodeClaim is neither marked nor deleting is stale (a rollback or restart cut short)
and is removed too. Because every step reads the API's state, a restarted controller
picks each decision up where it stood.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from karpy.apis.core import format_time
from karpy.apis.labels import (
    ANNOTATION_REPAIR_GRACE,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_TERMINATION_TIMESTAMP,
    LABEL_CAPACITY_TYPE,
    LABEL_NODEPOOL,
    TAINT_DISRUPTED,
)
from karpy.disruption.candidates import is_marked
from karpy.disruption.events import node_and_claim_events
from karpy.disruption.reboot import REBOOT_MARKS, RebootStep, is_reboot
from karpy.disruption.unhealthy import repair_grace
from karpy.durations import parse_duration, to_timedelta
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import NODECLAIMS, NODES
from karpy.lifecycle.conditions import DISRUPTION_REASON, INITIALIZED, is_true, patch_status
from karpy.lifecycle.termination.pods import DISRUPTED_TAINT
from karpy.log import get_logger, obj_ref
from karpy.observability.labels import snake_case
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import is_node
from karpy.state.keys import NodeClaimName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.lifecycle.termination.eviction import Evictor
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import NodeInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "ANNOTATION_REPLACEMENTS",
    "DisruptionQueue",
    "replacements_of",
]

log = get_logger("disruption")

SEEN_GRACE: Final = timedelta(seconds=30)  # for a created replacement to reach the informer
SEEN_GRACE_S: Final = SEEN_GRACE.total_seconds()
TIMEOUT: Final = timedelta(minutes=10)  # Karpenter's floor for a command's wait
POLL: Final = 5.0  # seconds between looks while replacements initialize
# The reasons consolidation (emptiness, single- and multi-node) disrupts for.
CONSOLIDATION_REASONS: Final = frozenset({"Underutilized", "Empty"})


def replacements_of(claim: NodeClaim) -> tuple[str, ...]:
    return claim.awaited_replacements


class DisruptionQueue:
    name = "disruption.queue"
    watches = frozenset({kinds.NODECLAIM, kinds.NODE})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        recorder: EventRecorder,
        *,
        clock: Clock,
        metrics: KarpenterMetrics | None = None,
        provider: CloudProvider | None = None,
        evictor: Evictor | None = None,
    ) -> None:
        """``provider`` and ``evictor``: for node repair's reboots (`karpy.disruption.reboot`);
        without them a reboot decision is rolled back."""
        self.state = state
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.metrics = metrics
        self._deleted: dict[str, float] = {}  # NodeClaim -> when this process deleted it
        self._reboot = None
        if provider is not None and evictor is not None:
            self._reboot = RebootStep(client, recorder, provider, evictor, clock=clock,
                                      taint=self._taint, untaint=self._untaint)  # fmt: skip

    # --- which NodeClaims ---------------------------------------------------------------

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClaimName]:
        snapshot = self.state.snapshot()
        if is_node(change):
            claim = snapshot.claim_for_node(change.key)
            return (NodeClaimName(claim.name),) if claim is not None else ()
        new: NodeClaim | None = change.new
        if new is None:  # a replacement that went: the NodeClaims waiting on it
            return map(NodeClaimName, snapshot.claims_awaiting(change.key))
        keys = [NodeClaimName(change.key)]
        if is_true(new, INITIALIZED) or new.metadata.deletion_timestamp is not None:
            keys += map(NodeClaimName, snapshot.claims_awaiting(change.key))
        return keys

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClaimName]:
        return map(NodeClaimName, snapshot.nodeclaims)

    # --- one NodeClaim --------------------------------------------------------------------

    async def reconcile(self, key: NodeClaimName) -> Result:
        snapshot = self.state.snapshot()
        claim = snapshot.nodeclaims.get(key)
        if claim is None or claim.metadata.deletion_timestamp is not None:
            return DONE
        node = snapshot.node_for_claim(key)
        if not is_marked(claim):
            if node is not None and _tainted(node) and node.deletion_timestamp is None:
                await self._untaint(node)
                log.info("removed stale disrupted taint", **obj_ref("Node", node.name))
            return DONE
        condition = claim.status.condition(DISRUPTION_REASON)
        assert condition is not None
        reason = condition.reason
        since = condition.last_transition_time or self.clock.now()
        if is_reboot(claim):
            if self._reboot is None:
                return await self._roll_back(claim, node, reason, "reboots are not available")
            return await self._reboot.step(claim, node, since, snapshot)
        age = self.clock.now() - since
        replacements = replacements_of(claim)
        claims = snapshot.nodeclaims
        gone = [r for r in replacements if r in claims and claims[r].metadata.deletion_timestamp]
        missing = [r for r in replacements if r not in claims]
        if gone:
            return await self._roll_back(claim, node, reason, f"replacement {gone[0]} was deleted")
        if missing and age > SEEN_GRACE:
            return await self._roll_back(claim, node, reason,
                                         f"replacement {missing[0]} does not exist")  # fmt: skip
        if age > TIMEOUT:
            why = "replacements not initialized within 10 minutes"
            return await self._roll_back(claim, node, reason, why)
        if missing:
            return requeue_after(1.0)
        if node is not None and not _tainted(node):
            await self._taint(node)
        waiting = [r for r in replacements if not is_true(claims[r], INITIALIZED)]
        if waiting:
            message = "Waiting on readiness to continue disruption"
            for event in node_and_claim_events(
                None, claims[waiting[0]], "DisruptionWaitingReadiness", message
            ):
                self.recorder.publish(event)
            return requeue_after(POLL)
        return await self._terminate(claim, node, reason)

    async def _terminate(self, claim: NodeClaim, node: NodeInfo | None, reason: str) -> Result:
        now = self.clock.monotonic()
        self._deleted = {k: at for k, at in self._deleted.items() if now - at < SEEN_GRACE_S}
        if claim.name in self._deleted:  # deleted moments ago; the informer is behind
            return DONE
        self._deleted[claim.name] = now
        grace = repair_grace_of(claim)
        try:
            if grace is not None:
                deadline = format_time((self.clock.now() + grace).replace(microsecond=0))
                stamp = {"annotations": {ANNOTATION_TERMINATION_TIMESTAMP: deadline}}
                await self.client.patch(NODECLAIMS, claim.name, {"metadata": stamp})
            await self.client.delete(NODECLAIMS, claim.name)
        except NotFound:
            return DONE
        log.info("disrupting nodeclaim", **obj_ref("NodeClaim", claim.name), reason=reason)
        for event in node_and_claim_events(node.name if node else None, claim,
                                           "DisruptionTerminating",
                                           f"Disrupting Node: {reason}"):  # fmt: skip
            self.recorder.publish(event)
        if self.metrics is not None:
            snapshot = self.state.snapshot()
            labels = claim.metadata.labels
            pool = labels.get(LABEL_NODEPOOL, "")
            self.metrics.disrupted(
                reason.lower(),
                pool,
                labels.get(LABEL_CAPACITY_TYPE, ""),
                pods=snapshot.reschedulable_count(node.name if node else claim.status.node_name),
                consolidation_policy=_policy_label(snapshot, pool, reason),
                termination_mode="forceful" if grace is not None and not grace else "graceful",
            )
        return DONE

    async def _roll_back(
        self, claim: NodeClaim, node: NodeInfo | None, reason: str, why: str
    ) -> Result:
        conditions = tuple(c for c in claim.status.conditions if c.type != DISRUPTION_REASON)
        try:
            await patch_status(self.client, claim, conditions=conditions)
            marks = (ANNOTATION_REPAIR_GRACE, *REBOOT_MARKS)
            unannotate = {"metadata": {"annotations": dict.fromkeys(marks)}}
            await self.client.patch(NODECLAIMS, claim.name, unannotate)
        except NotFound:
            return DONE
        if node is not None and _tainted(node):
            await self._untaint(node)
        log.warning("disruption abandoned", **obj_ref("NodeClaim", claim.name), reason=reason,
                    why=why)  # fmt: skip
        for event in node_and_claim_events(node.name if node else None, claim,
                                           "DisruptionBlocked",
                                           f"Disruption ({reason}) abandoned: {why}"):  # fmt: skip
            self.recorder.publish(event)
        if self.metrics is not None:
            self.metrics.disruption_queue_failures.labels(
                "replace" if replacements_of(claim) else "delete", reason, ""
            ).inc()
        return DONE

    async def _taint(self, node: NodeInfo) -> None:
        await self._write_taints(node, add=True)

    async def _untaint(self, node: NodeInfo) -> None:
        await self._write_taints(node, add=False)

    async def _write_taints(self, node: NodeInfo, *, add: bool) -> None:
        """Add or remove the disrupted taint, sending the taint list whole with the
        resourceVersion it was read at (taints have no merge key)."""
        for _ in range(3):
            fresh = await self.client.try_get(NODES, node.name)
            if fresh is None:
                return
            meta = fresh.get("metadata") or {}
            taints: list[dict[str, Any]] = list((fresh.get("spec") or {}).get("taints") or ())
            present = any(_is_disrupted(t) for t in taints)
            if present == add:
                return
            taints = [t for t in taints if not _is_disrupted(t)]
            if add:
                taints.append(DISRUPTED_TAINT.to_dict())
            patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
                     "spec": {"taints": taints}}  # fmt: skip
            try:
                await self.client.patch(NODES, node.name, patch)
            except Conflict:
                continue
            except NotFound:
                return
            log.info("tainted node" if add else "untainted node", **obj_ref("Node", node.name),
                     taint={"key": TAINT_DISRUPTED, "effect": "NoSchedule"})  # fmt: skip
            return


def repair_grace_of(claim: NodeClaim) -> timedelta | None:
    """The drain bound node repair decided for ``claim``: its policy's grace period
    (`ANNOTATION_REPAIR_GRACE`) composed with the NodeClaim's own as a minimum
    (`karpy.disruption.unhealthy.repair_grace`); None when repair set none (the
    NodeClaim's own then applies as for any deletion) or the text is no duration."""
    text = claim.metadata.annotations.get(ANNOTATION_REPAIR_GRACE)
    if text is None:
        return None
    try:
        policy = to_timedelta(parse_duration(text))
    except ValueError:
        log.warning("ignoring unreadable repair grace period", **obj_ref("NodeClaim", claim.name),
                    value=text)  # fmt: skip
        return None
    return repair_grace(policy, claim.spec.termination_grace_period)


def _is_disrupted(taint: dict[str, Any]) -> bool:
    return taint.get("key") == TAINT_DISRUPTED and taint.get("effect") == "NoSchedule"


def _tainted(node: NodeInfo) -> bool:
    return any(t.matches(DISRUPTED_TAINT) for t in node.spec_taints)


def _policy_label(snapshot: StateSnapshot, pool: str, reason: str) -> str:
    """The pool's consolidation policy in snake case, for consolidation's reasons only
    (drift is no consolidation): the metrics' ``consolidation_policy`` label."""
    nodepool = snapshot.nodepools.get(pool)
    if nodepool is None or reason not in CONSOLIDATION_REASONS:
        return ""
    policy = nodepool.spec.disruption.consolidation_policy
    return snake_case(policy)
