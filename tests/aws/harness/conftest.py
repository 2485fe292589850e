"""Fixtures of the harness's own tests: a launch template on the seeded account, and a
sandbox cluster for the EC2 kubelet stand-in."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from karpy.sandbox.cluster import SandboxCluster

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account


@pytest.fixture
async def launch_template(aws_account: Account, aws_clients: AWSClients) -> str:
    """The id of a launch template with the account's AL2023 x86_64 image."""
    ec2 = await aws_clients.ec2()
    answer = await ec2.create_launch_template(
        LaunchTemplateName="harness-test",
        LaunchTemplateData={
            "ImageId": aws_account.amis["al2023"]["x86_64"],
            "SecurityGroupIds": [aws_account.security_group_id],
        },
    )
    return str(answer["LaunchTemplate"]["LaunchTemplateId"])


@pytest.fixture
async def sandbox_cluster() -> AsyncIterator[SandboxCluster]:
    async with SandboxCluster(node_ready_delay=0.05, pod_start_delay=0.05) as started:
        yield started
