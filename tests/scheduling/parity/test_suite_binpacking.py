# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "Binpacking".

With the fake provider's default types, ``small-instance-type`` (1900m cpu, 2038Mi after
overhead) is the cheapest, ``default-instance-type`` (3900m, 4086Mi) next; every type but
one holds 5 pods.
"""

from __future__ import annotations

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import ARCH, provision
from tests.scheduling.parity.pools import suite_pool


def test_small_pod_gets_the_smallest_instance_type() -> None:
    # It: Binpacking / should schedule a small pod on the smallest instance
    pod = f.unschedulable_pod(requests={"memory": "100M"})
    assert provision(suite_pool(), pod).node(pod).instance_type == "small-instance-type"


def test_pod_filling_the_smallest_type_still_gets_it() -> None:
    # It: Binpacking / should schedule a small pod on the smallest possible instance type
    pod = f.unschedulable_pod(requests={"memory": "2000M"})
    assert provision(suite_pool(), pod).node(pod).instance_type == "small-instance-type"


def test_pod_overhead_from_runtime_class_counts_towards_the_fit() -> None:
    # It: Binpacking / should take pod runtime class into consideration
    # The API server's RuntimeClass admission copies the class's overhead into the pod.
    runtime = f.runtime_class("my-runtime-class", handler="default", overhead={"cpu": "2"})
    pod = f.unschedulable_pod(
        requests={"cpu": "1"}, runtime_class_name="my-runtime-class", overhead={"cpu": "2"}
    )
    done = provision(suite_pool(), runtime, pod)
    assert done.node(pod).instance_type == "default-instance-type"


def test_several_small_pods_share_one_smallest_node() -> None:
    # It: Binpacking / should schedule multiple small pods on the smallest possible instance type
    pods = f.unschedulable_pods(5, requests={"memory": "10M"})
    done = provision(suite_pool(), pods)
    assert len(done.node_names(pods)) == 1
    assert all(done.node(p).instance_type == "small-instance-type" for p in pods)


def test_full_nodes_lead_to_new_nodes() -> None:
    # It: Binpacking / should create new nodes when a node is at capacity
    pods = f.unschedulable_pods(40, node_selector={ARCH: "amd64"}, requests={"memory": "1.8G"})
    done = provision(suite_pool(), pods)
    assert len(done.node_names(pods)) == 20
    assert all(done.node(p).instance_type == "default-instance-type" for p in pods)


def test_small_pods_fill_the_gaps_large_pods_leave() -> None:
    # It: Binpacking / should pack small and large pods together
    large = f.unschedulable_pods(40, node_selector={ARCH: "amd64"}, requests={"memory": "1.8G"})
    small = f.unschedulable_pods(20, node_selector={ARCH: "amd64"}, requests={"memory": "400M"})
    done = provision(suite_pool(), large, small)
    assert len(done.node_names(large + small)) == 20
    assert all(done.node(p).instance_type == "default-instance-type" for p in large + small)


def test_second_pod_gets_a_smaller_type_when_the_first_fills_the_largest() -> None:
    # It: Binpacking / should pack nodes tightly
    pods = [
        f.unschedulable_pod(requests={"cpu": "4.5"}),
        f.unschedulable_pod(requests={"cpu": "1"}),
    ]
    done = provision(suite_pool(), pods, catalog=cat.catalog(cat.instance_types(5)))
    first, second = (done.node(p) for p in pods)
    assert first.name != second.name
    assert first.instance_type != second.instance_type


def test_zero_quantity_of_an_unknown_resource_is_ignored() -> None:
    # It: Binpacking / should handle zero-quantity resource requests
    pod = f.unschedulable_pod(
        requests={"foo.com/weird-resources": "0"}, limits={"foo.com/weird-resources": "0"}
    )
    provision(suite_pool(), pod).node(pod)


def test_pod_larger_than_every_type_is_not_scheduled() -> None:
    # It: Binpacking / should not schedule pods that exceed every instance type's capacity
    pod = f.unschedulable_pod(requests={"memory": "2Ti"})
    provision(suite_pool(), pod).not_scheduled(pod)


def test_pod_count_limit_of_a_node_leads_to_new_nodes() -> None:
    # It: Binpacking / should create new nodes when a node is at capacity due to pod limits per node
    pods = f.unschedulable_pods(
        25, node_selector={ARCH: "amd64"}, requests={"memory": "1m", "cpu": "1m"}
    )
    done = provision(suite_pool(), pods)
    assert len(done.node_names(pods)) == 5
    assert all(done.node(p).instance_type == "small-instance-type" for p in pods)


def test_init_container_requests_count_towards_the_fit() -> None:
    # It: Binpacking / should take into account initContainer resource requests when binpacking
    pod = f.unschedulable_pod(
        requests={"memory": "1Gi", "cpu": "1"},
        init_containers=[f.container(requests={"memory": "1Gi", "cpu": "2"})],
    )
    assert provision(suite_pool(), pod).node(pod).instance_type == "default-instance-type"


def test_init_container_larger_than_every_type_is_not_scheduled() -> None:
    # It: Binpacking / should not schedule pods when initContainer resource requests are greater than available instance types
    pod = f.unschedulable_pod(
        requests={"memory": "1Gi", "cpu": "1"},
        init_containers=[f.container(requests={"memory": "1Ti", "cpu": "2"})],
    )
    provision(suite_pool(), pod).not_scheduled(pod)


def test_every_fitting_type_is_an_option_and_the_cheapest_is_launched() -> None:
    # It: Binpacking / should select for valid instance types, regardless of price
    def one_offering(name: str, cpu: str, memory: str, price: float) -> cat.Entry:
        offering = cat.offering("test-zone-1a", "on-demand", price)
        return cat.instance_type(
            name, resources={"cpu": cpu, "memory": memory}, offerings=[offering]
        )

    catalog = cat.catalog(
        [
            one_offering("medium", "2", "2Gi", 3.0),
            one_offering("small", "1", "1Gi", 2.0),
            one_offering("large", "4", "4Gi", 1.0),
        ]
    )
    pod = f.unschedulable_pod(limits={"cpu": "1m", "memory": "1Mi"})
    done = provision(suite_pool(), pod, catalog=catalog)
    node = done.node(pod)
    assert node.instance_type == "large"
    assert node.claim is not None
    assert set(node.claim["instanceTypeOptions"]) == {"small", "medium", "large"}
