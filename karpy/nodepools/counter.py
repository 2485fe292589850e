"""NodePool counter: ``status.resources`` and ``status.nodes`` from cluster state.

``status.resources`` is the summed capacity of the pool's nodes (a registered node's own
capacity, else its NodeClaim's) plus ``nodes``, their count (`NodePoolUsage`); users read
it with ``kubectl get nodepools -o wide`` and NodePool limits are judged against it.
During a scale-up every launch changes it, so a pool is counted, and written, at most
once every ``min_interval`` seconds (the last change always lands: the controller looks
again when the interval is over).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import LABEL_NODEPOOL
from karpy.kube.resources import NODEPOOLS
from karpy.reconcile import DONE, Result, requeue_after
from karpy.scheduling.usage import NodePoolUsage
from karpy.state import kinds
from karpy.state.cluster import is_nodeclaim, is_nodepool
from karpy.state.keys import NodePoolName

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodePoolCounter", "pool_usage"]

MIN_INTERVAL: Final = 2.0  # seconds between two status writes of one pool


def pool_usage(snapshot: StateSnapshot, pool: str) -> NodePoolUsage:
    """The pool's nodes and in-flight NodeClaims: their summed capacity, and how many."""
    return NodePoolUsage.of_nodes(_capacities(snapshot, pool))


def _capacities(snapshot: StateSnapshot, pool: str) -> Iterable[Mapping[str, int]]:
    """The capacity of each of the pool's nodes and in-flight NodeClaims."""
    seen_nodes: set[str] = set()
    for claim in snapshot.nodeclaims_of(pool):
        node = snapshot.node_for_claim(claim.name)
        capacity = claim.status.capacity
        if node is not None:
            seen_nodes.add(node.name)
            if node.node.capacity:
                capacity = node.node.capacity
        yield capacity
    for info in snapshot.nodes.values():  # nodes of the pool with no NodeClaim (adopted)
        labels = info.node.labels
        if (
            labels.get(LABEL_NODEPOOL) == pool
            and info.name not in seen_nodes
            and snapshot.claim_for_node(info.name) is None
        ):
            yield info.node.capacity


class NodePoolCounter:
    name = "nodepool.counter"
    watches = frozenset({kinds.NODEPOOL, kinds.NODECLAIM, kinds.NODE})

    def __init__(
        self, state: ClusterState, client: KubeClient, *, clock: Clock,
        min_interval: float = MIN_INTERVAL,
    ) -> None:  # fmt: skip
        self.state = state
        self.client = client
        self.clock = clock
        self.min_interval = min_interval
        self._counted: dict[str, float] = {}  # pool -> when it was last counted

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodePoolName]:
        if is_nodepool(change):
            return (NodePoolName(change.key),)
        pools: set[NodePoolName] = set()
        for record in (change.old, change.new):
            if record is None:
                continue
            labels = record.metadata.labels if is_nodeclaim(change) else (
                record.node.labels)  # fmt: skip
            pool = labels.get(LABEL_NODEPOOL)
            if pool:
                pools.add(NodePoolName(pool))
        return pools

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodePoolName]:
        return map(NodePoolName, snapshot.nodepools)

    async def reconcile(self, key: NodePoolName) -> Result:
        snapshot = self.state.snapshot()
        pool = snapshot.nodepools.get(key)
        if pool is None:
            self._counted.pop(key, None)
            return DONE
        # Within the interval nothing is counted either: summing a pool walks all its
        # nodes, and during a scale-up every launch, registration and status change of
        # thousands of NodeClaims asks again.
        wait = self._counted.get(key, float("-inf")) + self.min_interval - self.clock.monotonic()
        if wait > 0:
            return requeue_after(wait)
        self._counted[key] = self.clock.monotonic()
        usage = pool_usage(snapshot, key)
        status = pool.status
        if dict(status.resources) == usage.resource_list() and status.nodes == usage.nodes:
            return DONE
        await self.client.patch_status(NODEPOOLS, key, {"status": usage.status()})
        return DONE
