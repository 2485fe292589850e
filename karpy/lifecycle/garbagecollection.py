"""Garbage collection between NodeClaims and the instances behind them.

Two kinds of leftovers, looked for every two minutes (Karpenter's period):

* **An instance without a NodeClaim.** Launches are tagged with their NodeClaim's name, so
  an instance whose NodeClaim (by that name, or by provider ID) no longer exists is an
  orphan: a NodeClaim deleted while its launch was in flight, or removed by hand without
  its finalizer. It is terminated once it is older than ``grace`` (30 s), which leaves a
  launch time to record its provider ID.
* **A registered NodeClaim without an instance.** If the cloud no longer lists the
  instance and the Node is not Ready, the NodeClaim is deleted (``garbage_collected``)
  so its pods are scheduled elsewhere. NodeClaims that never registered are liveness's
  business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.core import NodeClassReference, ObjectMeta
from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.apis.nodeclaim import NodeClaim, NodeClaimSpec, NodeClaimStatus
from karpy.cloud.errors import NodeClaimNotFound
from karpy.kube.errors import NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle.conditions import REGISTERED, is_true
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.cloud.provider import Instance
    from karpy.lifecycle.context import Lifecycle
    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["GarbageCollection"]

log = get_logger("nodeclaim.garbagecollection")

KEY: Final = "sweep"
PERIOD: Final = 120.0  # seconds; the resync period its controller is given
DEFAULT_GRACE: Final = 30.0


class GarbageCollection:
    name = "nodeclaim.garbagecollection"
    watches: frozenset[str] = frozenset()

    def __init__(self, ctx: Lifecycle, *, grace: float = DEFAULT_GRACE) -> None:
        self.ctx = ctx
        self.grace = grace
        self.terminated = 0
        self.deleted = 0

    def keys_for(self, change: StateChange) -> Iterable[str]:
        return ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        return (KEY,)

    async def reconcile(self, key: str) -> Result:
        instances = await self.ctx.provider.list()
        snapshot = self.ctx.state.snapshot()
        for instance in instances:
            if not instance.terminating and self._orphaned(instance, snapshot):
                await self._terminate(instance)
        live = {i.provider_id for i in instances if not i.terminating}
        for claim in list(snapshot.nodeclaims.values()):
            if (
                claim.metadata.deletion_timestamp is None
                and is_true(claim, REGISTERED)
                and claim.status.provider_id not in live
            ):
                node = snapshot.node_by_provider(claim.status.provider_id)
                if node is None or not node.ready:
                    await self._delete(claim)
        return DONE

    def _orphaned(self, instance: Instance, snapshot: StateSnapshot) -> bool:
        if snapshot.claim_by_provider_id.get(instance.provider_id) is not None:
            return False
        if instance.nodeclaim and instance.nodeclaim in snapshot.nodeclaims:
            return False
        created = instance.created
        if created is None:
            return False
        return (self.ctx.clock.now() - created).total_seconds() > self.grace

    async def _terminate(self, instance: Instance) -> None:
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
        log.info("terminated instance without a nodeclaim", providerID=instance.provider_id,
                 nodeclaim=instance.nodeclaim or None)  # fmt: skip

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
            self.ctx.metrics.nodeclaims_disrupted.labels(
                "garbage_collected", labels.get(LABEL_NODEPOOL, ""),
                labels.get(LABEL_CAPACITY_TYPE, ""), "", "",
            ).inc()  # fmt: skip
