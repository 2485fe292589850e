"""Carrying out node repair's reboot (Karpenter 1.15's ``RebootNode`` action, gate
``RebootForRepair`` on AWS): the step `karpy.disruption.orchestration.DisruptionQueue`
takes for a NodeClaim a repair decision marked for a reboot (annotation
``disruption.karpy.dev/repair-reboot``) instead of waiting for replacements.

1. **Drain.** The node is tainted ``karpenter.sh/disrupted:NoSchedule`` and its pods,
   DaemonSet pods aside (they come back with the node), are drained as termination drains
   them (`karpy.lifecycle.termination.drain`), bounded by the policy's grace period
   (``karpenter.sh/reboot-termination-grace-period``) composed with the NodeClaim's as a
   minimum (`karpy.disruption.unhealthy.repair_grace`), counted from the decision.
2. **Reboot, once.** The NodeClaim is annotated with the node's current
   ``status.nodeInfo.bootID`` (``karpenter.sh/reboot-pre-boot-id``) and the time
   (``disruption.karpy.dev/rebooted-at``) *before* `CloudProvider.reboot` is called: a
   controller restarted at any point sees the annotation and waits instead of rebooting a
   second time.
3. **Done** when the Node reports another ``bootID``: the taint, the mark and the reboot's
   annotations go, and the node is schedulable again (``rebooted-at`` stays). Also done,
   with a warning, when no new ``bootID`` shows within `REBOOT_TIMEOUT`: the reboot may
   not have happened, and repair replaces the node if it stays unhealthy.

A node is rebooted at most once: once ``rebooted-at`` is set, a reboot policy that still
holds a toleration after it replaces the node instead (`karpy.disruption.methods.repair`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Final

from karpy.apis.core import format_time, parse_time
from karpy.apis.labels import (
    ANNOTATION_REBOOT_GRACE,
    ANNOTATION_REBOOT_PRE_BOOT_ID,
    ANNOTATION_REBOOTED_AT,
    ANNOTATION_REPAIR_REBOOT,
    ANNOTATION_REPLACEMENTS,
)
from karpy.cloud.errors import NodeClaimNotFound
from karpy.disruption.events import node_and_claim_events
from karpy.disruption.unhealthy import repair_grace
from karpy.durations import parse_duration, to_timedelta
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle.conditions import DISRUPTION_REASON, patch_status
from karpy.lifecycle.termination.drain import drain
from karpy.log import describe_error, get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from datetime import datetime

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.lifecycle.termination.eviction import Evictor
    from karpy.state.records import NodeInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["REBOOT_TIMEOUT", "RebootStep", "is_reboot", "rebooted_at"]

log = get_logger("disruption")

REBOOT_TIMEOUT: Final = timedelta(minutes=10)  # for a new bootID after the reboot was asked
POLL: Final = 5.0  # seconds between looks while draining or rebooting
# What a finished (or abandoned) reboot takes off the NodeClaim; rebooted-at stays.
REBOOT_MARKS: Final = (ANNOTATION_REPLACEMENTS, ANNOTATION_REPAIR_REBOOT,
                       ANNOTATION_REBOOT_GRACE, ANNOTATION_REBOOT_PRE_BOOT_ID)  # fmt: skip


def is_reboot(claim: NodeClaim) -> bool:
    """Did a repair decision choose to reboot this NodeClaim's node?"""
    return claim.metadata.annotations.get(ANNOTATION_REPAIR_REBOOT) == "true"


def rebooted_at(claim: NodeClaim) -> datetime | None:
    """When node repair asked for this NodeClaim's reboot, if it ever did."""
    return parse_time(claim.metadata.annotations.get(ANNOTATION_REBOOTED_AT))


def _grace(claim: NodeClaim) -> timedelta | None:
    text = claim.metadata.annotations.get(ANNOTATION_REBOOT_GRACE)
    policy = None
    if text is not None:
        try:
            policy = to_timedelta(parse_duration(text))
        except ValueError:
            log.warning("ignoring unreadable reboot grace period",
                        **obj_ref("NodeClaim", claim.name), value=text)  # fmt: skip
    return repair_grace(policy, claim.spec.termination_grace_period)


class RebootStep:
    """One look at a NodeClaim marked for a reboot (see the module docstring)."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        provider: CloudProvider,
        evictor: Evictor,
        *,
        clock: Clock,
        taint: Callable[[NodeInfo], Awaitable[None]],
        untaint: Callable[[NodeInfo], Awaitable[None]],
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.provider = provider
        self.evictor = evictor
        self.clock = clock
        self.taint = taint
        self.untaint = untaint

    async def step(
        self, claim: NodeClaim, node: NodeInfo | None, since: datetime, snapshot: StateSnapshot
    ) -> Result:
        """``since``: when the decision marked it."""
        now = self.clock.now()
        if node is None:
            return await self._finish(claim, node, "its node is gone", warn=True)
        pre_boot_id = claim.metadata.annotations.get(ANNOTATION_REBOOT_PRE_BOOT_ID)
        if pre_boot_id is not None:
            if node.boot_id and node.boot_id != pre_boot_id:
                return await self._finish(claim, node, "the node booted again", warn=False)
            asked = rebooted_at(claim) or since
            if now - asked > REBOOT_TIMEOUT:
                why = "no new boot within 10 minutes of the reboot"
                return await self._finish(claim, node, why, warn=True)
            return requeue_after(POLL)
        await self.taint(node)
        grace = _grace(claim)
        deadline = since + grace if grace is not None else None
        pods = [p for p in snapshot.pods_on(node.name) if not p.pod.is_daemonset_pod]
        status = await drain(pods, deadline=deadline, now=now, reason="unhealthy",
                             evictor=self.evictor, recorder=self.recorder)  # fmt: skip
        if not status.drained:
            for event in node_and_claim_events(node.name, claim, "FailedDraining",
                                               f"Failed to drain node for its reboot, "
                                               f"{status.message()}", type_="Warning"):  # fmt: skip
                self.recorder.publish(event)
            return requeue_after(POLL)
        return await self._reboot(claim, node, now)

    async def _reboot(self, claim: NodeClaim, node: NodeInfo, now: datetime) -> Result:
        """Write down the boot it leaves, then ask for the reboot."""
        marks = {
            ANNOTATION_REBOOT_PRE_BOOT_ID: node.boot_id,
            ANNOTATION_REBOOTED_AT: format_time(now),
        }
        stamp = {"metadata": {"resourceVersion": claim.metadata.resource_version,
                              "annotations": marks}}  # fmt: skip
        try:
            await self.client.patch(NODECLAIMS, claim.name, stamp)
        except NotFound:
            return DONE
        except Conflict:  # changed since the snapshot: look again
            return requeue_after(1.0)
        try:
            await self.provider.reboot(claim)
        except NodeClaimNotFound:
            return await self._finish(claim, node, "its instance is gone", warn=True)
        except Exception as exc:  # any failure: waited out (REBOOT_TIMEOUT), never retried
            log.error("could not reboot node", **obj_ref("Node", node.name),
                      **obj_ref("NodeClaim", claim.name), error=describe_error(exc))  # fmt: skip
            return requeue_after(POLL)
        log.info("rebooting node", **obj_ref("Node", node.name),
                 **obj_ref("NodeClaim", claim.name), bootID=node.boot_id)  # fmt: skip
        for event in node_and_claim_events(node.name, claim, "DisruptionRebooting",
                                           "Rebooting Node: Unhealthy"):  # fmt: skip
            self.recorder.publish(event)
        return requeue_after(POLL)

    async def _finish(
        self, claim: NodeClaim, node: NodeInfo | None, why: str, *, warn: bool
    ) -> Result:
        """The reboot is over (or cannot happen): unmark the NodeClaim and untaint."""
        conditions = tuple(c for c in claim.status.conditions if c.type != DISRUPTION_REASON)
        try:
            await patch_status(self.client, claim, conditions=conditions)
            unmark = {"metadata": {"annotations": dict.fromkeys(REBOOT_MARKS)}}
            await self.client.patch(NODECLAIMS, claim.name, unmark)
        except NotFound:
            return DONE
        if node is not None:
            await self.untaint(node)
        name = node.name if node is not None else None
        if warn:
            log.warning("node repair reboot ended", **obj_ref("NodeClaim", claim.name), why=why)
            message = f"Reboot for repair did not complete: {why}"
            reason, type_ = "DisruptionBlocked", "Warning"
        else:
            log.info("node repair reboot done", **obj_ref("NodeClaim", claim.name))
            message, reason, type_ = "Rebooted Node: Unhealthy", "DisruptionRebooted", "Normal"
        for event in node_and_claim_events(name, claim, reason, message, type_=type_):
            self.recorder.publish(event)
        return DONE
