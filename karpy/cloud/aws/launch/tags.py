"""The EC2 tags karpy writes on what it launches, and the filters that find them again.

Tags are how a restarted controller recognises its own instances and launch templates:
every instance carries the cluster tag ``kubernetes.io/cluster/<cluster>=owned`` and
``eks:eks-cluster-name=<cluster>`` (garbage collection and `list` find the cluster's
instances by them), the NodePool and EC2NodeClass it came from, and the NodeClaim it was
launched for (the idempotency key of a launch: a second ``create`` for the same NodeClaim
finds the instance by this tag instead of launching another). The node class's own
``spec.tags`` come first so the keys Karpenter owns always win (the node class controller
also refuses classes that set them).

The same tags are karpy's proof of ownership: `owned_instance_filters` (what `list` and
garbage collection see) and `is_owned_instance` (checked again before any termination)
require the cluster tag with ``owned``, ``eks:eks-cluster-name`` with the cluster's name
and the NodePool, EC2NodeClass and NodeClaim tag keys, all of which every launch writes.
An instance of another cluster, of another karpy, or made by hand with only some of the
tags copied is never listed nor terminated.

Launch templates are shared by every NodeClaim of a node class with the same settings, so
they carry the class-level tags only, never the NodeClaim's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import LABEL_AWS_NODECLASS, LABEL_NODEPOOL

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.nodeclaim import NodeClaim

__all__ = [
    "TAG_EKS_CLUSTER_NAME",
    "TAG_NAME",
    "TAG_NODECLAIM",
    "TAG_NODECLASS",
    "TAG_NODEPOOL",
    "cluster_tag_key",
    "ec2_tags",
    "instance_tags",
    "is_owned_instance",
    "nodeclass_tags",
    "owned_instance_filters",
    "tag_filters",
    "tags_of",
]

TAG_NODEPOOL: Final = LABEL_NODEPOOL  # karpenter.sh/nodepool
TAG_NODECLAIM: Final = "karpenter.sh/nodeclaim"
TAG_NODECLASS: Final = LABEL_AWS_NODECLASS  # karpenter.k8s.aws/ec2nodeclass
TAG_EKS_CLUSTER_NAME: Final = "eks:eks-cluster-name"
TAG_NAME: Final = "Name"


def cluster_tag_key(cluster_name: str) -> str:
    """``kubernetes.io/cluster/<cluster>``, whose value ``owned`` marks the cluster's resources."""
    return f"kubernetes.io/cluster/{cluster_name}"


def nodeclass_tags(
    nodeclass: EC2NodeClass, cluster_name: str, nodepool: str | None = None
) -> dict[str, str]:
    """The tags of everything launched for ``nodeclass``: its ``spec.tags``, then the
    cluster, node class and (when known) NodePool tags, which win over the user's."""
    tags = dict(nodeclass.spec.tags)
    tags[cluster_tag_key(cluster_name)] = "owned"
    tags[TAG_EKS_CLUSTER_NAME] = cluster_name
    tags[TAG_NODECLASS] = nodeclass.name
    if nodepool is not None:
        tags[TAG_NODEPOOL] = nodepool
    return tags


def instance_tags(
    nodeclass: EC2NodeClass, nodeclaim: NodeClaim, cluster_name: str
) -> dict[str, str]:
    """`nodeclass_tags` plus the NodeClaim's name, for the instance and its volumes."""
    nodepool = nodeclaim.metadata.labels.get(LABEL_NODEPOOL, "")
    tags = nodeclass_tags(nodeclass, cluster_name, nodepool)
    tags[TAG_NODECLAIM] = nodeclaim.name
    return tags


def ec2_tags(tags: Mapping[str, str]) -> list[dict[str, str]]:
    """``[{"Key": k, "Value": v}]`` in key order (EC2's tag list form)."""
    return [{"Key": key, "Value": tags[key]} for key in sorted(tags)]


def tags_of(tag_list: Iterable[Mapping[str, Any]] | None) -> dict[str, str]:
    """EC2's tag list back into a dict."""
    return {str(t["Key"]): str(t.get("Value", "")) for t in tag_list or ()}


def tag_filters(tags: Mapping[str, str], *, keys: Iterable[str] = ()) -> list[dict[str, Any]]:
    """EC2 ``Filters`` matching resources that carry every one of ``tags`` (key and value)
    and every key of ``keys`` (any value)."""
    filters: list[dict[str, Any]] = [
        {"Name": f"tag:{key}", "Values": [tags[key]]} for key in sorted(tags)
    ]
    filters += [{"Name": "tag-key", "Values": [key]} for key in keys]
    return filters


# Tag keys every instance karpy launches carries, whatever their value.
OWNED_INSTANCE_KEYS: Final = (TAG_NODEPOOL, TAG_NODECLASS, TAG_NODECLAIM)


def owned_instance_tags(cluster_name: str) -> dict[str, str]:
    """The tag values that mark an instance as karpy's for ``cluster_name``."""
    return {cluster_tag_key(cluster_name): "owned", TAG_EKS_CLUSTER_NAME: cluster_name}


def owned_instance_filters(cluster_name: str) -> list[dict[str, Any]]:
    """EC2 ``Filters`` for the instances karpy launched for ``cluster_name``."""
    return tag_filters(owned_instance_tags(cluster_name), keys=OWNED_INSTANCE_KEYS)


def is_owned_instance(tags: Mapping[str, str], cluster_name: str) -> bool:
    """Whether ``tags`` (an instance's) carry everything `owned_instance_filters` asks."""
    wanted = owned_instance_tags(cluster_name)
    return (
        bool(cluster_name)
        and all(tags.get(k) == v for k, v in wanted.items())
        and all(tags.get(k) for k in OWNED_INSTANCE_KEYS)
    )
