"""NodePool counter: ``status.resources`` and ``status.nodes`` from cluster state.

``status.resources`` is the summed capacity of the pool's nodes (a registered node's own
capacity, else its NodeClaim's) plus ``nodes``, their count; users read it with ``kubectl
get nodepools -o wide`` and NodePool limits are judged against it. During a scale-up every
launch changes it, so a pool is counted, and written, at most once every ``min_interval``
seconds (the last change always lands: the controller looks again when the interval is
over).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.labels import LABEL_NODEPOOL
from karpy.apis.resources import format_resource_list
from karpy.kube.resources import NODEPOOLS
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodePoolCounter", "pool_resources"]

MIN_INTERVAL: Final = 2.0  # seconds between two status writes of one pool
ONE_NODE: Final = 1000  # "nodes" in milli-units


def pool_resources(snapshot: StateSnapshot, pool: str) -> dict[str, int]:
    """Summed capacity (milli-units) of the pool's nodes and in-flight NodeClaims, with
    ``nodes`` counting them."""
    totals: dict[str, int] = {}
    seen_nodes: set[str] = set()
    count = 0
    for claim in snapshot.nodeclaims_of(pool):
        node = snapshot.node_for_claim(claim.name)
        capacity = claim.status.capacity
        if node is not None:
            seen_nodes.add(node.name)
            if node.node.capacity:
                capacity = node.node.capacity
        for name, value in capacity.items():
            totals[name] = totals.get(name, 0) + value
        count += 1
    for info in snapshot.nodes.values():  # nodes of the pool with no NodeClaim (adopted)
        labels = info.node.labels
        if (
            labels.get(LABEL_NODEPOOL) == pool
            and info.name not in seen_nodes
            and snapshot.claim_for_node(info.name) is None
        ):
            for name, value in info.node.capacity.items():
                totals[name] = totals.get(name, 0) + value
            count += 1
    totals["nodes"] = count * ONE_NODE
    return totals


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

    def keys_for(self, change: StateChange) -> Iterable[str]:
        if change.kind == kinds.NODEPOOL:
            return (change.key,)
        pools = set()
        for record in (change.old, change.new):
            if record is None:
                continue
            labels = record.metadata.labels if change.kind == kinds.NODECLAIM else (
                record.node.labels)  # fmt: skip
            pool = labels.get(LABEL_NODEPOOL)
            if pool:
                pools.add(pool)
        return pools

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        return snapshot.nodepools.keys()

    async def reconcile(self, key: str) -> Result:
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
        resources = pool_resources(snapshot, key)
        nodes = resources["nodes"] // ONE_NODE
        if dict(pool.status.resources) == resources and pool.status.nodes == nodes:
            return DONE
        patch = {"status": {"resources": format_resource_list(resources), "nodes": nodes}}
        await self.client.patch_status(NODEPOOLS, key, patch)
        return DONE
