"""Existing capacity: Nodes paired with the NodeClaims that launched them."""

from __future__ import annotations

from typing import Any

from karpy.apis.nodeclaim import NodeClaim
from karpy.scheduling.nodes import cluster_nodes, node_from_dict
from tests import factories as f

STARTUP = f.taint("example.com/agent-not-ready")
NOT_READY = f.taint("node.kubernetes.io/not-ready")


def claim(name: str, **options: Any) -> NodeClaim:
    return NodeClaim.from_dict(
        f.nodeclaim(
            name, nodepool="default", capacity={"cpu": "4"}, allocatable={"cpu": "3"}, **options
        )
    )


def test_a_nodeclaim_without_a_node_is_in_flight_capacity() -> None:
    (node,) = cluster_nodes([], [claim("nc-1", labels={"zone": "a"})])
    assert node.name == "nc-1"
    assert node.managed and not node.initialized and not node.has_node
    assert node.allocatable == {"cpu": 3000}
    assert node.capacity == {"cpu": 4000}
    assert node.nodepool == "default"


def test_a_node_pairs_with_its_claim_by_provider_id() -> None:
    node = node_from_dict(
        f.node(
            "ip-1",
            provider_id="fake:///nc-1",
            labels={"karpenter.sh/registered": "true", "karpenter.sh/initialized": "true"},
            allocatable={"cpu": "3500m"},
        )
    )
    (paired,) = cluster_nodes([node], [claim("nc-1")])
    assert paired.name == "ip-1"
    assert paired.initialized and paired.has_node
    assert paired.allocatable == {"cpu": 3500}


def test_an_uninitialized_managed_node_hides_startup_and_ephemeral_taints() -> None:
    node = node_from_dict(
        f.node(
            "ip-1",
            provider_id="fake:///nc-1",
            labels={"karpenter.sh/registered": "true"},
            taints=[STARTUP, NOT_READY, f.taint("dedicated", "x")],
        )
    )
    (paired,) = cluster_nodes([node], [claim("nc-1", startup_taints=[STARTUP])])
    assert [t.key for t in paired.taints] == ["dedicated"]


def test_an_unmanaged_node_keeps_every_taint_and_counts_as_initialized() -> None:
    (node,) = cluster_nodes([node_from_dict(f.node("n", taints=[NOT_READY]))], [])
    assert node.initialized and not node.managed
    assert [t.key for t in node.taints] == ["node.kubernetes.io/not-ready"]


def test_a_cordoned_node_carries_the_unschedulable_taint() -> None:
    node = node_from_dict(f.node("n", unschedulable=True))
    assert any(t.key == "node.kubernetes.io/unschedulable" for t in node.taints)


def test_deleting_or_disrupted_nodes_are_marked_for_deletion() -> None:
    deleting = node_from_dict(f.node("a", deletion_timestamp="2024-01-01T00:00:00Z"))
    disrupted = node_from_dict(f.node("b", taints=[f.taint("karpenter.sh/disrupted")]))
    nodes = cluster_nodes([deleting, disrupted, node_from_dict(f.node("c"))], [])
    assert [n.marked_for_deletion for n in nodes] == [True, True, False]
