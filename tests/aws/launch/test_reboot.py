"""`AWSCloudProvider.reboot` (node repair's RebootNode, gate ``RebootForRepair``) against
moto over HTTP: EC2 RebootInstances for karpy's own instance, which keeps running; another
cluster's instance, or one terminated, is refused as not found. And the provider offers
reboot policies only with the gate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.errors import NodeClaimNotFound
from karpy.cloud.provider import RepairAction
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.settings import Settings
from karpy.settings.gates import AWSFeatureGates
from karpy.state.cluster import ClusterState
from tests.aws.launch.conftest import nodeclaim, nodeclass
from tests.aws.launch.test_ownership import FOREIGN, ON_DEMAND, run_tagged, state_of

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.launch import InstanceLauncher
    from karpy.sandbox.aws.faults import EC2Faults
    from karpy.sandbox.aws.seed import Account


async def test_karpys_instance_is_rebooted_in_place(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients,
    ec2_faults: EC2Faults, priced: Any,
) -> None:  # fmt: skip
    own = await launcher.create(nodeclaim("default-abcde", requirements=ON_DEMAND),
                                nodeclass(aws_account), [priced("m5.large")])  # fmt: skip
    instance_id = own.provider_id.rsplit("/", 1)[1]
    ec2_faults.throttle("RebootInstances", 1)  # to see the call reach EC2 (then retried)
    await launcher.reboot(instance_id)
    assert ec2_faults.describe()["throttled"] == {"RebootInstances": 1}
    assert await state_of(aws_clients, instance_id) == "running"


async def test_another_clusters_or_a_terminated_instance_is_not_rebooted(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients,
    ec2_faults: EC2Faults, priced: Any,
) -> None:  # fmt: skip
    foreign = await run_tagged(aws_clients, aws_account, FOREIGN["another cluster"])
    with pytest.raises(NodeClaimNotFound, match="not karpy's"):
        await launcher.reboot(foreign)
    own = await launcher.create(nodeclaim("default-abcde", requirements=ON_DEMAND),
                                nodeclass(aws_account), [priced("m5.large")])  # fmt: skip
    instance_id = own.provider_id.rsplit("/", 1)[1]
    await launcher.terminate(instance_id)
    with pytest.raises(NodeClaimNotFound):
        await launcher.reboot(instance_id)
    assert "RebootInstances" not in ec2_faults.describe()["throttled"]


@pytest.mark.parametrize("gate", [False, True])
def test_the_provider_offers_reboots_only_with_the_gate(
    gate: bool, aws_account: Account, aws_clients: AWSClients
) -> None:
    gates = AWSFeatureGates(reboot_for_repair=gate)
    provider = AWSCloudProvider(
        Settings(cluster_name=aws_account.cluster_name, aws_feature_gates=gates),
        aws_clients,
        client=None,  # type: ignore[arg-type]  # repair_policies() reaches no API server
        state=ClusterState(),
        unavailable=UnavailableOfferings(),
    )
    actions = {p.action for p in provider.repair_policies()}
    assert (RepairAction.REBOOT in actions) is gate
