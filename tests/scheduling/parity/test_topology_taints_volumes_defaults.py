# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go: Describe "Taints" and Describe "Topology with
Volume Requirements" (Context "DefaultConstraints" is in test_topology_default_constraints.py).
"""

from __future__ import annotations

from tests import factories as f
from tests.scheduling.parity.harness import ZONE, materialize, provision
from tests.scheduling.parity.pools import topology_pool


def test_only_pods_tolerating_the_pool_taint_schedule() -> None:
    # It: Taints / should schedule pods that tolerate NodePool constraints
    pool = topology_pool(taints=[f.taint("test-key", "test-value")])
    tolerating = [
        f.unschedulable_pod(
            tolerations=[f.toleration("test-key", operator="Exists", effect="NoSchedule")]
        ),
        f.unschedulable_pod(
            tolerations=[f.toleration("test-key", value="test-value", effect="NoSchedule")]
        ),
    ]
    intolerant = [
        f.unschedulable_pod(),
        f.unschedulable_pod(tolerations=[f.toleration("invalid", operator="Exists")]),
        f.unschedulable_pod(tolerations=[f.toleration("test-key", effect="NoSchedule")]),
    ]
    done = provision(pool, tolerating, intolerant)
    for pod in tolerating:
        done.node(pod)
    for pod in intolerant:
        done.not_scheduled(pod)


def test_startup_taints_need_no_toleration() -> None:
    # It: Taints / should provision nodes with taints and schedule pods if the taint is only a startup taint
    pool = topology_pool(startup_taints=[f.taint("ignore-me", "nothing-to-see-here")])
    pod = f.unschedulable_pod()
    provision(pool, pod).node(pod)


def test_volume_zone_steers_the_pod_without_distorting_the_spread() -> None:
    # It: Topology with Volume Requirements / should schedule pod with PVC and TSC minDomains=3 when pods are spread across 3 zones
    labels = {"app": "test"}
    pool = topology_pool(
        requirements=[f.nodepool_requirement("karpenter.sh/capacity-type", "In", ["on-demand"])]
    )
    pv = f.persistent_volume("test-pv", zones=["test-zone-1"])
    pvc = f.persistent_volume_claim("test-pvc", volume_name="test-pv")
    spread = f.topology_spread(ZONE, match_labels=labels, min_domains=3)
    initial = f.unschedulable_pods(3, labels=labels, topology_spread_constraints=[spread])
    first = provision(pool, pv, pvc, initial)
    for pod in initial:
        first.node(pod)
    assert first.skew(spread) == [1, 1, 1]
    with_volume = f.unschedulable_pod(
        labels=labels, topology_spread_constraints=[spread], pvcs=["test-pvc"]
    )
    second = provision(materialize(first), with_volume)
    assert second.node(with_volume).zone == "test-zone-1"
    assert second.skew(spread) == [1, 1, 2]
