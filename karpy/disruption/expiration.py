"""`Expiration`: a NodeClaim older than its ``expireAfter`` is deleted (Karpenter's
``nodeclaim.expiration``).

Expiration is forceful: no disruption budget gates it and it does not wait for
consolidation. Deleting the NodeClaim starts termination (cordon, drain through the
Eviction API, instance deletion), and the provisioner schedules the pods of a node being
deleted before they are evicted, so replacement capacity is on its way while the old
node drains. ``expireAfter`` is copied onto each NodeClaim at creation; ``Never``
disables it. The reconcile is requeued for the moment the NodeClaim expires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.kube.errors import NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.keys import NodeClaimName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["Expiration"]

log = get_logger("disruption")


class Expiration:
    name = "nodeclaim.expiration"
    watches = frozenset({kinds.NODECLAIM})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        *,
        clock: Clock,
        metrics: KarpenterMetrics | None = None,
    ) -> None:
        self.state = state
        self.client = client
        self.clock = clock
        self.metrics = metrics

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClaimName]:
        return (NodeClaimName(change.key),) if change.new is not None else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClaimName]:
        return map(NodeClaimName, snapshot.nodeclaims)

    async def reconcile(self, key: NodeClaimName) -> Result:
        snapshot = self.state.snapshot()
        claim = snapshot.nodeclaims.get(key)
        if claim is None or claim.metadata.deletion_timestamp is not None:
            return DONE
        expire_after = claim.spec.expire_after
        created = claim.metadata.creation_timestamp
        if expire_after is None or created is None:
            return DONE
        left = (created + expire_after - self.clock.now()).total_seconds()
        if left > 0:
            return requeue_after(left)
        try:
            await self.client.delete(NODECLAIMS, key)
        except NotFound:
            return DONE
        labels = claim.metadata.labels
        log.info("deleting expired nodeclaim", **obj_ref("NodeClaim", key),
                 expireAfter=claim.spec.expire_after_text or str(expire_after))  # fmt: skip
        if self.metrics is not None:
            self.metrics.disrupted(
                "expired",
                labels.get(LABEL_NODEPOOL, ""),
                labels.get(LABEL_CAPACITY_TYPE, ""),
                pods=snapshot.reschedulable_count(claim.status.node_name),
            )
        return DONE
