# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "VolumeUsage".

The context runs on one roomy instance type (1024 cpu, 1024 pods) with no pool limits.
Its that register CSINode volume limits are in test_suite_volume_limits.py; those that
depend on Karpenter's test-only lists of unsupported provisioners and topology keys are
skipped (README.md).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import HOSTNAME, ZONE, launched, provision
from tests.scheduling.parity.pools import suite_pool

req = f.match_expression
ROOMY = cat.catalog([cat.instance_type("instance-type", resources={"cpu": "1024", "pods": "1024"})])
APP = {"app": "multi-zone-app"}


def _pool() -> dict[str, Any]:
    return suite_pool(limits=None)


def _zone_anti_affinity() -> list[dict[str, Any]]:
    return [f.pod_affinity_term(ZONE, match_labels=APP)]


def _ephemeral_pod(storage_class_name: str | None = None) -> tuple[dict[str, Any], str]:
    """A pending pod with one generic ephemeral volume, and the name of its claim."""
    volume = f.ephemeral_volume("tmp-ephemeral", storage_class_name=storage_class_name)
    pod = f.unschedulable_pod(volumes=[volume])
    return pod, f"{pod['metadata']['name']}-tmp-ephemeral"


def test_pods_sharing_one_claim_share_the_in_flight_node() -> None:
    # It: VolumeUsage / should launch a single node if all pods use the same PVC
    # (The It also registers a CSINode volume limit of 10; one shared claim stays under it.)
    pool = _pool()
    claim, node = launched(pool, "instance-type", catalog=ROOMY)
    first = f.pod(node_name=node["metadata"]["name"])
    sc = f.storage_class("my-storage-class", provisioner="fake.csi.provider", zones=["test-zone-1"])
    pv = f.persistent_volume("my-volume", zones=["test-zone-1"])
    pvc = f.persistent_volume_claim(
        "my-claim", storage_class_name="my-storage-class", volume_name="my-volume"
    )
    pods = f.unschedulable_pods(100, pvcs=["my-claim"])
    done = provision(pool, claim, node, first, sc, pv, pvc, pods, catalog=ROOMY)
    assert done.new_claims == []
    assert done.node_names(pods) == {node["metadata"]["name"]}


def test_nfs_volumes_do_not_get_in_the_way() -> None:
    # It: VolumeUsage / should not fail for NFS volumes
    pool = _pool()
    claim, node = launched(pool, "instance-type", catalog=ROOMY)
    first = f.pod(node_name=node["metadata"]["name"])
    pv = f.persistent_volume(
        "my-volume", source="nfs", storage_class_name="nfs", zones=["test-zone-1"]
    )
    pvc = f.persistent_volume_claim("my-claim", volume_name="my-volume", storage_class_name="")
    pods = f.unschedulable_pods(5, pvcs=["my-claim", "my-claim"])
    done = provision(pool, claim, node, first, pv, pvc, pods, catalog=ROOMY)
    assert done.new_claims == []
    assert done.node_names(pods) == {node["metadata"]["name"]}


def test_volume_zones_from_ored_node_selector_terms_are_all_usable() -> None:
    # It: VolumeUsage / should schedule pods using a PV with multiple zones
    terms = [[req(ZONE, "In", ["test-zone-1"])], [req(ZONE, "In", ["test-zone-2"])]]
    objects: list[dict[str, Any]] = []
    pods = []
    for i in range(2):
        pv = f.persistent_volume(f"multi-zone-pv-{i}", node_selector_terms=terms)
        pvc = f.persistent_volume_claim(f"multi-zone-pvc-{i}", volume_name=pv["metadata"]["name"])
        pod = f.unschedulable_pod(
            f"pod-{i}",
            labels=APP,
            pvcs=[pvc["metadata"]["name"]],
            pod_anti_affinity=_zone_anti_affinity(),
        )
        objects += [pv, pvc]
        pods.append(pod)
    done = provision(_pool(), objects, pods, catalog=ROOMY)
    zones = [done.node(p).zone for p in pods]
    assert set(zones) <= {"test-zone-1", "test-zone-2"}
    assert zones[0] != zones[1]


@pytest.mark.parametrize("source", ["local", "hostPath"], ids=["local", "hostpath"])
def test_volume_alternative_left_after_ignoring_hostname_affinity_is_kept(source: str) -> None:
    # DescribeTable: VolumeUsage / should preserve unconstrained PV alternatives after ignoring hostname affinity
    terms = [[req(HOSTNAME, "In", ["existing-host"])], [req(ZONE, "In", ["invalid-zone"])]]
    pv = f.persistent_volume("hostname-or-zone-pv", source=source, node_selector_terms=terms)
    pvc = f.persistent_volume_claim("hostname-or-zone-pvc", volume_name="hostname-or-zone-pv")
    pod = f.unschedulable_pod("hostname-or-zone-pod", pvcs=["hostname-or-zone-pvc"])
    provision(_pool(), pv, pvc, pod, catalog=ROOMY).node(pod)


def test_storage_class_topologies_are_ored() -> None:
    # It: VolumeUsage / should schedule pods using a StorageClass with multiple zones in AllowedTopologies
    sc = f.storage_class(
        "multi-zone-sc",
        volume_binding_mode="WaitForFirstConsumer",
        allowed_topologies=[{ZONE: ["test-zone-1"]}, {ZONE: ["test-zone-2"]}],
    )
    objects: list[dict[str, Any]] = [sc]
    pods = []
    for i in range(2):
        pvc = f.persistent_volume_claim(f"multi-zone-pvc-{i}", storage_class_name="multi-zone-sc")
        objects.append(pvc)
        pods.append(
            f.unschedulable_pod(
                f"sc-pod-{i}",
                labels={"app": "multi-zone-sc-app"},
                pvcs=[pvc["metadata"]["name"]],
                pod_anti_affinity=[
                    f.pod_affinity_term(ZONE, match_labels={"app": "multi-zone-sc-app"})
                ],
            )
        )
    done = provision(_pool(), objects, pods, catalog=ROOMY)
    zones = [done.node(p).zone for p in pods]
    assert set(zones) <= {"test-zone-1", "test-zone-2"}
    assert zones[0] != zones[1]


def test_volumes_keep_the_one_topology_alternative_they_share() -> None:
    # It: VolumeUsage / should schedule pods when a valid multi-volume topology alternative remains after pruning disjoint branches
    sc_a = f.storage_class(
        "pruned-overlap-a",
        volume_binding_mode="WaitForFirstConsumer",
        allowed_topologies=[{cat.SPECIAL: ["required"]}, {cat.SPECIAL: ["optional"]}],
    )
    sc_b = f.storage_class(
        "pruned-overlap-b",
        volume_binding_mode="WaitForFirstConsumer",
        allowed_topologies=[
            {ZONE: ["test-zone-1"], cat.SPECIAL: ["optional"]},
            {ZONE: ["test-zone-2"], cat.SPECIAL: ["required"]},
        ],
    )
    pvc_a = f.persistent_volume_claim("pruned-overlap-pvc-a", storage_class_name="pruned-overlap-a")
    pvc_b = f.persistent_volume_claim("pruned-overlap-pvc-b", storage_class_name="pruned-overlap-b")
    pod = f.unschedulable_pod(
        "pruned-overlap-pod", pvcs=["pruned-overlap-pvc-a", "pruned-overlap-pvc-b"]
    )
    done = provision(
        _pool(), sc_a, sc_b, pvc_a, pvc_b, pod, catalog=cat.catalog(cat.instance_types(5))
    )
    node = done.node(pod)
    assert node.zone == "test-zone-1"
    assert node.labels[cat.SPECIAL] == "optional"


def _other_provider_class(binding_mode: str = "WaitForFirstConsumer") -> dict[str, Any]:
    return f.storage_class(
        "default-storage-class",
        provisioner="other-provider",
        volume_binding_mode=binding_mode,
        zones=["test-zone-1"],
    )


def test_unbound_claim_of_an_immediate_binding_class_blocks_the_pod() -> None:
    # It: VolumeUsage / should not launch nodes for pod with unbound volume for volumeBindingMode immediate
    sc = _other_provider_class("Immediate")
    pvc = f.persistent_volume_claim("tmp-ephemeral", storage_class_name="default-storage-class")
    pod = f.unschedulable_pod(pvcs=["tmp-ephemeral"])
    provision(_pool(), sc, pvc, pod, catalog=ROOMY).not_scheduled(pod)


def test_claim_being_deleted_blocks_the_pod() -> None:
    # It: VolumeUsage / should not launch nodes for pod with deleting persistentVolumeClaim
    pvc = f.persistent_volume_claim(
        "tmp-ephemeral",
        storage_class_name="default-storage-class",
        deletion_timestamp=f.SOME_TIME,
        finalizers=["kubernetes.io/pvc-protection"],
    )
    pod = f.unschedulable_pod(pvcs=["tmp-ephemeral"])
    provision(_pool(), _other_provider_class(), pvc, pod, catalog=ROOMY).not_scheduled(pod)


def test_bound_volume_being_deleted_blocks_the_pod() -> None:
    # It: VolumeUsage / should not launch nodes for pod with bound persistentVolume that is marked for deletion
    pod, claim_name = _ephemeral_pod()
    pv = f.persistent_volume(
        driver="other-provider",
        deletion_timestamp=f.SOME_TIME,
        finalizers=["kubernetes.io/pv-protection"],
    )
    pvc = f.persistent_volume_claim(claim_name, volume_name=pv["metadata"]["name"])
    assert provision(_pool(), pvc, pv, pod, catalog=ROOMY).new_claims == []


def test_lost_claim_blocks_the_pod() -> None:
    # It: VolumeUsage / should not launch nodes for pod with Lost persistentVolumeClaim
    pvc = f.persistent_volume_claim(
        "tmp-ephemeral", storage_class_name="default-storage-class", phase="Lost"
    )
    pod = f.unschedulable_pod(pvcs=["tmp-ephemeral"])
    provision(_pool(), _other_provider_class(), pvc, pod, catalog=ROOMY).not_scheduled(pod)


@pytest.mark.parametrize(
    "bind_completed",
    [False, True],
    ids=["when pv.kubernetes.io/bind-completed is missing", "when it is present"],
)
def test_claim_naming_a_volume_counts_as_bound_only_once_binding_completed(
    bind_completed: bool,
) -> None:
    # DescribeTable: VolumeUsage / should handle pods with PVCs with defined volumeName
    pv = f.persistent_volume(driver="other-provider")
    pvc = f.persistent_volume_claim(
        "tmp-ephemeral",
        volume_name=pv["metadata"]["name"],
        storage_class_name="default-storage-class",
        bind_completed=bind_completed,
    )
    pod = f.unschedulable_pod(pvcs=["tmp-ephemeral"])
    done = provision(_pool(), _other_provider_class(), pvc, pv, pod, catalog=ROOMY)
    if bind_completed:
        done.node(pod)
    else:
        done.not_scheduled(pod)


@pytest.mark.parametrize("class_name", ["non-existent", ""], ids=["non-existent", "empty"])
def test_bound_ephemeral_claim_without_a_usable_class_still_schedules(class_name: str) -> None:
    # DescribeTable: VolumeUsage / should launch nodes for pods with ephemeral volume without a storage class when the PVC is bound
    pod, claim_name = _ephemeral_pod(class_name)
    pvc = f.persistent_volume_claim(
        claim_name, storage_class_name=class_name, volume_name="test-pv"
    )
    pv = f.persistent_volume("test-pv")
    assert len(provision(_pool(), pvc, pv, pod, catalog=ROOMY).new_claims) == 1


@pytest.mark.parametrize("class_name", ["non-existent", ""], ids=["non-existent", "empty"])
def test_unbound_ephemeral_claim_without_a_usable_class_blocks_the_pod(class_name: str) -> None:
    # DescribeTable: VolumeUsage / should not launch nodes for pods with ephemeral volume without a storage class when the PVC is unbound
    pod, _ = _ephemeral_pod(class_name)
    assert provision(_pool(), pod, catalog=ROOMY).new_claims == []
