"""Factories for the launch tests: a Ready-looking EC2NodeClass on the seeded moto account,
NodeClaims, small hand-made instance types priced from the sandbox's price table, and an
`InstanceLauncher` on moto."""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import pytest

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.nodeclaim import NodeClaim
from karpy.base.quantity import parse_quantity
from karpy.cloud.aws.launch import ClusterInfo, InstanceLauncher
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.scheduling.instancetypes import InstanceType, Offering, new_instance_type
from tests.factories.nodes import nodeclaim as nodeclaim_dict

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer

ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
ZONE_IDS = {"us-west-2a": "usw2-az2", "us-west-2b": "usw2-az1", "us-west-2c": "usw2-az3"}
# (vCPUs, memory GiB, arch) of the types the tests launch
SHAPES = {
    "m5.large": (2, 8, "amd64"),
    "m5.xlarge": (4, 16, "amd64"),
    "m5.2xlarge": (8, 32, "amd64"),
    "c5.large": (2, 4, "amd64"),
    "m6g.large": (2, 8, "arm64"),
    "m5.metal": (96, 384, "amd64"),
}
CA_BUNDLE = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nfake\n").decode()


def instance_type(
    name: str,
    *,
    prices: Mapping[str, float] | None = None,
    spot: Mapping[str, float] | None = None,
    zones: Iterable[str] = ZONES,
    pods: int = 29,
    gpus: int = 0,
) -> InstanceType:
    """A type with on-demand offerings in ``zones`` at ``prices[zone]`` (default 0.1 per
    vCPU) and spot offerings at ``spot[zone]`` when given."""
    vcpus, memory_gib, arch = SHAPES.get(name, (2, 8, "amd64"))
    zones = tuple(zones)
    offerings = [Offering(z, "on-demand", (prices or {}).get(z, 0.1 * vcpus)) for z in zones]
    offerings += [Offering(z, "spot", p) for z, p in (spot or {}).items()]
    capacity = {
        "cpu": vcpus * 1000,
        "memory": parse_quantity(f"{memory_gib}Gi"),
        "pods": pods * 1000,
        "ephemeral-storage": parse_quantity("20Gi"),
    }
    if gpus:
        capacity["nvidia.com/gpu"] = gpus * 1000
    overhead = {
        "cpu": 80,
        "memory": parse_quantity("893Mi") + parse_quantity("100Mi"),
        "ephemeral-storage": parse_quantity("1Gi") + parse_quantity("2Gi"),
    }
    family, _, size = name.partition(".")
    labels = {
        "kubernetes.io/arch": arch,
        "kubernetes.io/os": "linux",
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-size": size,
        "karpenter.k8s.aws/instance-cpu": str(vcpus),
    }
    return new_instance_type(
        name, capacity=capacity, offerings=offerings, overhead=overhead, labels=labels
    )


def nodeclass(
    account: Account | None = None,
    *,
    family: str = "al2023",
    spec: Mapping[str, Any] | None = None,
    subnets: list[dict[str, str]] | None = None,
    name: str = "default",
) -> EC2NodeClass:
    """An EC2NodeClass whose status is resolved against ``account`` (fake ids without)."""
    amis = (account.amis if account else {}).get(family) or {
        "amd64": "ami-0amd64",
        "arm64": "ami-0arm64",
    }
    arch_of = {"x86_64": "amd64", "amd64": "amd64", "arm64": "arm64"}
    if subnets is None:
        ids = account.subnets if account else {z: f"subnet-{z[-1]}" for z in ZONES}
        subnets = [{"id": ids[z], "zone": z, "zoneID": ZONE_IDS[z]} for z in ZONES]
    return EC2NodeClass.from_dict({
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name, "uid": "uid-1", "generation": 1},
        "spec": {
            "amiSelectorTerms": [{"alias": f"{family}@latest"}],
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test-cluster"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test-cluster"}}],
            "role": "KarpenterNodeRole",
            **(spec or {}),
        },
        "status": {
            "subnets": subnets,
            "securityGroups": [{"id": account.security_group_id if account else "sg-1"}],
            "amis": [
                {"id": ami, "name": f"{family}-{arch}", "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": [arch_of[arch]]}
                ]}
                for arch, ami in sorted(amis.items())
            ],
            "instanceProfile": "test-cluster_profile",
        },
    })  # fmt: skip


def nodeclaim(name: str = "default-abcde", **kwargs: Any) -> NodeClaim:
    kwargs.setdefault("nodepool", "default")
    kwargs.setdefault("launched", False)
    kwargs.setdefault("node_class_ref", {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                         "name": "default"})  # fmt: skip
    data = nodeclaim_dict(name, **kwargs)
    data["status"].pop("providerID", None)
    return NodeClaim.from_dict(data)


def cluster_info(account: Account | None = None) -> ClusterInfo:
    return ClusterInfo(
        name="test-cluster",
        endpoint=account.cluster_endpoint if account else "https://test-cluster.example",
        ca_bundle=account.cluster_ca_bundle if account else CA_BUNDLE,
        cidr="172.20.0.0/16",
        dns_ip="172.20.0.10",
    )


@pytest.fixture
def unavailable() -> UnavailableOfferings:
    return UnavailableOfferings()


@pytest.fixture
def launcher(
    aws_account: Account, aws_clients: AWSClients, unavailable: UnavailableOfferings
) -> InstanceLauncher:
    return InstanceLauncher(aws_clients, cluster_info(aws_account), unavailable=unavailable)


@pytest.fixture
def priced(moto_server: MotoServer) -> Any:
    """``priced(name, spot=False)``: the type at the sandbox's own prices, so the fleet
    EC2 stand-in and the launch agree on what is cheapest."""

    def build(name: str, *, spot: bool = False, zones: Iterable[str] = ZONES) -> InstanceType:
        vcpus, memory_gib, _ = SHAPES[name]
        zones = tuple(zones)
        on_demand = moto_server.prices.on_demand(name, vcpus, memory_gib * 1024)
        spot_prices = (
            {z: moto_server.prices.spot(name, z, vcpus, memory_gib * 1024) for z in zones}
            if spot else None
        )  # fmt: skip
        return instance_type(name, prices=dict.fromkeys(zones, on_demand), spot=spot_prices,
                             zones=zones)  # fmt: skip

    return build
