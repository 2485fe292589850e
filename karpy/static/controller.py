"""`StaticCapacity`: keep a static NodePool (``spec.replicas``) at ``replicas`` NodeClaims
(Karpenter's ``static.provisioning`` and ``static.deprovisioning`` controllers, here one
reconciler per pool, so scaling up and down never race on one pool).

**Up.** When the pool's running and disrupting NodeClaims
(`karpy.disruption.staticpools`) number fewer than ``replicas``, it creates the missing
ones from the pool's template (`karpy.rounds.nodeclaims.template_nodeclaim_for`): no
scheduling round, no pods; the cloud provider picks the instance type among those the
template allows. ``limits.nodes`` caps the pool, counting every NodeClaim it has,
deleting ones included; at the cap it logs and looks again in 30 seconds. Only a Ready
pool is scaled up (its NodeClass is there and it validates), as in Karpenter.

**Down.** When more are running than ``replicas``, it deletes the surplus in the order
of `karpy.static.scaledown`. Deleting a NodeClaim starts karpy's termination (cordon,
drain through the Eviction API, instance deletion), as for any NodeClaim. It acts only
on NodeClaims the API shows, each deleted with its uid as a precondition.

**Informer lag.** A NodeClaim just created is not in the next snapshot yet, and one
just deleted still shows without a ``deletionTimestamp``: counted from the snapshot
alone, the next reconcile would create or delete a second time. So the reconciler
remembers, for ``SEEN_GRACE`` seconds at most, what it created and deleted and the
informer has not shown yet: created ones count as running when scaling up (never as
something to delete), deleted ones no longer count as running.

Dynamic provisioning never uses a static pool (`NodeClaimTemplate.usable`), though its
nodes take pods like any other; consolidation and emptiness never remove its nodes; drift
replaces them one for one (`karpy.disruption.methods.staticdrift`). The controller runs
only with the ``StaticCapacity`` feature gate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.disruption.staticpools import node_limit, static_count
from karpy.kube.client import Preconditions, priority
from karpy.kube.errors import AlreadyExists, Conflict, KubeError, NotFound, TransportError
from karpy.kube.resources import NODECLAIMS
from karpy.log import describe_error, get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.rounds.nodeclaims import random_suffix, template_nodeclaim_for
from karpy.state import kinds
from karpy.state.cluster import is_nodeclaim, is_nodepool
from karpy.state.keys import NodePoolName
from karpy.static.scaledown import running_claims, scale_down_order

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["StaticCapacity"]

log = get_logger("static")

SEEN_GRACE: Final = 30.0  # seconds for a write of ours to reach the informer
LIMIT_RETRY: Final = 30.0  # seconds between looks at a pool held at limits.nodes
RECHECK: Final = 60.0  # Karpenter requeues a static pool every minute
CREATE_PRIORITY: Final = 10


class StaticCapacity:
    """See the module docstring. ``well_known_labels``: the labels whose values depend on
    the instance (Kubernetes' and the cloud provider's), left out of a new NodeClaim's
    labels."""

    name = "static.capacity"
    watches = frozenset({kinds.NODEPOOL, kinds.NODECLAIM})

    def __init__(
        self, state: ClusterState, client: KubeClient, *, well_known_labels: frozenset[str],
        clock: Clock, metrics: KarpenterMetrics | None = None,
    ) -> None:  # fmt: skip
        self.state = state
        self.client = client
        self.well_known = well_known_labels
        self.clock = clock
        self.metrics = metrics
        # pool -> {NodeClaim name: when we wrote it}, until the informer shows the write
        self._created: dict[str, dict[str, float]] = {}
        self._deleted: dict[str, dict[str, float]] = {}

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodePoolName]:
        snapshot = self.state.snapshot()
        if is_nodepool(change):
            names = [change.key]
        elif is_nodeclaim(change):
            names = [r.metadata.labels.get(LABEL_NODEPOOL, "")
                     for r in (change.old, change.new) if r is not None]  # fmt: skip
        else:
            return ()
        return {NodePoolName(n) for n in names if n and _static(snapshot.nodepools.get(n))}

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodePoolName]:
        return [NodePoolName(name) for name, pool in snapshot.nodepools.items() if pool.is_static]

    async def reconcile(self, key: NodePoolName) -> Result:
        snapshot = self.state.snapshot()
        pool = snapshot.nodepools.get(key)
        if pool is None or pool.spec.replicas is None or pool.metadata.deletion_timestamp:
            self._created.pop(key, None)
            self._deleted.pop(key, None)
            return DONE
        created, deleted = self._unseen(snapshot, key)
        running = running_claims(snapshot, key, deleted=deleted)
        replicas = pool.spec.replicas
        if len(running) > replicas:
            await self._scale_down(pool, snapshot, running, len(running) - replicas)
            return requeue_after(RECHECK)
        count = static_count(snapshot, key)
        running_now = count.running - len(deleted) + len(created)
        if running_now + count.disrupting >= replicas or not _ready(pool):
            return requeue_after(RECHECK)
        wanted = replicas - running_now
        limit = node_limit(pool)
        if limit is not None:
            wanted = min(wanted, limit - (count.total + len(created)))
            if wanted <= 0:
                log.info("nodepool node limit reached", **obj_ref("NodePool", key),
                         replicas=replicas, running=running_now, limit=limit)  # fmt: skip
                return requeue_after(LIMIT_RETRY)
        log.info("provisioning nodeclaims to satisfy replica count", **obj_ref("NodePool", key),
                 current=running_now, desired=replicas, count=wanted)  # fmt: skip
        for _ in range(wanted):
            await self._create(pool)
        return requeue_after(RECHECK)

    def _unseen(self, snapshot: StateSnapshot, pool: str) -> tuple[set[str], set[str]]:
        """Our recent creations the snapshot does not show yet, and our recent deletions
        it still shows as not deleting (each forgotten after SEEN_GRACE)."""
        now = self.clock.monotonic()
        claims = snapshot.nodeclaims

        def pending(writes: dict[str, float], shown: Any) -> set[str]:
            for name in [n for n, at in writes.items() if now - at >= SEEN_GRACE or shown(n)]:
                del writes[name]
            return set(writes)

        created = pending(self._created.setdefault(pool, {}), lambda n: n in claims)
        deleted = pending(self._deleted.setdefault(pool, {}), lambda n: (
            (c := claims.get(n)) is None or c.metadata.deletion_timestamp is not None))  # fmt: skip
        return created, deleted

    async def _create(self, pool: NodePool) -> None:
        for _ in range(3):  # a name clash is retried with a fresh name
            name = f"{pool.name}-{random_suffix()}"
            body = template_nodeclaim_for(pool, name=name, well_known=self.well_known)
            try:
                with priority(CREATE_PRIORITY):
                    await self.client.create(NODECLAIMS, body)
            except AlreadyExists:
                continue
            except TransportError as exc:
                if await self.client.try_get(NODECLAIMS, name) is None:  # did it land?
                    log.error("could not create nodeclaim", **obj_ref("NodePool", pool.name),
                              error=describe_error(exc))  # fmt: skip
                    raise
            except KubeError as exc:
                log.error("could not create nodeclaim", **obj_ref("NodePool", pool.name),
                          error=describe_error(exc))  # fmt: skip
                raise
            self._created[pool.name][name] = self.clock.monotonic()
            log.info("created nodeclaim", **obj_ref("NodePool", pool.name),
                     **obj_ref("NodeClaim", name), reason="static")  # fmt: skip
            if self.metrics is not None:
                self.metrics.nodeclaims_created.labels("provisioned", pool.name, "false").inc()
            return

    async def _scale_down(
        self, pool: NodePool, snapshot: StateSnapshot, running: list[NodeClaim], surplus: int
    ) -> None:
        log.info("deprovisioning nodeclaims to satisfy replica count",
                 **obj_ref("NodePool", pool.name), current=len(running),
                 desired=pool.spec.replicas, count=surplus)  # fmt: skip
        for claim in scale_down_order(snapshot, running, now=self.clock.now())[:surplus]:
            try:
                only_this = Preconditions(uid=claim.metadata.uid)
                await self.client.delete(NODECLAIMS, claim.name, preconditions=only_this)
            except (NotFound, Conflict):
                continue  # gone already, or another object by now: nothing of ours to delete
            self._deleted[pool.name][claim.name] = self.clock.monotonic()
            log.info("deleting nodeclaim", **obj_ref("NodeClaim", claim.name),
                     **obj_ref("NodePool", pool.name), reason="overprovisioned")  # fmt: skip
            if self.metrics is not None:
                labels = claim.metadata.labels
                self.metrics.disrupted(
                    "overprovisioned",
                    pool.name,
                    labels.get(LABEL_CAPACITY_TYPE, ""),
                    pods=snapshot.reschedulable_count(claim.status.node_name),
                )


def _static(pool: NodePool | None) -> bool:
    return pool is not None and pool.is_static


def _ready(pool: NodePool) -> bool:
    """Is the pool's ``Ready`` condition True? (Karpenter scales up Ready pools only.)"""
    ready = pool.status.condition("Ready")
    return ready is not None and ready.is_true
