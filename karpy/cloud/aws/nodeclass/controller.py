"""The EC2NodeClass controller (``nodeclass``): keeps each class's status true to the
account, and tidies up after a deleted class.

One reconcile of a live class:

1. adds the ``karpenter.k8s.aws/termination`` finalizer if it is missing;
2. resolves the class (`karpy.cloud.aws.nodeclass.resolve`) against the cluster's
   Kubernetes version (for AMI aliases);
3. writes the status — subnets, security groups, AMIs, capacity reservations, instance
   profile and the conditions — in one status patch carrying the resourceVersion that
   was read, and only when something differs (a 409 is retried by the controller with
   the fresh object);
4. asks to be run again after the shortest refresh of its steps (``AMI_REFRESH_INTERVAL``,
   ``SUBNET_REFRESH_INTERVAL``, ``SECURITY_GROUP_REFRESH_INTERVAL``, a minute for a
   selector that matched nothing...), so new
   AMIs, subnets filling up and tags added later are all picked up without any event.

What wakes it: a change to a class's spec, finalizers or deletion (not the status and
annotation writes of karpy's own controllers, which would only make it resolve again
for nothing), the deletion of a NodeClaim that referred to a class (a deleted class may
be waiting for it), its own requeues and the periodic resync. A deleted class is
finalized by `karpy.cloud.aws.nodeclass.finalizer`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.labels import FINALIZER_AWS_TERMINATION
from karpy.cloud.aws.nodeclass.finalizer import (
    WAITING_REQUEUE,
    add_finalizer,
    delete_launch_templates,
    remove_finalizer,
    waiting_event,
)
from karpy.cloud.aws.nodeclass.hash import claims_of
from karpy.cloud.aws.nodeclasses import EC2NODECLASSES, NODE_CLASS
from karpy.cloud.errors import CloudProviderError
from karpy.kube.errors import NotFound
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import is_nodeclaim
from karpy.state.keys import NodeClassName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.ec2nodeclass_status import EC2NodeClassStatus
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.nodeclass.resolve import NodeClassResolver
    from karpy.cloud.aws.nodeclass.version import KubernetesVersion
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodeClassController", "NodeClassResolutionFailed"]

log = get_logger("aws.nodeclass")


class NodeClassResolutionFailed(CloudProviderError):
    """Some resolution steps failed with AWS errors (the status keeps their last
    verdicts); the controller retries with backoff."""


class NodeClassController:
    name = "nodeclass"
    watches = frozenset({NODE_CLASS.kind, kinds.NODECLAIM})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        clients: AWSClients,
        resolver: NodeClassResolver,
        version: KubernetesVersion,
        *,
        isolated_vpc: bool = False,
        recorder: EventRecorder | None = None,
    ) -> None:
        self.state = state
        self.client = client
        self.clients = clients
        self.resolver = resolver
        self.version = version
        self.isolated_vpc = isolated_vpc
        self.recorder = recorder

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClassName]:
        if is_nodeclaim(change):
            if change.new is None and change.old is not None:
                ref = change.old.spec.node_class_ref
                return (NodeClassName(ref.name),) if ref.kind == "EC2NodeClass" else ()
            return ()
        old, new = change.old, change.new
        if old is None or new is None:
            return (NodeClassName(change.key),)
        before, after = old.metadata, new.metadata
        moved = (
            before.generation != after.generation
            or before.finalizers != after.finalizers
            or before.deletion_timestamp != after.deletion_timestamp
        )
        return (NodeClassName(change.key),) if moved else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClassName]:
        return map(NodeClassName, snapshot.of(NODE_CLASS.kind))

    async def reconcile(self, key: NodeClassName) -> Result:
        snapshot = self.state.snapshot()
        nodeclass = snapshot.node_class(NODE_CLASS, key)
        if nodeclass is None:
            return DONE
        try:
            if nodeclass.metadata.deletion_timestamp is not None:
                return await self._finalize(nodeclass, snapshot)
            return await self._resolve(nodeclass)
        except NotFound:
            return DONE

    async def _resolve(self, nodeclass: EC2NodeClass) -> Result:
        version = nodeclass.metadata.resource_version
        if FINALIZER_AWS_TERMINATION not in nodeclass.metadata.finalizers:
            version = await add_finalizer(self.client, nodeclass)
        resolution = await self.resolver.resolve(nodeclass, await self.version.get())
        await self._write_status(nodeclass, resolution.status, version)
        if resolution.errors:
            failed = "; ".join(f"{step}: {error}" for step, error in resolution.errors)
            raise NodeClassResolutionFailed(f"resolving EC2NodeClass {nodeclass.name}: {failed}")
        return requeue_after(resolution.requeue_after)

    async def _write_status(
        self, nodeclass: EC2NodeClass, status: EC2NodeClassStatus, resource_version: str
    ) -> None:
        old, new = nodeclass.status.to_dict(), status.to_dict()
        if old == new:
            return
        # A merge patch: fields that resolved to nothing are removed with null.
        patch = {"metadata": {"resourceVersion": resource_version},
                 "status": {k: new.get(k) for k in old.keys() | new.keys()}}  # fmt: skip
        await self.client.patch_status(EC2NODECLASSES, nodeclass.name, patch)
        ready = status.condition("Ready")
        log.info("updated nodeclass status", **obj_ref("EC2NodeClass", nodeclass.name),
                 ready=ready.status.value if ready else "Unknown",
                 reason=ready.message if ready and not ready.is_true else None)  # fmt: skip

    async def _finalize(self, nodeclass: EC2NodeClass, snapshot: StateSnapshot) -> Result:
        if FINALIZER_AWS_TERMINATION not in nodeclass.metadata.finalizers:
            return DONE
        claims = claims_of(snapshot, nodeclass.name)
        if claims:
            event = waiting_event(nodeclass, claims)
            if self.recorder is not None:
                self.recorder.publish(event)
            log.info("waiting on nodeclaim termination", **obj_ref("EC2NodeClass", nodeclass.name),
                     nodeclaims=len(claims))  # fmt: skip
            return requeue_after(WAITING_REQUEUE)
        if not self.isolated_vpc:  # no IAM endpoint in an isolated VPC
            await self.resolver.profiles.delete_managed(nodeclass)
        ec2 = await self.clients.ec2()
        await delete_launch_templates(ec2, nodeclass.name, self.resolver.cluster_name)
        await remove_finalizer(self.client, nodeclass)
        log.info("finalized nodeclass", **obj_ref("EC2NodeClass", nodeclass.name))
        return DONE
