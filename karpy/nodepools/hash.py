"""NodePool hash: the ``karpenter.sh/nodepool-hash`` annotation (and its version) on each
NodePool, Karpenter's fingerprint of ``spec.template``.

Every NodeClaim is created with its pool's hash; drift detection later compares the two,
so a template edit marks the pool's existing NodeClaims drifted. Written only when it
differs from what the pool carries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.hashes import NODEPOOL_HASH_VERSION, nodepool_template_hash
from karpy.apis.labels import ANNOTATION_NODEPOOL_HASH, ANNOTATION_NODEPOOL_HASH_VERSION
from karpy.kube.resources import NODEPOOLS
from karpy.reconcile import DONE, Result
from karpy.state import kinds
from karpy.state.keys import NodePoolName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodePoolHash"]


class NodePoolHash:
    name = "nodepool.hash"
    watches = frozenset({kinds.NODEPOOL})

    def __init__(self, state: ClusterState, client: KubeClient) -> None:
        self.state = state
        self.client = client

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodePoolName]:
        return (NodePoolName(change.key),) if change.new is not None else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodePoolName]:
        return map(NodePoolName, snapshot.nodepools)

    async def reconcile(self, key: NodePoolName) -> Result:
        pool = self.state.snapshot().nodepools.get(key)
        if pool is None or pool.metadata.deletion_timestamp is not None:
            return DONE
        wanted = {ANNOTATION_NODEPOOL_HASH: nodepool_template_hash(pool.spec.template),
                  ANNOTATION_NODEPOOL_HASH_VERSION: NODEPOOL_HASH_VERSION}  # fmt: skip
        annotations = pool.metadata.annotations
        if all(annotations.get(k) == v for k, v in wanted.items()):
            return DONE
        await self.client.patch(NODEPOOLS, key, {"metadata": {"annotations": wanted}})
        return DONE
