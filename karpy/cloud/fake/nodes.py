"""An instance of the fake cloud *is* a Node object: how one is written and read back.

The Node is named after its NodeClaim and carries what a booting instance's kubelet would
register: the NodeClaim's labels and the values its single-valued requirements resolve to,
the instance type's and the offering's labels, the hostname, capacity and allocatable, a
``fake://<zone>/<name>`` provider ID, the ``karpenter.sh/unregistered`` taint (which
karpy's registration removes) and KWOK's ``kwok.x-k8s.io/node: fake`` label and
annotation, so a real cluster's KWOK controller would run it. Terminating the instance
labels the Node ``fake.karpy.dev/terminated`` and deletes it; from then on the instance
is gone for `FakeCloudProvider.get`, even while the Node waits for its finalizers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import (
    LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME,
    LABEL_INSTANCE_TYPE,
    LABEL_ZONE,
    TAINT_UNREGISTERED,
)
from karpy.apis.resources import format_resource_list
from karpy.cloud.provider import Instance

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.scheduling.instancetypes import InstanceType, Offering
    from karpy.state.records import NodeInfo

__all__ = [
    "NODECLAIM_ANNOTATION",
    "PREFIX",
    "TERMINATED_LABEL",
    "instance_from_node",
    "is_fake_instance",
    "node_for",
    "node_name_of",
    "provider_id",
]

PREFIX: Final = "fake://"
KWOK_KEY: Final = "kwok.x-k8s.io/node"
KWOK_VALUE: Final = "fake"
NODECLAIM_ANNOTATION: Final = "fake.karpy.dev/nodeclaim"
TERMINATED_LABEL: Final = "fake.karpy.dev/terminated"
PRICE_LABEL: Final = "eks-node-viewer/instance-price"  # what KWOK sets, for node viewers


def provider_id(zone: str, name: str) -> str:
    return f"{PREFIX}{zone}/{name}"


def node_name_of(provider_id_: str) -> str | None:
    """The Node name in a fake provider ID, or None when it is not one of ours."""
    if not provider_id_.startswith(PREFIX):
        return None
    _, _, name = provider_id_[len(PREFIX) :].rpartition("/")
    return name or None


def is_fake_instance(node: NodeInfo) -> bool:
    """Whether ``node`` is one the fake cloud wrote: its provider ID is ``fake://`` and
    names the Node itself, and it carries KWOK's label."""
    return (
        node_name_of(node.provider_id) == node.name and node.node.labels.get(KWOK_KEY) == KWOK_VALUE
    )


def instance_labels(it: InstanceType, offering: Offering) -> dict[str, str]:
    return {**it.labels(), **offering.labels}


def node_for(claim: NodeClaim, it: InstanceType, offering: Offering) -> dict[str, Any]:
    """The Node the instance of ``claim`` registers as."""
    labels = dict(claim.metadata.labels)
    labels.update(
        (r.key, r.values[0])
        for r in claim.spec.requirements
        if r.operator == "In" and len(r.values) == 1
    )
    labels.update(instance_labels(it, offering))
    labels.update({
        LABEL_HOSTNAME: claim.name,
        KWOK_KEY: KWOK_VALUE,
        PRICE_LABEL: f"{offering.price:f}",
    })  # fmt: skip
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": claim.name,
            "labels": labels,
            "annotations": {
                **claim.metadata.annotations,
                KWOK_KEY: KWOK_VALUE,
                NODECLAIM_ANNOTATION: claim.name,
            },
        },
        "spec": {
            "providerID": provider_id(offering.zone, claim.name),
            "taints": [{"key": TAINT_UNREGISTERED, "effect": "NoExecute"}],
        },
        "status": {
            "capacity": format_resource_list(it.capacity),
            "allocatable": format_resource_list(it.allocatable),
            "phase": "Pending",
        },
    }


def instance_from_node(
    node: NodeInfo, types: Mapping[str, InstanceType], *, terminating: bool
) -> Instance:
    """The instance a Node stands for, as the provider reports it."""
    labels = node.node.labels
    it = types.get(labels.get(LABEL_INSTANCE_TYPE, ""))
    zone = labels.get(LABEL_ZONE, "")
    capacity_type = labels.get(LABEL_CAPACITY_TYPE, "")
    cloud_labels = dict(it.labels()) if it is not None else {}
    cloud_labels.update({LABEL_ZONE: zone, LABEL_CAPACITY_TYPE: capacity_type})
    return Instance(
        provider_id=node.provider_id,
        nodeclaim=node.name,
        instance_type=it.name if it is not None else labels.get(LABEL_INSTANCE_TYPE, ""),
        zone=zone,
        capacity_type=capacity_type,
        labels=cloud_labels,
        capacity=dict(node.node.capacity),
        allocatable=dict(node.node.allocatable),
        created=node.creation_timestamp,
        terminating=terminating,
    )
