"""Garbage collection of node Leases left behind in ``kube-node-lease``.

The kubelet heartbeats through a Lease named after its node and makes the Node its owner,
so the API server's garbage collector deletes the Lease with the Node. A node deleted
before its kubelet set that owner reference (an instance that never finished joining)
leaves its Lease behind for ever; thousands of them slow every list of the namespace.
Karpenter carried a controller for this until v1 (its metric name,
``karpenter_nodes_leases_deleted_total``, is kept).

A Lease is deleted only when all of these hold:

* cluster state has listed both Nodes and Leases (before that, every Lease would look
  orphaned);
* no Node of the Lease's name exists, and none of its owner references names a Node that
  exists (a Node karpy cannot read exists: it is never taken for absent);
* it has not been renewed (nor created) for ``grace`` seconds (5 minutes by default) by
  the wall clock;

and the DELETE carries the resourceVersion that was judged, so a Lease renewed in the
meantime survives (409). It is a `karpy.reconcile` reconciler keyed by Lease: a Lease is
looked at when it changes, when the Node of its name is deleted, on the periodic resync,
and again at the moment it would become stale. It is a writer: it runs only on the
leader.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.client import Preconditions
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import LEASES, NODE_LEASE_NAMESPACE
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import is_node_lease
from karpy.state.keys import LeaseKey

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.observability.metrics import Metrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import NodeLease
    from karpy.state.snapshot import StateSnapshot

__all__ = ["DEFAULT_GRACE", "DEFAULT_PERIOD", "LeaseGarbageCollection"]

log = get_logger("lease.garbagecollection")

DEFAULT_GRACE: Final = 300.0
DEFAULT_PERIOD: Final = 60.0  # the resync period its controller is given


class LeaseGarbageCollection:
    """The reconciler (see the module docstring); keys are ``kube-node-lease/<name>``."""

    name = "lease.garbagecollection"
    watches = frozenset({kinds.NODE, kinds.NODE_LEASE})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        *,
        grace: float = DEFAULT_GRACE,
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.client = client
        self.grace = grace
        self.metrics = metrics
        self.clock = clock
        self.deleted = 0

    def keys_for(self, change: StateChange[Any]) -> Iterable[LeaseKey]:
        if is_node_lease(change):
            return () if change.new is None else (LeaseKey(change.key),)
        if change.new is None:  # a Node went: its Lease may now be an orphan
            return (LeaseKey(f"{NODE_LEASE_NAMESPACE}/{change.key}"),)
        return ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[LeaseKey]:
        return map(LeaseKey, snapshot.node_leases)

    def stale_in(self, lease: NodeLease) -> float:
        """Seconds until ``lease`` has gone ``grace`` without renewal (<= 0: it has)."""
        last = lease.last_activity
        if last is None:
            return float("inf")
        return (last + timedelta(seconds=self.grace) - self.clock.now()).total_seconds()

    @staticmethod
    def orphaned(lease: NodeLease, snapshot: StateSnapshot) -> bool:
        """No Node of its name or of an owner's exists; a Node that exists but cannot be
        read counts as existing."""

        def exists(node: str) -> bool:
            return node in snapshot.nodes or snapshot.is_unreadable(kinds.NODE, node)

        if exists(lease.name):
            return False
        return not any(o.kind == "Node" and exists(o.name) for o in lease.owners)

    async def reconcile(self, key: LeaseKey) -> Result:
        if not self.state.kind_synced(kinds.NODE, kinds.NODE_LEASE):
            return requeue_after(1.0)  # before both are listed every lease looks orphaned
        snapshot = self.state.snapshot()
        lease = snapshot.node_leases.get(key)
        if lease is None or not self.orphaned(lease, snapshot):
            return DONE
        stale_in = self.stale_in(lease)
        if stale_in == float("inf"):
            return DONE
        if stale_in > 0:
            return requeue_after(stale_in)
        await self._delete(lease)
        return DONE

    async def _delete(self, lease: NodeLease) -> None:
        ref = obj_ref("Lease", lease.name, lease.namespace)
        try:
            await self.client.delete(
                LEASES, lease.name, lease.namespace,
                preconditions=Preconditions(resource_version=lease.resource_version),
            )  # fmt: skip
        except Conflict:
            log.debug("lease changed since it was judged orphaned; keeping it", **ref)
            return
        except NotFound:
            return
        self.deleted += 1
        if self.metrics is not None:
            self.metrics.leases_deleted.inc()
        log.info("deleted orphaned node lease", **ref, holder=lease.holder or None,
                 lastRenewed=lease.last_activity)  # fmt: skip
