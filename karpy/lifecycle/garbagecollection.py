"""Garbage collection between NodeClaims and the instances behind them.

Two kinds of leftovers, looked for every two minutes (Karpenter's period):

* **An instance no NodeClaim claims.** Launches are tagged with their NodeClaim's name, so
  an instance that no NodeClaim names (by that tag or by provider ID) is an *orphan*: a
  NodeClaim deleted while its launch was in flight, or removed by hand without its
  finalizer. An instance whose NodeClaim exists but records a different provider ID is a
  *duplicate*: a launch retried after its response was lost left two. Either is
  terminated, never the instance a NodeClaim records.
* **A registered NodeClaim without an instance.** If the cloud no longer lists the
  instance, the Node is not Ready, and the cloud asked for that one instance says it is
  gone, the NodeClaim is deleted (``garbage_collected``) so its pods are scheduled
  elsewhere. NodeClaims that never registered are liveness's
  business.

Terminating is the one thing here that cannot be undone, so an instance is terminated only
when three independent looks agree (`karpy.lifecycle.claimed` says why each):

1. karpy's state (the informers' copy) finds no NodeClaim for it and it is older than
   ``grace`` (30 s, time for a launch to record its provider ID). This only picks suspects;
2. a fresh LIST of NodeClaims from the API server, read tolerantly, agrees (a LIST that
   fails terminates nothing that pass);
3. it was already a confirmed suspect, for the same reason, at least ``confirm_after``
   (60 s) earlier. The first time each suspect was confirmed is kept in memory, per
   instance, by the injected clock; entries for instances that are claimed again, gone or
   terminating are forgotten each pass, and at most ``MAX_SUSPECTS`` are kept. A pass
   that leaves suspects asks for the next one when the oldest may be confirmed, so a
   leak is collected about a minute after it is first seen, not a whole period later.

A restart forgets the suspects, which only delays a termination by one more pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import NodeClassReference, ObjectMeta
from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.apis.nodeclaim import NodeClaim, NodeClaimSpec, NodeClaimStatus
from karpy.cloud.errors import NodeClaimNotFound
from karpy.kube.errors import KubeError, NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle.claimed import ClaimedInstances, UnreadableList, Verdict, list_claimed
from karpy.lifecycle.conditions import REGISTERED, is_true
from karpy.log import describe_error, get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after

if TYPE_CHECKING:
    from collections.abc import Sequence
    from datetime import datetime

    from karpy.cloud.provider import Instance
    from karpy.lifecycle.context import Lifecycle
    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["GarbageCollection", "Suspect"]

log = get_logger("nodeclaim.garbagecollection")

PERIOD: Final = 120.0  # seconds; the resync period its controller is given
DEFAULT_GRACE: Final = 30.0
DEFAULT_CONFIRM_AFTER: Final = 60.0
MAX_SUSPECTS: Final = 10_000
MIN_REQUEUE: Final = 1.0  # seconds


@attrs.frozen(slots=True)
class Suspect:
    """An instance confirmed unclaimed (``reason``), first at ``since``."""

    reason: Verdict
    since: datetime


class GarbageCollection:
    name = "nodeclaim.garbagecollection"
    watches: frozenset[str] = frozenset()

    def __init__(
        self,
        ctx: Lifecycle,
        *,
        grace: float = DEFAULT_GRACE,
        confirm_after: float = DEFAULT_CONFIRM_AFTER,
        max_suspects: int = MAX_SUSPECTS,
    ) -> None:
        self.ctx = ctx
        self.grace = grace
        self.confirm_after = confirm_after
        self.max_suspects = max_suspects
        self.suspects: dict[str, Suspect] = {}  # by provider ID
        self.terminated = 0
        self.deleted = 0

    def wants(self, change: StateChange[Any]) -> bool:
        return False

    def due(self, snapshot: StateSnapshot) -> bool:
        return True  # every resync (PERIOD) is a sweep

    async def reconcile(self) -> Result:
        instances = await self.ctx.provider.list()
        snapshot = self.ctx.state.snapshot()
        live = [i for i in instances if not i.terminating]
        await self._collect_instances(live, ClaimedInstances.of_snapshot(snapshot))
        listed = {i.provider_id for i in live}
        for claim in list(snapshot.nodeclaims.values()):
            if (
                claim.metadata.deletion_timestamp is None
                and is_true(claim, REGISTERED)
                and claim.status.provider_id not in listed
            ):
                node = snapshot.node_by_provider(claim.status.provider_id)
                if (node is None or not node.ready) and await self._instance_gone(claim):
                    await self._delete(claim)
        return self._next_confirmation()

    # -- instances no NodeClaim claims -------------------------------------------------

    async def _collect_instances(self, live: Sequence[Instance], known: ClaimedInstances) -> None:
        suspected = [i for i in live if self._old_enough(i) and known.verdict(i) is not None]
        if not suspected:
            self.suspects.clear()
            return
        try:
            fresh = await list_claimed(self.ctx.client)
        except (KubeError, UnreadableList) as exc:
            log.warning("skipped instance garbage collection: nodeclaims not listed",
                        suspects=len(suspected), error=str(exc))  # fmt: skip
            return
        now = self.ctx.clock.now()
        confirmed: dict[str, tuple[Instance, Verdict]] = {}
        for instance in suspected:
            verdict = fresh.verdict(instance)
            if verdict is not None:
                confirmed[instance.provider_id] = (instance, verdict)
        self.suspects = {pid: s for pid, s in self.suspects.items()
                         if pid in confirmed and confirmed[pid][1] == s.reason}  # fmt: skip
        for provider_id, (instance, verdict) in confirmed.items():
            suspect = self.suspects.get(provider_id)
            if suspect is None:
                if len(self.suspects) < self.max_suspects:
                    self.suspects[provider_id] = Suspect(verdict, now)
                    log.info("suspected instance", reason=verdict, providerID=provider_id,
                             nodeclaim=instance.nodeclaim or None)  # fmt: skip
                continue
            if (now - suspect.since).total_seconds() >= self.confirm_after:
                await self._terminate(instance, suspect)
                del self.suspects[provider_id]

    def _next_confirmation(self) -> Result:
        """Come back when the oldest suspect may be confirmed, not a whole period later."""
        if not self.suspects:
            return DONE
        now = self.ctx.clock.now()
        waited = max((now - s.since).total_seconds() for s in self.suspects.values())
        return requeue_after(max(self.confirm_after - waited, MIN_REQUEUE))

    def _old_enough(self, instance: Instance) -> bool:
        created = instance.created
        if created is None:
            return False
        return (self.ctx.clock.now() - created).total_seconds() > self.grace

    async def _terminate(self, instance: Instance, suspect: Suspect) -> None:
        stand_in = NodeClaim(
            metadata=ObjectMeta(name=instance.nodeclaim or instance.provider_id),
            spec=NodeClaimSpec(requirements=(), node_class_ref=NodeClassReference("", "", "")),
            status=NodeClaimStatus(provider_id=instance.provider_id),
        )
        try:
            await self.ctx.provider.delete(stand_in)
        except NodeClaimNotFound:
            return
        self.terminated += 1
        log.info("terminated instance", reason=suspect.reason, providerID=instance.provider_id,
                 nodeclaim=instance.nodeclaim or None,
                 firstSeen=suspect.since.isoformat())  # fmt: skip
        if self.ctx.metrics is not None:
            self.ctx.metrics.garbagecollection_terminated.labels(suspect.reason).inc()

    # -- NodeClaims whose instance is gone ---------------------------------------------

    async def _instance_gone(self, claim: NodeClaim) -> bool:
        """Whether the cloud, asked for this one instance, says it is gone. Missing from the
        list is not enough: the list shows only instances carrying every ownership tag, and
        one whose tag was removed by hand still runs the NodeClaim's pods."""
        try:
            instance = await self.ctx.provider.get(claim.status.provider_id)
        except NodeClaimNotFound:
            return True
        except Exception as exc:  # any doubt keeps the NodeClaim
            log.warning("kept nodeclaim: could not confirm its instance is gone",
                        **obj_ref("NodeClaim", claim.name), providerID=claim.status.provider_id,
                        error=describe_error(exc))  # fmt: skip
            return False
        log.warning("kept nodeclaim: its instance runs but is not listed as karpy's",
                    **obj_ref("NodeClaim", claim.name),
                    providerID=instance.provider_id)  # fmt: skip
        return False

    async def _delete(self, claim: NodeClaim) -> None:
        try:
            await self.ctx.client.delete(NODECLAIMS, claim.name)
        except NotFound:
            return
        self.deleted += 1
        log.info("deleted nodeclaim: its instance is gone", **obj_ref("NodeClaim", claim.name),
                 providerID=claim.status.provider_id)  # fmt: skip
        if self.ctx.metrics is not None:
            labels = claim.metadata.labels
            self.ctx.metrics.disrupted(
                "garbage_collected",
                labels.get(LABEL_NODEPOOL, ""),
                labels.get(LABEL_CAPACITY_TYPE, ""),
                pods=self.ctx.state.snapshot().reschedulable_count(claim.status.node_name),
            )
