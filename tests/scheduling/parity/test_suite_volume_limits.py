# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "VolumeUsage": the Its that register a
CSINode volume attach limit on the node an earlier round launched.

Each It launches one node for a first pod, registers a CSINode for it, then provisions
again; the snapshot here holds that state directly (the in-flight node, the bound first
pod and the CSINode). Claims that name no StorageClass get the default class, as the API
server's DefaultStorageClass admission gives them in Karpenter's envtest cluster.
"""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import launched, provision
from tests.scheduling.parity.pools import suite_pool

ROOMY = cat.catalog([cat.instance_type("instance-type", resources={"cpu": "1024", "pods": "1024"})])
CSI_PROVIDER = "fake.csi.provider"
EBS_IN_TREE = "kubernetes.io/aws-ebs"
EBS_CSI = "ebs.csi.aws.com"
WFFC = "WaitForFirstConsumer"
EPHEMERAL = "tmp-ephemeral"


def _pool() -> dict[str, Any]:
    return suite_pool(limits=None)


def _class(name: str, provisioner: str, **options: Any) -> dict[str, Any]:
    return f.storage_class(
        name, provisioner=provisioner, volume_binding_mode=WFFC, zones=["test-zone-1"], **options
    )


def _in_flight(
    pool: dict[str, Any], limits: dict[str, int], **pod_options: Any
) -> tuple[list[dict[str, Any]], str]:
    """The first round's node with its bound pod and CSINode, and the node's name."""
    claim, node = launched(pool, "instance-type", catalog=ROOMY)
    name = node["metadata"]["name"]
    first = f.pod(node_name=name, **pod_options)
    return [claim, node, first, f.csi_node(name, limits)], name


def _ephemeral_pod(
    template_class: str | None, claim_class: str | None, *, node_name: str | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A pod with one generic ephemeral volume, and its claim as the It creates it.

    ``template_class`` is the class the volume's claim template names and ``claim_class``
    the one the claim object names (``None``: omitted).
    """
    volume = f.ephemeral_volume(EPHEMERAL, storage_class_name=template_class)
    if node_name is None:
        pod = f.unschedulable_pod(volumes=[volume])
    else:
        pod = f.pod(volumes=[volume], node_name=node_name)
    claim = f.persistent_volume_claim(
        f"{pod['metadata']['name']}-{EPHEMERAL}", storage_class_name=claim_class
    )
    return pod, claim


def _ephemeral_round(
    classes: list[dict[str, Any]],
    limits: dict[str, int],
    template_class: str | None,
    claim_class: str | None,
) -> None:
    """Both pods use one ephemeral volume; a limit of 1 sends the second to a new node."""
    pool = _pool()
    claim, node = launched(pool, "instance-type", catalog=ROOMY)
    name = node["metadata"]["name"]
    first, first_claim = _ephemeral_pod(template_class, claim_class, node_name=name)
    pod, pod_claim = _ephemeral_pod(template_class, claim_class)
    done = provision(
        pool,
        classes,
        claim,
        node,
        first,
        first_claim,
        f.csi_node(name, limits),
        pod,
        pod_claim,
        catalog=ROOMY,
    )
    assert done.node(pod).name != name


def test_pods_past_the_volume_limit_need_another_node() -> None:
    # It: VolumeUsage / should launch multiple nodes if required due to volume limits
    pool = _pool()
    in_flight, _ = _in_flight(pool, {CSI_PROVIDER: 10})
    sc = _class("my-storage-class", CSI_PROVIDER)
    claims, pods = [], []
    for i in range(6):
        names = [f"my-claim-a-{i}", f"my-claim-b-{i}"]
        claims += [
            f.persistent_volume_claim(n, storage_class_name="my-storage-class") for n in names
        ]
        pods.append(f.unschedulable_pod(pvcs=names))
    done = provision(pool, in_flight, sc, claims, pods, catalog=ROOMY)
    # the in-flight node takes 5 pods (10 volumes); the sixth needs a second node
    assert len(done.nodes()) == 2


def test_ephemeral_volume_uses_the_class_it_names() -> None:
    # It: VolumeUsage / should launch nodes for pods with ephemeral volume using the specified storage class name
    classes = [
        _class("my-storage-class", CSI_PROVIDER),
        _class("default-storage-class", "other-provider", default=True),
    ]
    _ephemeral_round(
        classes, {CSI_PROVIDER: 1, "other-provider": 10}, "my-storage-class", "my-storage-class"
    )


def test_ephemeral_volume_without_a_class_uses_the_default_class() -> None:
    # It: VolumeUsage / should launch nodes for pods with ephemeral volume using a default storage class
    classes = [_class("default-storage-class", CSI_PROVIDER, default=True)]
    _ephemeral_round(classes, {CSI_PROVIDER: 1}, None, None)


def test_ephemeral_volume_without_a_class_uses_the_newest_default_class() -> None:
    # It: VolumeUsage / should launch nodes for pods with ephemeral volume using the newest storage class
    classes = [
        _class(
            "default-storage-class",
            "other-provider",
            default=True,
            creation_timestamp="2026-01-01T00:00:00Z",
        ),
        _class(
            "newer-default-storage-class",
            CSI_PROVIDER,
            default=True,
            creation_timestamp="2026-01-01T00:00:02Z",
        ),
    ]
    _ephemeral_round(classes, {CSI_PROVIDER: 1, "other-provider": 10}, None, None)


def test_claims_of_a_migrated_in_tree_class_count_against_the_csi_limit() -> None:
    # It: VolumeUsage / CSIMigration / should launch nodes for pods with non-dynamic PVC using a migrated PVC/PV
    pool = _pool()
    sc = _class("in-tree-storage-class", EBS_IN_TREE, default=True)
    first_claim = f.persistent_volume_claim(
        "first-claim", storage_class_name=sc["metadata"]["name"]
    )
    in_flight, name = _in_flight(pool, {EBS_CSI: 1}, pvcs=["first-claim"])
    pv = f.persistent_volume("my-volume", source="awsElasticBlockStore", zones=["test-zone-1"])
    claim = f.persistent_volume_claim("second-claim", storage_class_name=sc["metadata"]["name"])
    pod = f.unschedulable_pod(pvcs=["second-claim"])
    done = provision(pool, sc, first_claim, in_flight, pv, claim, pod, catalog=ROOMY)
    assert done.node(pod).name != name


def test_ephemeral_claims_of_a_migrated_in_tree_class_count_against_the_csi_limit() -> None:
    # It: VolumeUsage / CSIMigration / should launch nodes for pods with ephemeral volume using a migrated PVC/PV
    classes = [_class("in-tree-storage-class", EBS_IN_TREE, default=True)]
    # the claims name no class: admission gives them the (in-tree) default
    _ephemeral_round(classes, {EBS_CSI: 1}, "in-tree-storage-class", None)
