"""Labels and requirements from DescribeInstanceTypes records (`attributes`), the shipped
data files, and the price parsing (`pricing`)."""

from __future__ import annotations

import json
import tomllib
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import setuptools  # type: ignore[import-untyped]

from karpy.cloud.aws.instancetypes.attributes import architecture, type_requirements
from karpy.cloud.aws.instancetypes.families import family
from karpy.cloud.aws.instancetypes.network import bandwidth_mbps, vpc_limits
from karpy.cloud.aws.instancetypes.pricing import (
    keep_latest,
    parse_price_list,
    static_on_demand_prices,
)
from karpy.scheduling.requirements import Requirement, Requirements
from tests.aws.instancetypes.test_parity import moto_catalog

CATALOG = moto_catalog()
ROOT = Path(__file__).resolve().parents[3]


def reqs(name: str, family_name: str = "AL2023", **overrides: Any) -> Requirements:
    record = {**CATALOG[name], **overrides}
    return Requirements(type_requirements(record, region="us-west-2", family=family(family_name)))


def test_labels_of_a_graviton_type() -> None:
    labels = reqs("c6g.xlarge").labels()
    assert labels["kubernetes.io/arch"] == "arm64"
    assert labels["kubernetes.io/os"] == "linux"
    assert labels["karpenter.k8s.aws/instance-category"] == "c"
    assert labels["karpenter.k8s.aws/instance-generation"] == "6"
    assert labels["karpenter.k8s.aws/instance-family"] == "c6g"
    assert labels["karpenter.k8s.aws/instance-size"] == "xlarge"
    assert labels["karpenter.k8s.aws/instance-cpu-manufacturer"] == "aws"
    assert labels["topology.kubernetes.io/region"] == "us-west-2"


def test_missing_attributes_are_does_not_exist_requirements() -> None:
    m5 = reqs("m5.large")
    gpu = m5.get("karpenter.k8s.aws/instance-gpu-count")
    assert gpu.operator == "DoesNotExist"
    no_gpu = Requirements([Requirement.new("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist")])
    wants_gpu = Requirements([Requirement.new("karpenter.k8s.aws/instance-gpu-count", "Exists")])
    assert m5.is_compatible(no_gpu)
    assert not m5.is_compatible(wants_gpu)
    assert m5.get("karpenter.k8s.aws/instance-local-nvme").operator == "DoesNotExist"
    assert m5.get("node.kubernetes.io/windows-build").operator == "DoesNotExist"
    # tenancy is multi-valued: a requirement, no label
    assert m5.get("karpenter.k8s.aws/instance-tenancy").values == {"default", "dedicated"}
    assert "karpenter.k8s.aws/instance-tenancy" not in m5.labels()


def test_gpu_accelerator_and_storage_labels() -> None:
    p4d = reqs("p4d.24xlarge").labels()
    assert p4d["karpenter.k8s.aws/instance-gpu-name"] == "a100"
    assert p4d["karpenter.k8s.aws/instance-gpu-manufacturer"] == "nvidia"
    assert p4d["karpenter.k8s.aws/instance-gpu-count"] == "8"
    assert p4d["karpenter.k8s.aws/instance-gpu-memory"] == "40960"
    assert p4d["karpenter.k8s.aws/instance-local-nvme"] == "8000"
    inf2 = reqs("inf2.xlarge").labels()
    assert inf2["karpenter.k8s.aws/instance-accelerator-manufacturer"] == "aws"
    assert inf2["karpenter.k8s.aws/instance-accelerator-count"] == "1"


def test_high_memory_u_types_and_metal_hypervisor() -> None:
    u = reqs("u-6tb1.56xlarge").labels()
    assert u["karpenter.k8s.aws/instance-category"] == "u"
    assert u["karpenter.k8s.aws/instance-generation"] == "1"
    assert u["karpenter.k8s.aws/instance-family"] == "u-6tb1"
    metal = reqs("m5.metal")
    assert metal.get("karpenter.k8s.aws/instance-hypervisor").values == {""}


def test_windows_families_label_the_build_and_run_amd64_only() -> None:
    windows = reqs("m5.large", "Windows2022").labels()
    assert windows["kubernetes.io/os"] == "windows"
    assert windows["node.kubernetes.io/windows-build"] == "10.0.20348"
    graviton = reqs("c6g.xlarge", "Windows2022")
    assert graviton.get("kubernetes.io/os").operator == "DoesNotExist"


def test_sustained_clock_rounds_half_away_from_zero() -> None:
    processor = {"SupportedArchitectures": ["x86_64"], "Manufacturer": "Intel",
                 "SustainedClockSpeedInGhz": 2.5005}  # fmt: skip
    labels = reqs("m5.large", ProcessorInfo=processor).labels()
    assert labels["karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"] == "2501"
    assert (
        architecture({"ProcessorInfo": {"SupportedArchitectures": ["i386", "x86_64"]}}) == "amd64"
    )


def test_data_files_are_package_data_and_load_through_importlib_resources() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "*.json" in config["package-data"]["*"]
    found = setuptools.find_namespace_packages(
        str(ROOT), include=config["packages"]["find"]["include"]
    )
    assert "karpy.cloud.aws.data" in found
    names = {p.name for p in resources.files("karpy.cloud.aws.data").iterdir()}
    assert {"aws-on-demand-prices.json", "aws-instance-network.json"} <= names
    assert bandwidth_mbps("m5.large") == 750
    limits = vpc_limits("m5.large")
    assert limits is not None and limits.trunking_compatible and limits.branch_interfaces == 9
    assert static_on_demand_prices("us-west-2")["m5.large"] == 0.096  # us-east-1's table


def test_price_list_parsing_takes_the_on_demand_usd_price() -> None:
    item = {"product": {"attributes": {"instanceType": "m5.large"}},
            "terms": {"OnDemand": {"SKU.T": {"priceDimensions": {"SKU.T.R": {
                "pricePerUnit": {"USD": "0.0960000000"}}}}}}}  # fmt: skip
    zero = {"R": {"pricePerUnit": {"USD": "0"}}}
    free = {"product": {"attributes": {"instanceType": "t9.free"}},
            "terms": {"OnDemand": {"S": {"priceDimensions": zero}}}}  # fmt: skip
    assert parse_price_list([json.dumps(item), json.dumps(free), "not json"]) == {"m5.large": 0.096}


def test_spot_history_keeps_the_latest_price_per_type_and_zone() -> None:
    latest: dict[tuple[str, str], tuple[datetime, float]] = {}
    old, new = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC)
    for stamp, price in ((new, 0.03), (old, 0.05)):
        keep_latest(latest, {"InstanceType": "m5.large", "AvailabilityZone": "us-west-2a",
                              "SpotPrice": str(price), "Timestamp": stamp})  # fmt: skip
    assert latest[("m5.large", "us-west-2a")] == (new, 0.03)
