"""Booting fake instances: with ``FAKE_REGISTRATION_DELAY``, the Node of a launched
NodeClaim appears that long after the launch, as a real instance's kubelet joins late.

Level-triggered and kept in the API, not in memory: the boot time is the NodeClaim's
``Launched`` transition time plus the delay, and the Node is rebuilt from what the launch
wrote on the NodeClaim (its instance type, zone and capacity type labels). A controller
killed while instances boot therefore finds them again after its restart and boots them
on time; nothing is lost and nothing launches twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_ZONE
from karpy.cloud.fake import nodes
from karpy.kube.errors import AlreadyExists
from karpy.kube.resources import NODES
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.keys import NodeClaimName

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["FakeBoot", "booting"]

log = get_logger("fake.cloud")


def booting(claim: NodeClaim, snapshot: StateSnapshot) -> bool:
    """Launched by the fake cloud, never registered, not being deleted, and its Node not
    written yet."""
    launched = claim.status.condition("Launched")
    registered = claim.status.condition("Registered")
    return (
        launched is not None
        and launched.is_true
        and (registered is None or not registered.is_true)
        and claim.metadata.deletion_timestamp is None
        and nodes.node_name_of(claim.status.provider_id) == claim.name
        and claim.name not in snapshot.nodes
    )


class FakeBoot:
    name = "fake.boot"
    watches = frozenset({kinds.NODECLAIM})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        types_by_name: Mapping[str, InstanceType],
        *,
        delay: float,
        clock: Clock,
    ) -> None:
        self.state = state
        self.client = client
        self.types_by_name = types_by_name
        self.delay = delay
        self.clock = clock

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClaimName]:
        return (NodeClaimName(change.key),) if change.new is not None else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClaimName]:
        return [
            NodeClaimName(name)
            for name, claim in snapshot.nodeclaims.items()
            if booting(claim, snapshot)
        ]

    async def reconcile(self, key: NodeClaimName) -> Result:
        snapshot = self.state.snapshot()
        claim = snapshot.nodeclaims.get(key)
        if claim is None or not booting(claim, snapshot):
            return DONE
        launched = claim.status.condition("Launched")
        since = launched.last_transition_time if launched is not None else None
        if since is not None:
            remaining = self.delay - (self.clock.now() - since).total_seconds()
            if remaining > 0:
                return requeue_after(remaining)
        labels = claim.metadata.labels
        it = self.types_by_name.get(labels.get(LABEL_INSTANCE_TYPE, ""))
        offering = next(
            (o for o in (it.offerings if it is not None else ())
             if o.zone == labels.get(LABEL_ZONE) and o.capacity_type == labels.get(
                 LABEL_CAPACITY_TYPE)),
            None,
        )  # fmt: skip
        if it is None or offering is None:
            log.warning("cannot boot fake instance: its NodeClaim lost its instance labels",
                        **obj_ref("NodeClaim", key))  # fmt: skip
            return DONE
        try:
            await self.client.create(NODES, nodes.node_for(claim, it, offering))
        except AlreadyExists:
            return DONE
        log.debug("fake instance booted", **obj_ref("Node", key))
        return DONE
