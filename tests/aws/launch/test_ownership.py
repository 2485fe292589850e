"""Only karpy's own instances are listed or terminated, against moto over HTTP: instances
of the same cluster without the NodeClaim tag, instances made by hand with the tags copied
but the owned cluster tag missing, and another karpy's instances (another cluster) are
neither listed nor terminated, whoever asks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from karpy.cloud.aws.launch import InstanceLauncher, instances
from karpy.cloud.aws.launch.tags import is_owned_instance
from karpy.cloud.errors import NodeClaimNotFound
from tests.aws.launch.conftest import nodeclaim, nodeclass

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account

ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
CLUSTER = "test-cluster"
# What karpy's launch writes on an instance of NodeClaim "default-abcde" in CLUSTER.
OWN_TAGS = {
    f"kubernetes.io/cluster/{CLUSTER}": "owned",
    "eks:eks-cluster-name": CLUSTER,
    "karpenter.sh/nodepool": "default",
    "karpenter.k8s.aws/ec2nodeclass": "default",
    "karpenter.sh/nodeclaim": "default-abcde",
}


def without(tags: Mapping[str, str], *keys: str, **changed: str) -> dict[str, str]:
    out = {k: v for k, v in tags.items() if k not in keys}
    out.update(changed)
    return out


FOREIGN = {
    # the same cluster's other capacity (a node group, an older Karpenter): no NodeClaim tag
    "no nodeclaim tag": without(OWN_TAGS, "karpenter.sh/nodeclaim"),
    # made by hand from a copy of karpy's tags, without the owned cluster tag
    "no owned cluster tag": without(OWN_TAGS, f"kubernetes.io/cluster/{CLUSTER}"),
    "cluster tag shared": {**OWN_TAGS, f"kubernetes.io/cluster/{CLUSTER}": "shared"},
    # a second karpy, for cluster "other-cluster"
    "another cluster": without(
        OWN_TAGS,
        f"kubernetes.io/cluster/{CLUSTER}",
        **{"kubernetes.io/cluster/other-cluster": "owned", "eks:eks-cluster-name": "other-cluster"},
    ),
}


async def run_tagged(clients: AWSClients, account: Account, tags: Mapping[str, str]) -> str:
    """An instance started directly through EC2 with ``tags``; its ID."""
    ec2 = await clients.ec2()
    out = await ec2.run_instances(
        ImageId=account.amis["al2023"]["x86_64"], MinCount=1, MaxCount=1,
        InstanceType="m5.large", SubnetId=account.subnets["us-west-2a"],
        TagSpecifications=[{"ResourceType": "instance",
                            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )  # fmt: skip
    instance_id: str = out["Instances"][0]["InstanceId"]
    return instance_id


async def state_of(clients: AWSClients, instance_id: str) -> str:
    ec2 = await clients.ec2()
    out = await ec2.describe_instances(InstanceIds=[instance_id])
    state: str = out["Reservations"][0]["Instances"][0]["State"]["Name"]
    return state


@pytest.mark.parametrize("tags", FOREIGN.values(), ids=FOREIGN.keys())
def test_an_instance_missing_an_ownership_tag_is_not_karpys(tags: dict[str, str]) -> None:
    assert is_owned_instance(OWN_TAGS, CLUSTER)
    assert not is_owned_instance(tags, CLUSTER)


async def test_only_karpys_own_instances_are_listed_or_terminated(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    own = await launcher.create(
        nodeclaim("default-abcde", requirements=ON_DEMAND),
        nodeclass(aws_account),
        [priced("m5.large")],
    )
    foreign = {why: await run_tagged(aws_clients, aws_account, t) for why, t in FOREIGN.items()}

    assert [i.provider_id for i in await launcher.list()] == [own.provider_id]
    for why, instance_id in foreign.items():
        with pytest.raises(NodeClaimNotFound, match="not karpy's"):
            await launcher.terminate(instance_id)
        assert await state_of(aws_clients, instance_id) == "running", why

    # the second karpy sees its own instance, and only that one
    other = await instances.list_instances(aws_clients, "other-cluster")
    assert [i.provider_id.rsplit("/", 1)[1] for i in other] == [foreign["another cluster"]]

    own_id = own.provider_id.rsplit("/", 1)[1]
    await launcher.terminate(own_id)
    assert await state_of(aws_clients, own_id) in {"shutting-down", "terminated"}
