"""The CreateFleet request and the reading of its answer (pure)."""

from __future__ import annotations

import pytest

from karpy.cloud.aws.launch.fleet import (
    TemplateConfig,
    capacity_errors,
    create_fleet_request,
    overrides,
    read_fleet_response,
    zonal_subnets,
)
from karpy.cloud.aws.launch.selection import select
from karpy.cloud.errors import CreateError, InsufficientCapacity
from karpy.scheduling.requirements import Requirement, Requirements
from tests.aws.launch.conftest import instance_type, nodeclass

ON_DEMAND = Requirements([Requirement.new("karpenter.sh/capacity-type", "In", ["on-demand"])])


def test_one_subnet_per_zone_the_first_listed() -> None:
    nc = nodeclass(subnets=[
        {"id": "subnet-a1", "zone": "us-west-2a"}, {"id": "subnet-b1", "zone": "us-west-2b"},
        {"id": "subnet-a2", "zone": "us-west-2a"},
    ])  # fmt: skip
    assert {z: s.id for z, s in zonal_subnets(nc).items()} == {
        "us-west-2a": "subnet-a1",
        "us-west-2b": "subnet-b1",
    }


def test_overrides_are_type_by_zone_with_subnet_image_and_price() -> None:
    nc = nodeclass(subnets=[{"id": "subnet-a", "zone": "us-west-2a"}])
    types = [instance_type("m5.large", prices={"us-west-2a": 0.096, "us-west-2b": 0.09})]
    candidates = select(types, ON_DEMAND, {}).candidates
    assert overrides(candidates, zonal_subnets(nc), "ami-1") == [(0.096, {
        "InstanceType": "m5.large", "SubnetId": "subnet-a", "AvailabilityZone": "us-west-2a",
        "ImageId": "ami-1", "Priority": 0.096,
    })]  # fmt: skip


def test_spot_request_uses_price_capacity_optimized_and_tags_instance_and_volumes() -> None:
    config = TemplateConfig("karpenter.k8s.aws/1", ({"InstanceType": "m5.large"},))
    request = create_fleet_request("spot", [config], {"karpenter.sh/nodeclaim": "a"})
    assert request["Type"] == "instant"
    assert request["TargetCapacitySpecification"] == {
        "TotalTargetCapacity": 1,
        "DefaultTargetCapacityType": "spot",
    }
    assert request["SpotOptions"] == {"AllocationStrategy": "price-capacity-optimized"}
    assert "OnDemandOptions" not in request
    assert request["LaunchTemplateConfigs"][0]["LaunchTemplateSpecification"] == {
        "LaunchTemplateName": "karpenter.k8s.aws/1",
        "Version": "$Latest",
    }
    assert [t["ResourceType"] for t in request["TagSpecifications"]] == [
        "instance", "volume", "fleet"
    ]  # fmt: skip


def test_on_demand_and_reserved_requests() -> None:
    config = TemplateConfig("lt", ())
    assert create_fleet_request("on-demand", [config], {})["OnDemandOptions"] == {
        "AllocationStrategy": "lowest-price"
    }
    reserved = create_fleet_request("reserved", [config], {})
    assert reserved["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "on-demand"
    block = create_fleet_request("reserved", [config], {}, capacity_block=True)
    assert block["TargetCapacitySpecification"]["DefaultTargetCapacityType"] == "capacity-block"
    assert "OnDemandOptions" not in block


def error(code: str, type_: str = "m5.large", zone: str = "us-west-2a") -> dict[str, object]:
    overrides = {"InstanceType": type_, "AvailabilityZone": zone}
    return {
        "ErrorCode": code,
        "ErrorMessage": "no",
        "LaunchTemplateAndOverrides": {"Overrides": overrides},
    }


def test_a_launched_instance_is_read_from_its_override() -> None:
    response = {
        "Instances": [{"InstanceIds": ["i-1"], "InstanceType": "m5.large",
                       "LaunchTemplateAndOverrides": {"Overrides": {
                           "AvailabilityZone": "us-west-2b", "SubnetId": "subnet-b",
                           "ImageId": "ami-1"}}}],
        "Errors": [error("InsufficientInstanceCapacity", "c5.large")],
    }  # fmt: skip
    launch = read_fleet_response(response, "spot")
    assert (launch.instance_id, launch.instance_type, launch.zone, launch.image_id) == (
        "i-1", "m5.large", "us-west-2b", "ami-1"
    )  # fmt: skip
    assert capacity_errors(response, "spot") == (("c5.large", "us-west-2a", "spot"),)


CAPACITY_CODES = ["InsufficientInstanceCapacity", "MaxSpotInstanceCountExceeded",
                  "VcpuLimitExceeded", "UnfulfillableCapacity", "Unsupported"]  # fmt: skip


@pytest.mark.parametrize("code", CAPACITY_CODES)
def test_capacity_errors_without_an_instance_are_insufficient_capacity(code: str) -> None:
    response = {"Instances": [], "Errors": [error(code), error(code, zone="us-west-2b")]}
    with pytest.raises(InsufficientCapacity) as raised:
        read_fleet_response(response, "on-demand")
    assert raised.value.pools == (
        ("m5.large", "us-west-2a", "on-demand"),
        ("m5.large", "us-west-2b", "on-demand"),
    )


def test_other_errors_are_create_errors_with_ec2s_code() -> None:
    response = {"Errors": [error("InsufficientInstanceCapacity"), error("InvalidParameterValue")]}
    with pytest.raises(CreateError) as raised:
        read_fleet_response(response, "on-demand")
    assert raised.value.reason == "InvalidParameterValue"
    assert capacity_errors(response, "on-demand") == (("m5.large", "us-west-2a", "on-demand"),)
