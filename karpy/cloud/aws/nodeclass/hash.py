"""EC2NodeClass hash: the ``karpenter.k8s.aws/ec2nodeclass-hash`` annotation (and its
version) on each EC2NodeClass, the fingerprint drift detection compares with the one
each NodeClaim was launched with.

When the hash *version* on a class differs from karpy's, the way the hash is computed
has changed, and the hashes on its NodeClaims can no longer be compared. Before the
class gets the new annotations, every NodeClaim of the class with another version is
re-stamped with the new version and — unless it is already marked drifted, which must
stay — the class's new hash, as Karpenter does, so an upgrade does not mark every node
drifted at once. Only what differs is written.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from karpy.apis.hashes import EC2NODECLASS_HASH_VERSION, ec2nodeclass_hash
from karpy.apis.labels import ANNOTATION_EC2NODECLASS_HASH, ANNOTATION_EC2NODECLASS_HASH_VERSION
from karpy.cloud.aws.nodeclasses import EC2NODECLASSES, NODE_CLASS
from karpy.kube.errors import NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.reconcile import DONE, Result
from karpy.state.keys import NodeClassName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodeClassHash", "claims_of"]

DRIFTED = "Drifted"


def claims_of(snapshot: StateSnapshot, nodeclass: str) -> list[str]:
    """Names of the NodeClaims whose nodeClassRef is the EC2NodeClass ``nodeclass``."""
    return sorted(
        name
        for name, claim in snapshot.nodeclaims.items()
        if claim.spec.node_class_ref.name == nodeclass
        and claim.spec.node_class_ref.kind == "EC2NodeClass"
    )


class NodeClassHash:
    name = "nodeclass.hash"
    watches = frozenset({NODE_CLASS.kind})

    def __init__(self, state: ClusterState, client: KubeClient, *, ca_bundle: str = "") -> None:
        self.state = state
        self.client = client
        self.ca_bundle = ca_bundle

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClassName]:
        return (NodeClassName(change.key),) if change.new is not None else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClassName]:
        return map(NodeClassName, snapshot.of(NODE_CLASS.kind))

    async def reconcile(self, key: NodeClassName) -> Result:
        snapshot = self.state.snapshot()
        nodeclass = snapshot.node_class(NODE_CLASS, key)
        if nodeclass is None or nodeclass.metadata.deletion_timestamp is not None:
            return DONE
        digest = ec2nodeclass_hash(nodeclass, self.ca_bundle or None)
        annotations = nodeclass.metadata.annotations
        if annotations.get(ANNOTATION_EC2NODECLASS_HASH_VERSION) != EC2NODECLASS_HASH_VERSION:
            await self._restamp_claims(snapshot, nodeclass, digest)
        wanted = {ANNOTATION_EC2NODECLASS_HASH: digest,
                  ANNOTATION_EC2NODECLASS_HASH_VERSION: EC2NODECLASS_HASH_VERSION}  # fmt: skip
        if all(annotations.get(k) == v for k, v in wanted.items()):
            return DONE
        with contextlib.suppress(NotFound):
            await self.client.patch(EC2NODECLASSES, key, {"metadata": {"annotations": wanted}})
        return DONE

    async def _restamp_claims(
        self, snapshot: StateSnapshot, nodeclass: EC2NodeClass, digest: str
    ) -> None:
        for name in claims_of(snapshot, nodeclass.name):
            claim = snapshot.nodeclaims[name]
            if claim.metadata.annotations.get(ANNOTATION_EC2NODECLASS_HASH_VERSION) == (
                EC2NODECLASS_HASH_VERSION
            ):
                continue
            stamp = {ANNOTATION_EC2NODECLASS_HASH_VERSION: EC2NODECLASS_HASH_VERSION}
            if claim.status.condition(DRIFTED) is None:
                stamp[ANNOTATION_EC2NODECLASS_HASH] = digest
            try:
                await self.client.patch(NODECLAIMS, name, {"metadata": {"annotations": stamp}})
            except NotFound:
                continue
