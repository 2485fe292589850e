# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go: "Existing Nodes" and "No Pre-Binding".

"No Pre-Binding" Its provision without binding, so the first round's pod is still
pending when the second round runs; the snapshot here holds that pod pending next to
the node the first round launched.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import INITIALIZED, REGISTERED, ZONE, launched, provision
from tests.scheduling.parity.pools import suite_pool

req = f.match_expression
TINY = {"cpu": "10m"}
NODECLASS_LABEL = {"karpenter.k8s.aws/ec2nodeclass": "default"}


def _unmanaged_initialized_node(**allocatable: str) -> dict[str, Any]:
    labels = {REGISTERED: "true", INITIALIZED: "true"}
    return f.node(labels=labels, allocatable=allocatable)


def _claim_and_node(
    allocatable: dict[str, str], *, initialized: bool = True
) -> list[dict[str, Any]]:
    """Karpenter's ``NodeClaimAndNode``: a claim and its node with no pool or zone labels."""
    name = f.unique_name("node")
    labels = dict(NODECLASS_LABEL)
    node_labels = {**labels, REGISTERED: "true"}
    if initialized:
        node_labels[INITIALIZED] = "true"
    return [
        f.nodeclaim(
            name,
            labels=labels,
            node_name=name,
            capacity=allocatable,
            allocatable=allocatable,
            registered=True,
            initialized=initialized,
        ),
        f.node(name, labels=node_labels, allocatable=allocatable, provider_id=f"fake:///{name}"),
    ]


def test_pod_goes_to_an_unmanaged_node_with_room() -> None:
    # It: Existing Nodes / should schedule a pod to an existing node unowned by Karpenter
    node = _unmanaged_initialized_node(cpu="10", memory="10Gi", pods="110")
    pod = f.unschedulable_pod(requests=TINY, limits=TINY)
    assert provision(node, suite_pool(), pod).node(pod).name == node["metadata"]["name"]


def test_many_pods_go_to_an_unmanaged_node_with_room() -> None:
    # It: Existing Nodes / should schedule multiple pods to an existing node unowned by Karpenter
    node = _unmanaged_initialized_node(cpu="10", memory="100Gi", pods="110")
    pods = f.unschedulable_pods(100, requests=TINY, limits=TINY)
    done = provision(node, suite_pool(), pods)
    assert done.node_names(pods) == {node["metadata"]["name"]}


@pytest.mark.parametrize("position", [0, 50, 99], ids=["first", "middle", "last"])
def test_initialized_node_is_tried_before_uninitialized_ones(position: int) -> None:
    # It: Existing Nodes / should order initialized nodes for scheduling uninitialized nodes
    # The It initializes one of 100 registered nodes picked at random. Here it is first,
    # in the middle or last in the snapshot, and its name sorts after every other node's,
    # so neither input order nor the by-name tie-break can pick it: only trying
    # initialized nodes first does.
    pool = suite_pool()
    nodes = [launched(pool, "small-instance-type", name=f"node-{i:02d}") for i in range(99)]
    claim, ready = launched(pool, "small-instance-type", name="node-zz", initialized=True)
    nodes.insert(position, [claim, ready])
    pod = f.unschedulable_pod()
    assert provision(pool, *nodes, pod).node(pod).name == ready["metadata"]["name"]


@pytest.mark.parametrize("with_pool", [False, True], ids=["no-nodepool", "with-nodepool"])
def test_pod_incompatible_with_the_existing_node_needs_a_pool(with_pool: bool) -> None:
    # It: Existing Nodes / should consider a pod incompatible with an existing node but compatible with NodePool
    existing = _claim_and_node({"cpu": "10", "memory": "10Gi", "pods": "110"})
    pod = f.unschedulable_pod(node_requirements=[req(ZONE, "In", ["test-zone-1"])])
    pools = [suite_pool()] if with_pool else []
    done = provision(existing, pools, pod)
    if with_pool:
        done.node(pod)
    else:
        done.not_scheduled(pod)


@pytest.mark.parametrize("round_", [1, 2], ids=["first-pod", "second-pod"])
def test_daemonset_not_strictly_compatible_with_a_node_reserves_nothing_there(round_: int) -> None:
    # It: Existing Nodes / Daemonsets / should not subtract daemonset overhead that is not strictly compatible with an existing node
    # The node has no zone label, so the zone-1 daemonset cannot run there; on any new node
    # it would take 100 cpu, so the second pod has nowhere to go.
    existing = _claim_and_node({"cpu": "1", "memory": "1Gi", "pods": "110"})
    name = existing[1]["metadata"]["name"]
    ds = f.daemonset(
        template=f.pod(
            requests={"cpu": "100", "memory": "100Gi"},
            node_requirements=[req(ZONE, "In", ["test-zone-1"])],
        )
    )
    resources = {"cpu": "1", "memory": "1Gi"}
    bound = [f.pod(requests=resources, node_name=name)] if round_ == 2 else []
    pod = f.unschedulable_pod(requests=resources)
    done = provision(suite_pool(), existing, ds, bound, pod)
    if round_ == 1:
        assert done.node(pod).name == name
    else:
        done.not_scheduled(pod)


# --- No Pre-Binding -----------------------------------------------------------------------


def test_unbound_pods_reuse_the_node_launched_for_them() -> None:
    # It: No Pre-Binding / should not bind pods to nodes
    pool = suite_pool()
    in_flight = launched(pool, "small-instance-type")
    pods = f.unschedulable_pods(2, limits=TINY)
    done = provision(pool, in_flight, pods)
    assert done.new_claims == []
    assert done.node_names(pods) == {in_flight[1]["metadata"]["name"]}


def test_extended_resources_zeroed_by_kubelet_fall_back_to_the_claim() -> None:
    # It: No Pre-Binding / should handle resource zeroing of extended resources by kubelet
    pool = suite_pool()
    claim, node = launched(pool, "gpu-vendor-instance-type")
    node["status"]["capacity"] = {cat.GPU_VENDOR_A: "0"}
    node["status"]["allocatable"] = {cat.GPU_VENDOR_B: "0"}
    pods = f.unschedulable_pods(2, limits={"cpu": "10m", cat.GPU_VENDOR_A: "1"})
    done = provision(pool, claim, node, pods)
    assert done.new_claims == []
    assert done.node_names(pods) == {node["metadata"]["name"]}


def test_self_affine_pods_follow_the_in_flight_node_zone() -> None:
    # It: No Pre-Binding / should respect self pod affinity without pod binding (zone)
    pool = suite_pool()
    in_flight = launched(pool, "small-instance-type")
    labels = {"security": "s2"}
    pods = f.unschedulable_pods(
        2, labels=labels, pod_affinity=[f.pod_affinity_term(ZONE, match_labels=labels)]
    )
    done = provision(pool, in_flight, pods)
    assert done.new_claims == []
    assert done.node_names(pods) == {in_flight[1]["metadata"]["name"]}
