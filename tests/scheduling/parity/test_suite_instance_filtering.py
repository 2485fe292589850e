# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go: "NodePool requirements instance filtering" and
"Offering Overrides".

Karpenter's filtering Its check for the phrase "nodepool requirements filtered out all
available instance types"; karpy words its reasons its own way, so these tests check
that the pod is unschedulable and that the reason is about instance types.
"""

from __future__ import annotations

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import ARCH, INSTANCE_TYPE, ZONE, launched, provision
from tests.scheduling.parity.pools import suite_pool

pool_req = f.nodepool_requirement
CAPACITY_TYPE = "karpenter.sh/capacity-type"
ALL_CAPACITY_TYPES = pool_req(CAPACITY_TYPE, "In", ["spot", "on-demand", "reserved"])


def _mentions_instance_types(reason: str) -> bool:
    return "instance type" in reason.lower() or "instance-type" in reason.lower()


def test_pool_requiring_a_missing_instance_type_reports_it() -> None:
    # It: NodePool requirements instance filtering / should return appropriate pod error when no available instance types exist
    # The first round scheduled a plain pod (to the cheapest type); then the pool was
    # narrowed to a type that does not exist and a pod too big for that node arrived.
    pool = suite_pool(
        requirements=[
            ALL_CAPACITY_TYPES,
            pool_req(INSTANCE_TYPE, "In", ["non-existent-instance-type"]),
        ]
    )
    claim, node = launched(pool, "small-instance-type")
    earlier = f.pod(node_name=node["metadata"]["name"])
    big = {"cpu": "32", "memory": "256Gi"}
    pod = f.unschedulable_pod("test-pod-filtered", requests=big, limits=big)
    reason = provision(pool, claim, node, earlier, pod).not_scheduled(pod)
    assert _mentions_instance_types(reason), reason


def test_every_pod_reports_a_pool_whose_arch_matches_no_type() -> None:
    # It: NodePool requirements instance filtering / should handle multiple pods when requirements filter out all instance types
    pool = suite_pool(
        requirements=[ALL_CAPACITY_TYPES, pool_req(ARCH, "In", ["non-existent-arch"])]
    )
    pods = [f.unschedulable_pod(f"pod-{i}") for i in range(1, 4)]
    done = provision(pool, pods)
    for pod in pods:
        reason = done.not_scheduled(pod)
        assert _mentions_instance_types(reason), reason


def test_pool_with_contradicting_requirements_reports_it() -> None:
    # It: NodePool requirements instance filtering / should handle conflicting requirements that eliminate all instance types
    pool = suite_pool(
        requirements=[
            ALL_CAPACITY_TYPES,
            pool_req(ARCH, "In", ["amd64"]),
            pool_req(ARCH, "In", ["arm64"]),
        ]
    )
    pod = f.unschedulable_pod("conflicting-requirements-pod")
    reason = provision(pool, pod).not_scheduled(pod)
    assert _mentions_instance_types(reason), reason


def test_pool_in_zones_no_type_offers_reports_it() -> None:
    # It: NodePool requirements instance filtering / should handle zone requirements that filter out all instance types
    pool = suite_pool(
        requirements=[
            ALL_CAPACITY_TYPES,
            pool_req(ZONE, "In", ["non-existent-zone-1", "non-existent-zone-2"]),
        ]
    )
    pod = f.unschedulable_pod("zone-filtered-pod")
    reason = provision(pool, pod).not_scheduled(pod)
    assert _mentions_instance_types(reason), reason


def test_extended_resource_added_by_an_overlay_limits_the_options() -> None:
    # It: Offering Overrides / should only select instance types whose offerings have CapacityOverride when pod requests an override resource
    # Karpenter's It adds override offerings to the type directly; NodeOverlay capacity is
    # how users express the same thing, and it is what produces such offerings.
    slots = "test.com/extended-slots"
    catalog = cat.catalog(
        [
            cat.instance_type("override-capable", resources={"cpu": "4", "memory": "8Gi"}),
            cat.instance_type("normal", resources={"cpu": "4", "memory": "8Gi"}),
        ]
    )
    overlay = f.node_overlay(
        requirements=[f.match_expression(INSTANCE_TYPE, "In", ["override-capable"])],
        capacity={slots: "4"},
    )
    pod = f.unschedulable_pod(requests={slots: "1"}, limits={slots: "1"})
    done = provision(suite_pool(), overlay, pod, catalog=catalog)
    assert len(done.new_claims) == 1
    options = done.new_claims[0]["instanceTypeOptions"]
    assert "override-capable" in options
    assert "normal" not in options
