"""The instant CreateFleet of the moto sandbox chooses and fails as EC2 does."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from karpy.cloud.aws.clients import AWSClients
from karpy.sandbox.aws.server import MotoServer

if TYPE_CHECKING:
    from karpy.sandbox.aws.faults import EC2Faults
    from karpy.sandbox.aws.seed import Account


def _overrides(
    account: Account, pairs: list[tuple[str, str]], **extra: Any
) -> list[dict[str, Any]]:
    return [
        {"InstanceType": name, "SubnetId": account.subnets[zone], **extra} for name, zone in pairs
    ]


async def _fleet(
    clients: AWSClients,
    template: str,
    overrides: list[dict[str, Any]],
    capacity_type: str = "on-demand",
    strategy: str | None = None,
) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if strategy:
        key = "SpotOptions" if capacity_type == "spot" else "OnDemandOptions"
        options[key] = {"AllocationStrategy": strategy}
    ec2 = await clients.ec2()
    return dict(
        await ec2.create_fleet(
            Type="instant",
            LaunchTemplateConfigs=[
                {
                    "LaunchTemplateSpecification": {
                        "LaunchTemplateId": template,
                        "Version": "$Latest",
                    },
                    "Overrides": overrides,
                }
            ],
            TargetCapacitySpecification={
                "TotalTargetCapacity": 1,
                "DefaultTargetCapacityType": capacity_type,
            },
            **options,
        )
    )


def _launched(answer: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (i["InstanceType"], i["LaunchTemplateAndOverrides"]["Overrides"]["SubnetId"])
        for i in answer.get("Instances", [])
        for _ in i["InstanceIds"]
    ]


async def test_lowest_price_on_demand_launches_the_cheapest_override_not_the_first(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    pairs = [("m5.xlarge", "us-west-2a"), ("m5.large", "us-west-2b"), ("c5.large", "us-west-2c")]
    answer = await _fleet(
        aws_clients, launch_template, _overrides(aws_account, pairs), strategy="lowest-price"
    )
    assert _launched(answer) == [("c5.large", aws_account.subnets["us-west-2c"])]
    assert "Errors" not in answer or answer["Errors"] == []
    ec2 = await aws_clients.ec2()
    instance_id = answer["Instances"][0]["InstanceIds"][0]
    found = await ec2.describe_instances(InstanceIds=[instance_id])
    instance = found["Reservations"][0]["Instances"][0]
    assert instance["Placement"]["AvailabilityZone"] == "us-west-2c"
    assert instance["ImageId"] == aws_account.amis["al2023"]["x86_64"]


async def test_prioritized_on_demand_launches_the_lowest_priority(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    overrides = [
        {"InstanceType": "c5.large", "SubnetId": aws_account.subnets["us-west-2a"], "Priority": 2},
        {
            "InstanceType": "m5.2xlarge",
            "SubnetId": aws_account.subnets["us-west-2b"],
            "Priority": 0,
        },
        {"InstanceType": "m5.large", "SubnetId": aws_account.subnets["us-west-2c"], "Priority": 1},
    ]
    answer = await _fleet(aws_clients, launch_template, overrides, strategy="prioritized")
    assert _launched(answer) == [("m5.2xlarge", aws_account.subnets["us-west-2b"])]


async def test_price_capacity_optimized_spot_launches_the_cheapest_spot_offering(
    aws_account: Account,
    aws_clients: AWSClients,
    launch_template: str,
    moto_server: MotoServer,
) -> None:
    zones = ["us-west-2a", "us-west-2b", "us-west-2c"]
    pairs = [(name, zone) for name in ("m5.large", "m5a.large", "c5.large") for zone in zones]
    cheapest = min(pairs, key=lambda p: moto_server.prices.spot(p[0], p[1]))
    assert cheapest != pairs[0]  # else the test would not tell moto's choice from ours
    answer = await _fleet(
        aws_clients,
        launch_template,
        _overrides(aws_account, pairs),
        capacity_type="spot",
        strategy="price-capacity-optimized",
    )
    assert _launched(answer) == [(cheapest[0], aws_account.subnets[cheapest[1]])]
    assert answer["Instances"][0]["Lifecycle"] == "spot"


async def test_iced_offerings_are_reported_in_errors_and_the_next_cheapest_launches(
    aws_account: Account, aws_clients: AWSClients, launch_template: str, ec2_faults: EC2Faults
) -> None:
    ec2_faults.ice([("c5.large", "us-west-2c", "on-demand")])
    pairs = [("m5.xlarge", "us-west-2a"), ("m5.large", "us-west-2b"), ("c5.large", "us-west-2c")]
    answer = await _fleet(aws_clients, launch_template, _overrides(aws_account, pairs))
    assert _launched(answer) == [("m5.large", aws_account.subnets["us-west-2b"])]
    [error] = answer["Errors"]
    assert error["ErrorCode"] == "InsufficientInstanceCapacity"
    assert error["Lifecycle"] == "on-demand"
    assert error["LaunchTemplateAndOverrides"]["Overrides"]["InstanceType"] == "c5.large"
    assert (
        error["LaunchTemplateAndOverrides"]["Overrides"]["SubnetId"]
        == (aws_account.subnets["us-west-2c"])
    )


async def test_every_offering_iced_answers_no_instances_and_all_errors(
    aws_account: Account, aws_clients: AWSClients, launch_template: str, ec2_faults: EC2Faults
) -> None:
    ec2_faults.ice([("m5.large", "*", "spot"), ("c5.large", "us-west-2a", "spot")])
    pairs = [("m5.large", "us-west-2a"), ("m5.large", "us-west-2b"), ("c5.large", "us-west-2a")]
    answer = await _fleet(
        aws_clients, launch_template, _overrides(aws_account, pairs), capacity_type="spot"
    )
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert answer.get("Instances", []) == []
    assert answer["FleetId"].startswith("fleet-")
    assert [e["ErrorCode"] for e in answer["Errors"]] == ["InsufficientInstanceCapacity"] * 3
    assert {e["Lifecycle"] for e in answer["Errors"]} == {"spot"}
    # on-demand capacity of the same offerings is untouched
    answer = await _fleet(aws_clients, launch_template, _overrides(aws_account, pairs))
    assert len(_launched(answer)) == 1


async def test_unknown_instance_types_are_refused_in_errors(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    pairs = [("x99.nonsense", "us-west-2a"), ("m5.large", "us-west-2a")]
    answer = await _fleet(aws_clients, launch_template, _overrides(aws_account, pairs))
    assert _launched(answer) == [("m5.large", aws_account.subnets["us-west-2a"])]
    [error] = answer["Errors"]
    assert error["ErrorCode"] == "InvalidParameterValue"
    assert "x99.nonsense" in error["ErrorMessage"]


async def test_types_not_offered_in_the_zone_are_unsupported(
    aws_account: Account, aws_clients: AWSClients, launch_template: str, moto_server: MotoServer
) -> None:
    from karpy.sandbox.aws.fleet import _zone_offerings

    offered = _zone_offerings("us-west-2")
    missing = sorted(
        name
        for name in moto_server.prices.on_demand_prices
        if (name, "us-west-2a") not in offered and (name, "us-west-2b") in offered
    )
    assert missing, "moto's catalog offers every type in us-west-2a"
    pairs = [(missing[0], "us-west-2a")]
    answer = await _fleet(aws_clients, launch_template, _overrides(aws_account, pairs))
    assert answer.get("Instances", []) == []
    assert [e["ErrorCode"] for e in answer["Errors"]] == ["Unsupported"]


async def test_throttled_calls_are_retried_by_standard_mode(
    aws_account: Account, aws_clients: AWSClients, launch_template: str, ec2_faults: EC2Faults
) -> None:
    ec2_faults.throttle("CreateFleet", 2)
    pairs = [("m5.large", "us-west-2a")]
    answer = await _fleet(aws_clients, launch_template, _overrides(aws_account, pairs))
    assert answer["ResponseMetadata"]["RetryAttempts"] == 2
    assert len(_launched(answer)) == 1
    assert ec2_faults.describe()["throttled"] == {"CreateFleet": 2}


@pytest.mark.slow
async def test_throttling_past_the_retry_budget_surfaces_request_limit_exceeded(
    moto_server: MotoServer, aws_account: Account, ec2_faults: EC2Faults
) -> None:
    clients = AWSClients(
        "us-west-2", endpoint_url=moto_server.url, credentials=("testing", "testing"),
        max_attempts=2,
    )  # fmt: skip
    try:
        ec2_faults.throttle("DescribeInstances", 5)
        ec2 = await clients.ec2()
        with pytest.raises(ClientError) as raised:
            await ec2.describe_instances()
        assert raised.value.response["Error"]["Code"] == "RequestLimitExceeded"
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        # other actions are not throttled
        await ec2.describe_subnets()
    finally:
        await clients.aclose()


async def test_json_protocol_services_are_throttled_with_throttling_exception(
    aws_account: Account, aws_clients: AWSClients, ec2_faults: EC2Faults
) -> None:
    ec2_faults.throttle("GetParameter", 1)
    ssm = await aws_clients.ssm()
    name = "/aws/service/bottlerocket/aws-k8s-1.31/x86_64/latest/image_id"
    answer = await ssm.get_parameter(Name=name)
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1
    assert answer["Parameter"]["Value"] == aws_account.amis["bottlerocket"]["x86_64"]


async def test_dry_run_answers_dry_run_operation(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    ec2 = await aws_clients.ec2()
    with pytest.raises(ClientError) as raised:
        await ec2.create_fleet(
            DryRun=True,
            Type="instant",
            LaunchTemplateConfigs=[{
                "LaunchTemplateSpecification": {"LaunchTemplateId": launch_template,
                                                "Version": "$Latest"},
                "Overrides": _overrides(aws_account, [("m5.large", "us-west-2a")]),
            }],
            TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                         "DefaultTargetCapacityType": "on-demand"},
        )  # fmt: skip
    assert raised.value.response["Error"]["Code"] == "DryRunOperation"
    assert (await ec2.describe_instances())["Reservations"] == []


async def test_a_server_started_and_stopped_inside_another_hands_its_patches_back(
    aws_account: Account, aws_clients: AWSClients, launch_template: str, ec2_faults: EC2Faults
) -> None:
    """The CreateFleet patch is process-wide: a second server (a tool, another test)
    must not leave the first answering with its faults."""
    MotoServer().start().stop()
    ec2_faults.ice([("m5.large", "*", "on-demand")])
    pairs = [("m5.large", "us-west-2a")]
    answer = await _fleet(aws_clients, launch_template, _overrides(aws_account, pairs))
    assert [e["ErrorCode"] for e in answer["Errors"]] == ["InsufficientInstanceCapacity"]
