# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Context "InstanceType VolumeAttachmentLimits"
(Karpenter #3202, v1.15): a new NodeClaim keeps only the instance types that can attach
the distinct claims of its pods, per CSI driver.

These Its are not in the commit the other parity tests were read at; their line numbers
in README.md are those of ``refs/pull/3202/head``. Every type reserves room for 1024 pods
and cpu, so only the volume limits decide how pods are packed.
"""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import provision
from tests.scheduling.parity.pools import suite_pool

CSI_PROVIDER = "fake.csi.provider"
LOCAL_CSI_PROVIDER = "local.csi.provider"
ROOMY = {"cpu": "1024", "pods": "1024"}
SMALLER = {"cpu": "16", "pods": "1024"}
WFFC = "WaitForFirstConsumer"


def _pool() -> dict[str, Any]:
    """The suite's pool without its cpu limit, as in Describe "VolumeUsage"."""
    return suite_pool(limits=None)


def _catalog(*types: tuple[str, dict[str, str], dict[str, int]]) -> dict[str, Any]:
    return cat.catalog(
        cat.instance_type(name, resources=resources, volume_attachment_limits=limits)
        for name, resources, limits in types
    )


LIMITED = _catalog(("limited-instance-type", ROOMY, {CSI_PROVIDER: 10}))


def _class(name: str = "my-storage-class", provisioner: str = CSI_PROVIDER) -> dict[str, Any]:
    return f.storage_class(
        name, provisioner=provisioner, volume_binding_mode=WFFC, zones=["test-zone-1"]
    )


def _claims(*names: str, storage_class: str = "my-storage-class") -> list[dict[str, Any]]:
    return [f.persistent_volume_claim(n, storage_class_name=storage_class) for n in names]


def _one_claim_each(count: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    names = [f"my-claim-{i}" for i in range(count)]
    return _claims(*names), [f.unschedulable_pod(pvcs=[n]) for n in names]


def test_one_round_launches_a_node_per_ten_claims() -> None:
    # It: InstanceType VolumeAttachmentLimits / should launch enough nodes for all pods in a single scheduling loop
    claims, pods = _one_claim_each(100)
    done = provision(_pool(), _class(), claims, pods, catalog=LIMITED)
    # 10 attachments per node: 100 pods with one claim each need 10 nodes, all this round
    assert len(done.nodes()) == 10
    assert all(done.scheduled(p) for p in pods)


def test_every_claim_of_a_pod_counts_against_the_limit() -> None:
    # It: InstanceType VolumeAttachmentLimits / should account for pods with multiple volumes
    claims, pods = [], []
    for i in range(6):
        names = (f"my-claim-a-{i}", f"my-claim-b-{i}")
        claims += _claims(*names)
        pods.append(f.unschedulable_pod(pvcs=list(names)))
    done = provision(_pool(), _class(), claims, pods, catalog=LIMITED)
    # a node holds 5 of the 6 pods (10 claims)
    assert len(done.nodes()) == 2


def test_a_claim_shared_by_many_pods_counts_once() -> None:
    # It: InstanceType VolumeAttachmentLimits / should count each PVC once when shared by multiple pods
    pods = f.unschedulable_pods(100, pvcs=["my-claim"])
    done = provision(_pool(), _class(), _claims("my-claim"), pods, catalog=LIMITED)
    assert len(done.nodes()) == 1


def test_a_limit_for_another_driver_does_not_limit_these_claims() -> None:
    # It: InstanceType VolumeAttachmentLimits / should not limit volumes for drivers without a declared limit
    other = _catalog(("instance-type", ROOMY, {"other.csi.provider": 1}))
    claims, pods = _one_claim_each(20)
    done = provision(_pool(), _class(), claims, pods, catalog=other)
    assert len(done.nodes()) == 1


def test_a_pod_past_every_types_limit_is_not_scheduled() -> None:
    # It: InstanceType VolumeAttachmentLimits / should not schedule pods which exceed the volume limits of every instance type
    names = [f"my-claim-{i}" for i in range(11)]
    pod = f.unschedulable_pod(pvcs=names)
    done = provision(_pool(), _class(), _claims(*names), pod, catalog=LIMITED)
    reason = done.not_scheduled(pod)
    # karpy names the limit (Karpenter's It checks only that the pod is not scheduled)
    assert "volume attachment limit" in reason
    assert CSI_PROVIDER in reason


def test_types_that_cannot_attach_the_pods_claims_are_filtered_out() -> None:
    # It: InstanceType VolumeAttachmentLimits / should filter out instance types which cannot support the pod's volumes
    catalog = _catalog(
        ("small-limit", SMALLER, {CSI_PROVIDER: 2}),  # cheaper, but attaches too few
        ("large-limit", ROOMY, {CSI_PROVIDER: 20}),
    )
    names = [f"my-claim-{i}" for i in range(5)]
    pod = f.unschedulable_pod(pvcs=names)
    done = provision(_pool(), _class(), _claims(*names), pod, catalog=catalog)
    assert done.node(pod).instance_type == "large-limit"


def test_the_limits_of_every_driver_must_hold() -> None:
    # It: InstanceType VolumeAttachmentLimits / should filter out instance types which cannot support all of the pod's volumes across multiple CSI drivers
    catalog = _catalog(
        ("partial-support", SMALLER, {CSI_PROVIDER: 10, LOCAL_CSI_PROVIDER: 1}),
        ("full-support", ROOMY, {CSI_PROVIDER: 10, LOCAL_CSI_PROVIDER: 10}),
    )
    classes = [_class(), _class("local-storage-class", LOCAL_CSI_PROVIDER)]
    claims, names = [], []
    for i in range(2):
        claims += _claims(f"my-claim-{i}")
        claims += _claims(f"my-local-claim-{i}", storage_class="local-storage-class")
        names += [f"my-claim-{i}", f"my-local-claim-{i}"]
    pod = f.unschedulable_pod(pvcs=names)
    done = provision(_pool(), classes, claims, pod, catalog=catalog)
    assert done.node(pod).instance_type == "full-support"
