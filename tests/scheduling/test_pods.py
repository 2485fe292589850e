"""Pod records and their effective requests."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.scheduling.pods import PodFormatError, pod_from_dict, pod_requests
from tests import factories as f

GI = 2**30 * 1000


def container(**requests: str) -> dict[str, Any]:
    return {"name": "c", "resources": {"requests": requests}}


def test_containers_are_summed_and_every_pod_takes_one_slot() -> None:
    spec = {"containers": [container(cpu="1", memory="1Gi"), container(cpu="500m")]}
    assert pod_requests(spec) == {"cpu": 1500, "memory": GI, "pods": 1000}


def test_an_init_container_needs_its_own_peak() -> None:
    spec = {"containers": [container(cpu="1")], "initContainers": [container(cpu="2")]}
    assert pod_requests(spec)["cpu"] == 2000


def test_sidecars_add_to_the_containers_and_to_later_init_containers() -> None:
    sidecar = {**container(cpu="1"), "restartPolicy": "Always"}
    spec = {
        "containers": [container(cpu="1")],
        "initContainers": [sidecar, container(cpu="2500m")],
    }
    # containers + sidecar = 2; init after the sidecar = 2.5 + 1 = 3.5
    assert pod_requests(spec)["cpu"] == 3500


def test_limits_stand_in_for_missing_requests() -> None:
    spec = {"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}
    assert pod_requests(spec) == {"cpu": 2000, "memory": GI, "pods": 1000}


def test_overhead_and_pod_level_requests() -> None:
    spec = {
        "containers": [container(cpu="1", memory="1Gi")],
        "resources": {"requests": {"cpu": "3"}},
        "overhead": {"cpu": "250m"},
    }
    assert pod_requests(spec) == {"cpu": 3250, "memory": GI, "pods": 1000}


def test_zero_requests_are_dropped() -> None:
    assert pod_requests({"containers": [container(**{"example.com/thing": "0"})]}) == {"pods": 1000}


def test_bad_quantities_name_the_field() -> None:
    with pytest.raises(PodFormatError, match=r"spec.containers\[0\].resources.requests.cpu"):
        pod_from_dict(f.pod(requests={"cpu": "lots"}))


def test_projection_keeps_scheduling_fields() -> None:
    pod = pod_from_dict(
        f.pod(
            "web",
            namespace="shop",
            labels={"app": "web"},
            requests={"cpu": "1"},
            node_selector={"disk": "ssd"},
            node_requirements=[f.match_expression("zone", "In", ["a"])],
            tolerations=[f.toleration("dedicated", value="x")],
            host_ports=[8080],
            unschedulable=True,
        )
    )
    assert pod.key == "shop/web"
    assert pod.node_selector == (("disk", "ssd"),)
    assert pod.required_node_terms[0][0].key == "zone"
    assert pod.tolerations[0].key == "dedicated"
    assert pod.host_ports[0].port == 8080
    assert pod.is_provisionable


@pytest.mark.parametrize(
    ("overrides", "provisionable"),
    [
        ({}, True),
        ({"unschedulable": False}, False),
        ({"node_name": "n1"}, False),
        ({"nominated_node_name": "n1"}, False),
        (
            {"owner_references": [f.owner_reference("DaemonSet", "ds", api_version="apps/v1")]},
            False,
        ),
    ],
)
def test_provisionable_pods_are_the_ones_kube_scheduler_gave_up_on(
    overrides: dict[str, Any], provisionable: bool
) -> None:
    options: dict[str, Any] = {"unschedulable": True, **overrides}
    assert pod_from_dict(f.pod(**options)).is_provisionable is provisionable


def test_reschedulable_excludes_daemonset_terminal_and_static_pods() -> None:
    assert pod_from_dict(f.pod(node_name="n")).is_reschedulable
    assert not pod_from_dict(f.pod(node_name="n", phase="Succeeded")).is_reschedulable
    static = f.owner_reference("Node", "n", api_version="v1")
    assert not pod_from_dict(f.pod(node_name="n", owner_references=[static])).is_reschedulable
