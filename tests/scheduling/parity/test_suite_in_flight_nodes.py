# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "In-Flight Nodes".

Karpenter's Its provision a first pod, let its node register, change the node, then
provision again. Here the snapshot holds the first round's outcome directly: the NodeClaim
and registered (not initialized) Node the fake provider would have launched for the
cheapest fitting type (see ``harness.launched``), with the first pod bound when Karpenter
left it bound. The two topology Its chain two simulate rounds instead, because the
first round's layout is what they test.
"""

from __future__ import annotations

import pytest

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import (
    ARCH,
    HOSTNAME,
    INITIALIZED,
    REGISTERED,
    ZONE,
    launched,
    materialize,
    provision,
)
from tests.scheduling.parity.pools import suite_pool

req = f.match_expression
TINY = {"cpu": "10m"}


def test_second_pod_joins_the_in_flight_node() -> None:
    # It: In-Flight Nodes / should not launch a second node if there is an in-flight node that can support the pod
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type")
    first = f.pod(limits=TINY, node_name=node["metadata"]["name"])
    second = f.unschedulable_pod(limits=TINY)
    done = provision(pool, claim, node, first, second)
    assert done.node(second).name == node["metadata"]["name"]


@pytest.mark.parametrize(
    ("earlier", "zones", "joins"),
    [(1, ["test-zone-1", "test-zone-2"], True), (2, ["test-zone-1", "test-zone-3"], False)],
    ids=["second-pod-shares-zone", "third-pod-disjoint-zones"],
)
def test_in_flight_node_is_used_only_by_pods_whose_zones_include_it(
    earlier: int, zones: list[str], joins: bool
) -> None:
    # It: In-Flight Nodes / should not launch a second node if there is an in-flight node that can support the pod (node selectors)
    # The first pod (zone-2 only) launched a spot node in test-zone-2; round 2 added the second pod to it.
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type", zone="test-zone-2")
    name = node["metadata"]["name"]
    bound = [f.pod(limits=TINY, node_name=name) for _ in range(earlier)]
    pod = f.unschedulable_pod(limits=TINY, node_requirements=[req(ZONE, "In", zones)])
    landing = provision(pool, claim, node, bound, pod).node(pod)
    assert (landing.name == name) is joins


def test_pod_that_does_not_fit_the_in_flight_node_gets_a_new_one() -> None:
    # It: In-Flight Nodes / should launch a second node if a pod won't fit on the existingNodes node
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type")
    first = f.pod(limits={"cpu": "1001m"}, node_name=node["metadata"]["name"])
    second = f.unschedulable_pod(limits={"cpu": "1"})
    done = provision(pool, claim, node, first, second)
    assert done.node(second).name != node["metadata"]["name"]


def test_pod_incompatible_with_the_in_flight_node_gets_a_new_one() -> None:
    # It: In-Flight Nodes / should launch a second node if a pod isn't compatible with the existingNodes node (node selector)
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type")
    first = f.pod(limits=TINY, node_name=node["metadata"]["name"])
    second = f.unschedulable_pod(node_selector={ARCH: "arm64"})
    done = provision(pool, claim, node, first, second)
    assert done.node(second).name != node["metadata"]["name"]


def test_terminating_in_flight_node_takes_no_new_pods() -> None:
    # It: In-Flight Nodes / should launch a second node if an in-flight node is terminating
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type")
    for obj in (claim, node):
        obj["metadata"]["deletionTimestamp"] = f.SOME_TIME
        obj["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    first = f.pod(limits=TINY, node_name=node["metadata"]["name"])
    second = f.unschedulable_pod(limits=TINY)
    done = provision(pool, claim, node, first, second)
    assert done.node(second).name != node["metadata"]["name"]


def test_zonal_spread_counts_and_fills_in_flight_nodes() -> None:
    # It: In-Flight Nodes / Topology / should balance pods across zones with in-flight nodes
    spread = f.topology_spread(ZONE, match_labels={"foo": "bar"})
    pool = suite_pool()
    first = provision(
        pool, f.unschedulable_pods(4, labels={"foo": "bar"}, topology_spread_constraints=[spread])
    )
    assert first.skew(spread) == [1, 1, 2]
    second = provision(
        materialize(first),
        f.unschedulable_pods(5, labels={"foo": "bar"}, topology_spread_constraints=[spread]),
    )
    assert second.skew(spread) == [3, 3, 3]
    assert second.new_claims == []


def test_hostname_spread_launches_new_nodes_rather_than_stack_in_flight_ones() -> None:
    # It: In-Flight Nodes / Topology / should balance pods across hostnames with in-flight nodes
    spread = f.topology_spread(HOSTNAME, match_labels={"foo": "bar"})
    pool = suite_pool()
    first = provision(
        pool, f.unschedulable_pods(4, labels={"foo": "bar"}, topology_spread_constraints=[spread])
    )
    assert first.skew(spread) == [1, 1, 1, 1]
    second = provision(
        materialize(first),
        f.unschedulable_pods(5, labels={"foo": "bar"}, topology_spread_constraints=[spread]),
    )
    assert second.skew(spread) == [1] * 9


# --- Taints -------------------------------------------------------------------------------


def test_in_flight_node_without_taints_takes_the_pod() -> None:
    # It: In-Flight Nodes / Taints / should assume pod will schedule to a tainted node with no taints
    pool = suite_pool()
    claim, node = launched(pool, "arm-instance-type", taints=[])
    pod = f.unschedulable_pod()
    assert provision(pool, claim, node, pod).node(pod).name == node["metadata"]["name"]


def test_not_ready_no_execute_taint_is_ignored_only_until_initialization() -> None:
    # It: In-Flight Nodes / Taints / should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized
    pool = suite_pool()
    claim, node = launched(
        pool,
        "small-instance-type",
        taints=[f.taint("node.kubernetes.io/not-ready", effect="NoExecute")],
    )
    second = f.unschedulable_pod()
    assert provision(pool, claim, node, second).node(second).name == node["metadata"]["name"]
    # Then, as in the It, only the Node gets the initialized label (the NodeClaim keeps
    # its conditions); the same taint now needs a toleration.
    node["metadata"]["labels"][INITIALIZED] = "true"
    third = f.unschedulable_pod()
    assert provision(pool, claim, node, third).node(third).name != node["metadata"]["name"]


_NOT_READY_TAINTS = [
    f.taint("node.kubernetes.io/not-ready", effect="NoSchedule"),
    f.taint("node.kubernetes.io/unreachable", effect="NoSchedule"),
    f.taint("node.cloudprovider.kubernetes.io/uninitialized", "true", effect="NoSchedule"),
]


@pytest.mark.parametrize("ready", ["False", "Unknown"])
def test_not_ready_initialized_node_is_in_flight_again(ready: str) -> None:
    # It: In-Flight Nodes / Taints / should consider a tainted NotReady node as in-flight even if initialized
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type", initialized=True, taints=_NOT_READY_TAINTS)
    node["status"]["conditions"] = [{"type": "Ready", "status": ready}]
    pod = f.unschedulable_pod(limits=TINY)
    assert provision(pool, claim, node, pod).node(pod).name == node["metadata"]["name"]


def test_not_ready_initialized_node_still_refuses_pods_for_other_taints() -> None:
    # The ephemeral taints are set aside on a NotReady node; any other taint still counts.
    pool = suite_pool()
    taints = [*_NOT_READY_TAINTS, f.taint("foo.com/taint", "tainted")]
    claim, node = launched(pool, "small-instance-type", initialized=True, taints=taints)
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod = f.unschedulable_pod(limits=TINY)
    assert provision(pool, claim, node, pod).node(pod).name != node["metadata"]["name"]


def test_not_ready_initialized_node_does_not_shed_its_startup_taints() -> None:
    # Startup taints are set aside only until initialization, Ready or not.
    startup = f.taint("ignore-me", "nothing-to-see-here")
    pool = suite_pool(startup_taints=[startup])
    claim, node = launched(
        pool, "small-instance-type", initialized=True, taints=[startup, *_NOT_READY_TAINTS]
    )
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod = f.unschedulable_pod(limits=TINY)
    assert provision(pool, claim, node, pod).node(pod).name != node["metadata"]["name"]


@pytest.mark.parametrize("effect", ["NoSchedule", "NoExecute"])
def test_registered_uninitialized_node_ignores_each_ephemeral_taint(effect: str) -> None:
    # The known ephemeral taints need no toleration while the node is uninitialized.
    pool = suite_pool()
    taints = [
        f.taint("node.kubernetes.io/not-ready", effect=effect),
        f.taint("karpenter.sh/unregistered", effect="NoExecute"),
        f.taint("node.kubernetes.io/unreachable", effect="NoSchedule"),
    ]
    claim, node = launched(pool, "small-instance-type", taints=taints)
    node["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    pod = f.unschedulable_pod(limits=TINY)
    assert provision(pool, claim, node, pod).node(pod).name == node["metadata"]["name"]


def test_initialized_node_with_a_foreign_taint_is_avoided() -> None:
    # It: In-Flight Nodes / Taints / should not assume pod will schedule to a tainted node
    pool = suite_pool()
    claim, node = launched(
        pool,
        "arm-instance-type",
        initialized=True,
        taints=[f.taint("foo.com/taint", "tainted")],
    )
    pod = f.unschedulable_pod()
    assert provision(pool, claim, node, pod).node(pod).name != node["metadata"]["name"]


def test_startup_taint_of_an_uninitialized_node_is_ignored() -> None:
    # It: In-Flight Nodes / Taints / should assume pod will schedule to a tainted node with a custom startup taint
    startup = f.taint("foo.com/taint", "tainted")
    pool = suite_pool(startup_taints=[startup])
    claim, node = launched(
        pool,
        "arm-instance-type",
        taints=[startup, f.taint("node.kubernetes.io/not-ready", effect="NoSchedule")],
    )
    pod = f.unschedulable_pod()
    assert provision(pool, claim, node, pod).node(pod).name == node["metadata"]["name"]


def test_startup_taint_back_on_an_initialized_node_is_respected() -> None:
    # It: In-Flight Nodes / Taints / should not assume pod will schedule to a node with startup taints after initialization
    startup = f.taint("ignore-me", "nothing-to-see-here")
    pool = suite_pool(startup_taints=[startup])
    claim, node = launched(pool, "small-instance-type", initialized=True, taints=[startup])
    node["status"]["capacity"] = {"pods": "10"}
    pod = f.unschedulable_pod()
    assert provision(pool, claim, node, pod).node(pod).name != node["metadata"]["name"]


# --- Daemonsets ---------------------------------------------------------------------------


def test_bound_daemon_pods_use_up_the_daemonset_reservation() -> None:
    # It: In-Flight Nodes / Daemonsets / should track daemonset usage separately so we know how many DS resources are remaining to be scheduled
    pool = suite_pool()
    ds = f.daemonset(template=f.pod(requests={"cpu": "1", "memory": "1Gi"}))
    claim, node = launched(pool, "arm-instance-type")
    ds_pod = f.pod(
        requests={"cpu": "1", "memory": "2Gi"},
        owner_references=[f.owned_by(ds)],
        node_name=node["metadata"]["name"],
    )
    pod = f.unschedulable_pod(limits={"cpu": "14.9"})
    done = provision(pool, ds, claim, node, ds_pod, pod)
    assert done.node(pod).name == node["metadata"]["name"]


def test_daemon_pod_bound_through_an_unexpected_label_still_uses_capacity() -> None:
    # It: In-Flight Nodes / Daemonsets / should handle unexpected daemonset pods binding to the node
    pool = suite_pool()
    selective = f.daemonset(
        template=f.pod(
            node_selector={"my-node-label": "value"}, requests={"cpu": "1", "memory": "1Gi"}
        )
    )
    everywhere = f.daemonset(template=f.pod(requests={"cpu": "1m"}))
    claim, node = launched(pool, "arm-instance-type", labels={"my-node-label": "value"})
    ds_pod = f.pod(
        node_selector={"my-node-label": "value"},
        requests={"cpu": "1", "memory": "2Gi"},
        owner_references=[f.owned_by(selective)],
        node_name=node["metadata"]["name"],
    )
    pod = f.unschedulable_pod(limits={"cpu": "15.5"})
    done = provision(pool, selective, everywhere, claim, node, ds_pod, pod)
    assert done.node(pod).name != node["metadata"]["name"]


def test_daemonsets_waiting_for_karpenter_lifecycle_labels_count_on_new_nodes() -> None:
    # It: In-Flight Nodes / Daemonsets / Should properly handle DaemonSet resources with Node Affinity for `karpenter.sh/initialized` and `karpenter.sh/registered`
    # Both daemonsets' overhead (2 cpu) plus the pod's 2 cpu only fit the 16-cpu type, whose
    # allocatable is 15.9 cpu; the lifecycle labels must not leak onto the new node.
    pool = suite_pool()
    daemonsets = [
        f.daemonset(
            template=f.pod(node_requirements=[req(label, "In", ["true"])], requests={"cpu": "1"})
        )
        for label in (INITIALIZED, REGISTERED)
    ]
    pod = f.unschedulable_pod(limits={"cpu": "2"})
    node = provision(pool, daemonsets, pod).node(pod)
    assert node.instance_type == "arm-instance-type"
    assert INITIALIZED not in node.labels
    assert REGISTERED not in node.labels


def test_in_flight_nodes_are_packed_before_new_ones_launch() -> None:
    # It: In-Flight Nodes / should pack in-flight nodes before launching new nodes
    # Karpenter's It provisions random batches ten times and checks that at most one node
    # keeps a free cpu; here one batch meets in-flight nodes holding 1..4 pods.
    catalog = cat.catalog([cat.instance_type("medium", resources={"cpu": "4.25", "pods": "4"})])
    pool = suite_pool()
    objects: list[dict[str, object]] = [pool]
    for bound in range(1, 5):
        claim, node = launched(pool, "medium", catalog=catalog)
        objects += [claim, node]
        objects += [
            f.pod(limits={"cpu": "1"}, node_name=node["metadata"]["name"]) for _ in range(bound)
        ]
    pending = f.unschedulable_pods(8, limits={"cpu": "1"})
    done = provision(objects, pending, catalog=catalog)
    pods_per_node = dict.fromkeys(done.nodes(), 0)
    for obj in done.objects:
        landing = done.landing(obj) if obj["kind"] == "Pod" else None
        if landing is not None:
            pods_per_node[landing.name] += 1
    with_free_cpu = [name for name, count in pods_per_node.items() if 4.15 - count >= 1]
    assert len(with_free_cpu) <= 1


def test_pending_pod_is_not_given_a_second_node_while_its_node_is_in_flight() -> None:
    # It: In-Flight Nodes / should not launch a second node if there is an in-flight node that can support the pod (#2011)
    pool = suite_pool()
    claim, node = launched(pool, "small-instance-type")
    pod = f.unschedulable_pod(limits=TINY)
    done = provision(pool, claim, node, pod)
    assert done.new_claims == []
    assert done.node(pod).name == node["metadata"]["name"]


@pytest.mark.parametrize("position", [0, 50, 99], ids=["first", "middle", "last"])
def test_the_one_initialized_node_is_preferred_over_in_flight_claims(position: int) -> None:
    # It: In-Flight Nodes / should order initialized nodes for scheduling uninitialized nodes when all other nodes are inflight
    # The It deploys 100 NodeClaims and gives a Node, initialized, to one picked at random;
    # the others launched but have no Node. Its place in the snapshot varies here, and its
    # name sorts after every claim's, so only trying initialized nodes first picks it.
    pool = suite_pool()
    capacity = [
        launched(pool, "small-instance-type", name=f"node-{i:02d}", registered=False)
        for i in range(99)
    ]
    claim, ready = launched(pool, "small-instance-type", name="node-zz", initialized=True)
    capacity.insert(position, [claim, ready])
    pod = f.unschedulable_pod()
    assert provision(pool, *capacity, pod).node(pod).name == ready["metadata"]["name"]


def test_pods_wanting_the_same_host_port_get_different_nodes() -> None:
    # It: In-Flight Nodes / should schedule pods with the same host port to different nodes
    pods = f.unschedulable_pods(2, host_ports=[8080])
    done = provision(suite_pool(), pods)
    assert len(done.node_names(pods)) == 2
