"""What a launch tells about the node it starts: the labels and taints its kubelet
registers with, the capacity reservation labels, and the `Instance` record of a fresh
launch (before the instance type's facts are added by `InstanceLauncher`).

Labels in the ``kubernetes.io`` and ``k8s.io`` domains are left out of what the kubelet
sets (the node restriction admission plugin refuses them); every node registers with the
``karpenter.sh/unregistered`` taint, which karpy removes once it has synced the
NodeClaim's labels and taints onto the Node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.core import Taint
from karpy.apis.labels import (
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_AWS_CAPACITY_RESERVATION_TYPE,
    LABEL_CAPACITY_TYPE,
    LABEL_DO_NOT_SYNC_TAINTS,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
    TAINT_UNREGISTERED,
    label_domain,
)
from karpy.cloud.aws.launch.providerid import provider_id
from karpy.cloud.provider import Instance

if TYPE_CHECKING:
    from datetime import datetime

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.cloud.aws.launch.fleet import FleetLaunch

__all__ = ["instance_from_launch", "node_labels", "registration_taints", "reservation_labels"]

# Label domains the node restriction admission plugin keeps kubelets from setting.
_KUBELET_RESTRICTED_DOMAINS: Final = ("kubernetes.io", "k8s.io")
_UNREGISTERED: Final = Taint(key=TAINT_UNREGISTERED, effect="NoExecute")


def node_labels(
    nodeclaim: NodeClaim, nodeclass: EC2NodeClass, capacity_type: str
) -> dict[str, str]:
    """The labels a node registers with: the NodeClaim's and the capacity type (plus
    ``do-not-sync-taints`` but for Custom AMIs), less those a kubelet may not set."""
    labels = {**nodeclaim.metadata.labels, LABEL_CAPACITY_TYPE: capacity_type}
    if nodeclass.ami_family != "Custom":
        labels[LABEL_DO_NOT_SYNC_TAINTS] = "true"
    return {k: v for k, v in labels.items() if not _kubelet_restricted(k)}


def _kubelet_restricted(key: str) -> bool:
    domain = label_domain(key)
    return any(domain == d or domain.endswith(f".{d}") for d in _KUBELET_RESTRICTED_DOMAINS)


def registration_taints(nodeclaim: NodeClaim) -> tuple[Taint, ...]:
    """The NodeClaim's taints and startup taints, and ``karpenter.sh/unregistered``."""
    taints = (*nodeclaim.spec.taints, *nodeclaim.spec.startup_taints)
    if not any(t.key == _UNREGISTERED.key and t.effect == _UNREGISTERED.effect for t in taints):
        taints = (*taints, _UNREGISTERED)
    return tuple(Taint(key=t.key, effect=t.effect, value=t.value) for t in taints)


def instance_from_launch(
    launch: FleetLaunch, nodeclaim: NodeClaim, capacity_type: str, *, created: datetime
) -> Instance:
    """The `Instance` of a fresh launch, from the fleet's answer alone."""
    labels = {LABEL_INSTANCE_TYPE: launch.instance_type, LABEL_ZONE: launch.zone,
              LABEL_CAPACITY_TYPE: capacity_type}  # fmt: skip
    nodepool = nodeclaim.metadata.labels.get(LABEL_NODEPOOL)
    if nodepool:
        labels[LABEL_NODEPOOL] = nodepool
    return Instance(
        provider_id=provider_id(launch.zone, launch.instance_id),
        nodeclaim=nodeclaim.name,
        instance_type=launch.instance_type,
        zone=launch.zone,
        capacity_type=capacity_type,
        image_id=launch.image_id,
        labels=labels,
        created=created,
    )


def reservation_labels(nodeclass: EC2NodeClass, reservation_id: str) -> dict[str, str]:
    """The capacity reservation labels of a node launched into ``reservation_id``."""
    if not reservation_id:
        return {}
    labels = {LABEL_AWS_CAPACITY_RESERVATION_ID: reservation_id}
    for reservation in nodeclass.status.capacity_reservations:
        if reservation.id == reservation_id:
            labels[LABEL_AWS_CAPACITY_RESERVATION_TYPE] = reservation.reservation_type
            labels[LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE] = (
                "true" if reservation.interruptible else "false"
            )
    return labels
