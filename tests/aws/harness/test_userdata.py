"""Reading node settings from user data, and the kubelet's capacity arithmetic."""

from __future__ import annotations

import base64

import pytest

from karpy.base.quantity import parse_quantity
from karpy.sandbox.aws.nodecapacity import memory_overhead_mib, node_resources
from karpy.sandbox.aws.userdata import Taint, parse_user_data
from tests.aws.harness.userdata_samples import AL2, AL2023, BOTTLEROCKET


def test_al2023_nodeconfig_gives_labels_taints_max_pods_and_reservations() -> None:
    found = parse_user_data(base64.b64encode(AL2023.encode()).decode())
    assert found.format == "al2023"
    assert found.problems == ()
    assert found.labels == {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "on-demand",
        "team": "blue",
    }
    assert set(found.taints) == {
        Taint("karpenter.sh/unregistered", "", "NoExecute"),
        Taint("dedicated", "gpu", "NoSchedule"),
    }
    assert found.max_pods == 29
    assert found.kube_reserved == {"cpu": "70m", "memory": "442Mi", "ephemeral-storage": "1Gi"}
    assert found.eviction_hard == {"memory.available": "100Mi", "nodefs.available": "10%"}
    assert found.cluster_dns == ("10.100.0.10",)


def test_bottlerocket_toml_gives_the_same_settings() -> None:
    found = parse_user_data(BOTTLEROCKET)
    assert found.format == "bottlerocket"
    assert found.labels == {
        "karpenter.sh/nodepool": "default",
        "karpenter.sh/capacity-type": "spot",
    }
    assert set(found.taints) == {
        Taint("karpenter.sh/unregistered", "", "NoExecute"),
        Taint("dedicated", "gpu", "NoSchedule"),
    }
    assert found.max_pods == 58
    assert found.kube_reserved == {"cpu": "80m", "memory": "893Mi"}
    assert found.eviction_hard == {"memory.available": "5%"}


def test_al2_bootstrap_script_flags_are_read() -> None:
    found = parse_user_data(AL2)
    assert found.format == "al2"
    assert found.labels == {"karpenter.sh/nodepool": "default", "team": "red"}
    assert found.taints == (Taint("karpenter.sh/unregistered", "", "NoExecute"),)
    assert found.max_pods == 17


def test_unreadable_parts_are_reported_and_the_rest_used() -> None:
    broken = AL2023.replace("maxPods: 29", "maxPods: lots")
    found = parse_user_data(broken)
    assert found.max_pods is None
    assert any("maxPods" in p for p in found.problems)
    assert found.labels["team"] == "blue"
    assert parse_user_data("").problems == ("no user data",)
    assert parse_user_data("[settings\n").problems


def test_memory_overhead_is_size_dependent_and_below_karpenters_guess() -> None:
    small, large = memory_overhead_mib(8192), memory_overhead_mib(393216)
    assert small == 128 + 205
    assert small / 8192 > large / 393216  # a smaller share on bigger instances
    assert small / 8192 < 0.075 and large / 393216 < 0.075


def test_allocatable_subtracts_reservations_and_eviction_thresholds() -> None:
    resources = node_resources(2, 8192, 80, parse_user_data(AL2023))
    mib, gib = parse_quantity("1Mi"), parse_quantity("1Gi")
    assert resources.capacity == {
        "cpu": "2",
        "memory": f"{(8192 - 333) * 1024}Ki",
        "pods": "29",
        "ephemeral-storage": f"{80 * 1024 * 1024}Ki",
    }
    allocatable = {k: parse_quantity(v) for k, v in resources.allocatable.items()}
    assert allocatable["cpu"] == 2000 - 70 - 100
    assert allocatable["memory"] == (8192 - 333 - 442 - 100 - 100) * mib
    assert allocatable["pods"] == 29_000
    # nodefs.available 10% of 80Gi, kubeReserved 1Gi (rounded down to whole bytes)
    assert allocatable["ephemeral-storage"] == (80 * gib - 8 * gib - gib) // 1000 * 1000
    assert resources.problems == ()


def test_percent_memory_eviction_is_a_share_of_capacity() -> None:
    resources = node_resources(4, 16384, 20, parse_user_data(BOTTLEROCKET))
    capacity = parse_quantity(resources.capacity["memory"])
    allocatable = parse_quantity(resources.allocatable["memory"])
    expected = capacity - parse_quantity("893Mi") - capacity * 5 // 100
    assert abs(allocatable - expected) < 1000 * 1024  # to within a Ki of rounding


@pytest.mark.parametrize("family", ["AL2023", "Bottlerocket", "AL2"])
def test_user_data_rendered_by_karpys_launch_code_reads_back(family: str) -> None:
    userdata = pytest.importorskip("karpy.cloud.aws.launch.userdata")
    from karpy.apis.core import Taint as KubeTaint
    from karpy.cloud.aws.launch.cluster import ClusterInfo

    options = userdata.BootstrapOptions(
        cluster=ClusterInfo(name="test-cluster", endpoint="https://test-cluster",
                            ca_bundle="Y2E=", cidr="10.100.0.0/16", dns_ip="10.100.0.10"),
        kubelet={"maxPods": 29, "clusterDNS": ["10.100.0.10"],
                 "kubeReserved": {"cpu": "70m", "memory": "442Mi"},
                 "systemReserved": {"cpu": "100m"},
                 "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"}},
        labels={"karpenter.sh/nodepool": "default", "team": "blue"},
        taints=(KubeTaint(key="karpenter.sh/unregistered", effect="NoExecute"),
                KubeTaint(key="dedicated", value="gpu", effect="NoSchedule")),
    )  # fmt: skip
    text = userdata.render_user_data(family, options)
    found = parse_user_data(base64.b64encode(text.encode()).decode())
    assert found.problems == ()
    assert found.labels == {"karpenter.sh/nodepool": "default", "team": "blue"}
    assert set(found.taints) == {
        Taint("karpenter.sh/unregistered", "", "NoExecute"),
        Taint("dedicated", "gpu", "NoSchedule"),
    }
    assert found.max_pods == 29
    assert found.kube_reserved == {"cpu": "70m", "memory": "442Mi"}
    assert found.system_reserved == {"cpu": "100m"}
    assert found.eviction_hard == {"memory.available": "100Mi", "nodefs.available": "10%"}
