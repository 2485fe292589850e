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
  exists;
* it has not been renewed (nor created) for ``grace`` seconds (5 minutes by default) by
  the wall clock;

and the DELETE carries the resourceVersion that was judged, so a Lease renewed in the
meantime survives (409). The collector runs every ``period`` seconds and also wakes when a
Node is deleted, at the moment that node's Lease becomes stale. It is a writer: it runs
only on the leader.
"""

from __future__ import annotations

import asyncio
import heapq
from datetime import timedelta
from typing import TYPE_CHECKING

from karpy.kube.client import Preconditions
from karpy.kube.clock import SYSTEM_CLOCK
from karpy.kube.errors import Conflict, KubeError, NotFound
from karpy.kube.resources import LEASES, NODE_LEASE_NAMESPACE
from karpy.log import describe_error, get_logger, obj_ref
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.kube.client import KubeClient
    from karpy.kube.clock import Clock
    from karpy.observability.metrics import Metrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import NodeLease
    from karpy.state.snapshot import StateSnapshot

__all__ = ["LeaseGarbageCollector"]

log = get_logger("lease.garbagecollection")

DEFAULT_GRACE = 300.0
DEFAULT_PERIOD = 60.0


class LeaseGarbageCollector:
    name = "lease-gc"

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        *,
        grace: float = DEFAULT_GRACE,
        period: float = DEFAULT_PERIOD,
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.state = state
        self.client = client
        self.grace = grace
        self.period = period
        self.metrics = metrics
        self.clock = clock
        self.deleted = 0
        self._due: list[float] = []  # monotonic times at which a lease becomes stale
        self._wake = asyncio.Event()

    async def run(self, stop: asyncio.Event) -> None:
        unsubscribe = self.state.subscribe(self._on_changes)
        try:
            while not stop.is_set():
                try:
                    await self.collect()
                except KubeError as exc:  # collect logs per lease; this is a listing failure
                    log.warning("lease garbage collection failed", error=describe_error(exc))
                await self._sleep(stop)
        finally:
            unsubscribe()

    async def _sleep(self, stop: asyncio.Event) -> None:
        now = self.clock.monotonic()
        while self._due and self._due[0] <= now:
            heapq.heappop(self._due)
        delay = min([self.period, *(d - now for d in self._due[:1])])
        self._wake.clear()
        waits = [
            asyncio.create_task(self.clock.sleep(delay)),
            asyncio.create_task(stop.wait()),
            asyncio.create_task(self._wake.wait()),
        ]
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for task in waits:
            task.cancel()

    def _on_changes(self, changes: Sequence[StateChange]) -> None:
        """When a Node goes, look at its Lease again once it can have become stale."""
        snapshot: StateSnapshot | None = None
        for change in changes:
            if change.kind != kinds.NODE or change.new is not None:
                continue
            snapshot = snapshot or self.state.snapshot()
            lease = snapshot.node_leases.get(f"{NODE_LEASE_NAMESPACE}/{change.key}")
            if lease is None:
                continue
            stale_in = self._stale_in(lease)
            heapq.heappush(self._due, self.clock.monotonic() + max(stale_in, 0.0))
            self._wake.set()

    def _stale_in(self, lease: NodeLease) -> float:
        """Seconds until ``lease`` has gone ``grace`` without renewal (<= 0: it has)."""
        last = lease.last_activity
        if last is None:
            return float("inf")
        return (last + timedelta(seconds=self.grace) - self.clock.now()).total_seconds()

    def orphaned(self, lease: NodeLease, snapshot: StateSnapshot) -> bool:
        nodes = snapshot.nodes
        if lease.name in nodes:
            return False
        return not any(o.kind == "Node" and o.name in nodes for o in lease.owners)

    async def collect(self) -> int:
        """One pass; the number of Leases deleted."""
        if not self.state.kind_synced(kinds.NODE, kinds.NODE_LEASE):
            return 0
        snapshot = self.state.snapshot()
        deleted = 0
        for lease in list(snapshot.node_leases.values()):
            if not self.orphaned(lease, snapshot) or self._stale_in(lease) > 0:
                continue
            if await self._delete(lease):
                deleted += 1
        return deleted

    async def _delete(self, lease: NodeLease) -> bool:
        ref = obj_ref("Lease", lease.name, lease.namespace)
        try:
            await self.client.delete(
                LEASES, lease.name, lease.namespace,
                preconditions=Preconditions(resource_version=lease.resource_version),
            )  # fmt: skip
        except Conflict:
            log.debug("lease changed since it was judged orphaned; keeping it", **ref)
            return False
        except NotFound:
            return False
        except KubeError as exc:
            log.warning("could not delete orphaned lease", **ref, error=describe_error(exc))
            return False
        self.deleted += 1
        if self.metrics is not None:
            self.metrics.leases_deleted.inc()
        log.info("deleted orphaned node lease", **ref, holder=lease.holder or None,
                 lastRenewed=lease.last_activity)  # fmt: skip
        return True
