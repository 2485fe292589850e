"""Finalization: what happens after a NodeClaim is deleted, before it is gone.

Its ``karpenter.sh/termination`` finalizer holds it while, in order (Karpenter's):

1. if it has a ``terminationGracePeriod``, the deadline (deletion time + that period) is
   written as the ``karpenter.sh/nodeclaim-termination-timestamp`` annotation, with a
   ``TerminationGracePeriodExpiring`` Event: the drain force-deletes pods by then;
2. if it registered, its Node is deleted, which starts the node termination controller
   (taint, drain, instance termination, the Node's own finalizer), and finalization waits
   until the Node is gone. A NodeClaim that never registered leaves its Node alone;
3. its instance is terminated (`CloudProvider.delete`, ``InstanceTerminating=True``),
   checked every five seconds until the provider no longer finds it;
4. the finalizer is removed, and the API server deletes the NodeClaim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.conditions import ConditionUpdate
from karpy.apis.core import format_time
from karpy.apis.labels import (
    ANNOTATION_TERMINATION_TIMESTAMP,
    FINALIZER_TERMINATION,
    LABEL_CAPACITY_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)
from karpy.cloud.errors import NodeClaimNotFound
from karpy.kube.errors import NotFound
from karpy.kube.events import Event
from karpy.kube.resources import NODES
from karpy.lifecycle.conditions import INSTANCE_TERMINATING, REGISTERED, is_true
from karpy.lifecycle.launch import nodeclaim_ref
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.lifecycle.context import Lifecycle

__all__ = ["finalize"]

log = get_logger("nodeclaim.lifecycle")

INSTANCE_POLL: Final = 5.0  # seconds between looks at a terminating instance


async def finalize(ctx: Lifecycle, claim: NodeClaim) -> Result:
    if FINALIZER_TERMINATION not in claim.metadata.finalizers:
        return DONE
    claim = await _annotate_deadline(ctx, claim)
    if is_true(claim, REGISTERED):
        snapshot = ctx.state.snapshot()
        node = snapshot.node_for_claim(claim.name)
        if node is None and claim.status.provider_id:
            node = snapshot.node_by_provider(claim.status.provider_id)
            if node is None and snapshot.unreadable_provider(claim.status.provider_id):
                # Its Node may exist, unreadable: terminating now would skip the drain.
                log.warning("not terminating: a node for its instance may be unreadable",
                            **obj_ref("NodeClaim", claim.name))  # fmt: skip
                return requeue_after(INSTANCE_POLL)
        if node is not None:
            if node.deletion_timestamp is None:
                try:
                    await ctx.client.delete(NODES, node.name)
                except NotFound:
                    return requeue_after(0)
                log.info("deleting node", **obj_ref("NodeClaim", claim.name),
                         **obj_ref("Node", node.name))  # fmt: skip
            return DONE  # the Node's deletion (an event) brings us back
    if claim.status.provider_id:
        try:
            await ctx.provider.delete(claim)
        except NodeClaimNotFound:
            _observe_instance_gone(ctx, claim)
        else:
            await ctx.set_conditions(claim, ConditionUpdate.true(INSTANCE_TERMINATING))
            return requeue_after(INSTANCE_POLL)
    await ctx.remove_finalizer(claim)
    _observe_deleted(ctx, claim)
    return DONE


async def _annotate_deadline(ctx: Lifecycle, claim: NodeClaim) -> NodeClaim:
    grace = claim.spec.termination_grace_period
    deleted = claim.metadata.deletion_timestamp
    if grace is None or deleted is None:
        return claim
    if ANNOTATION_TERMINATION_TIMESTAMP in claim.metadata.annotations:
        return claim
    deadline = format_time((deleted + grace).replace(microsecond=0))
    claim = await ctx.patch_metadata(
        claim, {"annotations": {ANNOTATION_TERMINATION_TIMESTAMP: deadline}}
    )
    log.info("annotated nodeclaim", **obj_ref("NodeClaim", claim.name),
             terminationTimestamp=deadline)  # fmt: skip
    ctx.recorder.publish(Event(nodeclaim_ref(claim), "Warning", "TerminationGracePeriodExpiring",
                               f"All pods will be deleted by {deadline}"))  # fmt: skip
    return claim


def _observe_instance_gone(ctx: Lifecycle, claim: NodeClaim) -> None:
    condition = claim.status.condition(INSTANCE_TERMINATING)
    if ctx.metrics is None or condition is None or condition.last_transition_time is None:
        return
    seconds = (ctx.clock.now() - condition.last_transition_time).total_seconds()
    pool = claim.metadata.labels.get(LABEL_NODEPOOL, "")
    ctx.metrics.instance_termination_duration.labels(pool).observe(max(seconds, 0.0))


def _observe_deleted(ctx: Lifecycle, claim: NodeClaim) -> None:
    labels = claim.metadata.labels
    log.info("deleted nodeclaim", **obj_ref("NodeClaim", claim.name),
             providerID=claim.status.provider_id or None)  # fmt: skip
    if ctx.metrics is None:
        return
    pool = labels.get(LABEL_NODEPOOL, "")
    ctx.metrics.nodeclaims_terminated.labels(
        pool, labels.get(LABEL_CAPACITY_TYPE, ""), labels.get(LABEL_ZONE, "")
    ).inc()
    deleted = claim.metadata.deletion_timestamp
    if deleted is not None:
        seconds = (ctx.clock.now() - deleted).total_seconds()
        ctx.metrics.nodeclaims_termination_duration.labels(pool).observe(max(seconds, 0.0))
