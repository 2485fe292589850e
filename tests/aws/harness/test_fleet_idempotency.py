"""The sandbox's CreateFleet honours ``ClientToken`` as EC2 does: a repeated request is
answered again without launching, a changed one under the same token is refused."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from karpy.sandbox.aws.seed import seed_account

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer


async def _fleet(
    clients: AWSClients, template: str, account: Account, instance_type: str, **token: str
) -> dict[str, Any]:
    ec2 = await clients.ec2()
    return dict(
        await ec2.create_fleet(
            Type="instant",
            LaunchTemplateConfigs=[{
                "LaunchTemplateSpecification": {"LaunchTemplateId": template,
                                                "Version": "$Latest"},
                "Overrides": [{"InstanceType": instance_type,
                               "SubnetId": account.subnets["us-west-2a"]}],
            }],
            TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                         "DefaultTargetCapacityType": "on-demand"},
            **token,
        )
    )  # fmt: skip


def _instance_ids(answer: dict[str, Any]) -> list[str]:
    return [i for launched in answer.get("Instances", []) for i in launched["InstanceIds"]]


async def _running(clients: AWSClients) -> list[str]:
    ec2 = await clients.ec2()
    found = await ec2.describe_instances()
    return [i["InstanceId"] for r in found["Reservations"] for i in r["Instances"]]


async def test_a_repeated_request_with_its_token_answers_the_first_launch_again(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    first = await _fleet(aws_clients, launch_template, aws_account, "m5.large", ClientToken="t-1")
    again = await _fleet(aws_clients, launch_template, aws_account, "m5.large", ClientToken="t-1")
    assert _instance_ids(again) == _instance_ids(first)
    assert again["FleetId"] == first["FleetId"]
    assert await _running(aws_clients) == _instance_ids(first)


async def test_the_same_token_with_other_parameters_is_an_idempotent_parameter_mismatch(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    await _fleet(aws_clients, launch_template, aws_account, "m5.large", ClientToken="t-1")
    with pytest.raises(ClientError) as raised:
        await _fleet(aws_clients, launch_template, aws_account, "c5.large", ClientToken="t-1")
    assert raised.value.response["Error"]["Code"] == "IdempotentParameterMismatch"
    assert len(await _running(aws_clients)) == 1


async def test_requests_without_a_chosen_token_each_launch(
    aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    # botocore fills a fresh random token into each call that names none
    await _fleet(aws_clients, launch_template, aws_account, "m5.large")
    await _fleet(aws_clients, launch_template, aws_account, "m5.large")
    assert len(await _running(aws_clients)) == 2


async def test_a_reset_forgets_the_tokens(
    moto_server: MotoServer, aws_account: Account, aws_clients: AWSClients, launch_template: str
) -> None:
    await _fleet(aws_clients, launch_template, aws_account, "m5.large", ClientToken="t-1")
    moto_server.reset()
    account = await seed_account(aws_clients, aws_account.cluster_name)
    ec2 = await aws_clients.ec2()
    created = await ec2.create_launch_template(
        LaunchTemplateName="after-reset",
        LaunchTemplateData={"ImageId": account.amis["al2023"]["x86_64"]},
    )
    template = created["LaunchTemplate"]["LaunchTemplateId"]
    answer = await _fleet(aws_clients, template, account, "c5.large", ClientToken="t-1")
    assert len(_instance_ids(answer)) == 1
