"""`InstanceLauncher` against moto over HTTP: launches, idempotency, launch templates,
insufficient capacity, get/list/terminate."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

import attrs
import pytest
import yaml

from karpy.apis.ec2nodeclass_status import CapacityReservation
from karpy.cloud.aws.launch import InstanceLauncher, delete_launch_templates
from karpy.cloud.aws.launch.fleet import CAPACITY_ERROR_CODES
from karpy.cloud.aws.launch.userdata.mime import parse_archive
from karpy.cloud.errors import CreateError, InsufficientCapacity, NodeClaimNotFound
from karpy.scheduling.instancetypes import Offering, new_instance_type
from tests.aws.launch.conftest import cluster_info, nodeclaim, nodeclass

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.sandbox.aws.faults import EC2Faults
    from karpy.sandbox.aws.seed import Account

ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
SPOT_OR_ON_DEMAND = [
    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}
]


async def describe_all(clients: AWSClients) -> list[dict[str, Any]]:
    ec2 = await clients.ec2()
    out = await ec2.describe_instances()
    return [i for r in out["Reservations"] for i in r["Instances"]]


async def templates(clients: AWSClients) -> list[dict[str, Any]]:
    ec2 = await clients.ec2()
    listed = (await ec2.describe_launch_templates())["LaunchTemplates"]
    out = []
    for lt in listed:
        versions = await ec2.describe_launch_template_versions(
            LaunchTemplateId=lt["LaunchTemplateId"]
        )
        out.append({**lt, "Data": versions["LaunchTemplateVersions"][0]["LaunchTemplateData"]})
    return out


def nodeconfig(data: dict[str, Any]) -> dict[str, Any]:
    document = base64.b64decode(data["UserData"]).decode()
    loaded: dict[str, Any] = yaml.safe_load(parse_archive(document)[-1].content)
    return loaded


async def test_launches_the_cheapest_type_tagged_for_its_nodeclaim(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    claim = nodeclaim("claim-1", requirements=ON_DEMAND, labels={"team": "a"})
    instance = await launcher.create(claim, nodeclass(aws_account),
                                     [priced("m5.xlarge"), priced("m5.large")])  # fmt: skip
    assert instance.instance_type == "m5.large"
    assert instance.capacity_type == "on-demand"
    assert instance.nodeclaim == "claim-1"
    assert instance.image_id == aws_account.amis["al2023"]["x86_64"]
    assert instance.provider_id.startswith(f"aws:///{instance.zone}/i-")
    assert instance.labels["topology.kubernetes.io/zone"] == instance.zone
    assert instance.labels["topology.k8s.aws/zone-id"]
    assert instance.labels["karpenter.k8s.aws/instance-family"] == "m5"
    assert instance.capacity["cpu"] == 2000 and instance.allocatable["cpu"] == 1920

    (raw,) = await describe_all(aws_clients)
    tags = {t["Key"]: t["Value"] for t in raw["Tags"]}
    assert tags["karpenter.sh/nodeclaim"] == "claim-1"
    assert tags["karpenter.sh/nodepool"] == "default"
    assert tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert tags["kubernetes.io/cluster/test-cluster"] == "owned"
    assert tags["eks:eks-cluster-name"] == "test-cluster"
    assert raw["SubnetId"] == aws_account.subnets[instance.zone]


async def test_launch_template_carries_user_data_imds_and_block_devices(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    claim = nodeclaim("claim-1", requirements=ON_DEMAND, labels={"team": "a"}, taints=[taint])
    await launcher.create(claim, nodeclass(aws_account), [priced("m5.large")])
    (template,) = await templates(aws_clients)
    assert template["LaunchTemplateName"].startswith("karpenter.k8s.aws/")
    data = template["Data"]
    assert data["MetadataOptions"]["HttpTokens"] == "required"
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 1
    assert data["BlockDeviceMappings"] == [{"DeviceName": "/dev/xvda", "Ebs": {
        "Encrypted": True, "VolumeType": "gp3", "VolumeSize": 20}}]  # fmt: skip
    assert data["SecurityGroupIds"] == [aws_account.security_group_id]
    assert data["IamInstanceProfile"] == {"Name": "test-cluster_profile"}
    config = nodeconfig(data)
    assert config["spec"]["cluster"]["name"] == "test-cluster"
    assert config["spec"]["cluster"]["apiServerEndpoint"] == aws_account.cluster_endpoint
    kubelet = config["spec"]["kubelet"]
    assert kubelet["config"]["maxPods"] == 29
    assert kubelet["config"]["clusterDNS"] == ["172.20.0.10"]
    assert kubelet["config"]["registerWithTaints"] == [
        {"key": "dedicated", "value": "x", "effect": "NoSchedule"},
        {"key": "karpenter.sh/unregistered", "effect": "NoExecute"},
    ]
    assert (
        "team=a" in kubelet["flags"][0]
        and "karpenter.sh/capacity-type=on-demand" in (kubelet["flags"][0])
    )
    tags = {t["Key"]: t["Value"] for t in template["Tags"]}
    assert tags["karpenter.k8s.aws/ec2nodeclass"] == "default"
    assert "karpenter.sh/nodeclaim" not in tags  # templates are shared between NodeClaims


async def test_bottlerocket_templates_get_the_families_two_volumes(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    nc = nodeclass(aws_account, family="bottlerocket",
                   spec={"metadataOptions": {"httpPutResponseHopLimit": 2}})  # fmt: skip
    await launcher.create(nodeclaim(requirements=ON_DEMAND), nc, [priced("m5.large")])
    (template,) = await templates(aws_clients)
    data = template["Data"]
    assert [(m["DeviceName"], m["Ebs"]["VolumeSize"]) for m in data["BlockDeviceMappings"]] == [
        ("/dev/xvda", 4), ("/dev/xvdb", 20)
    ]  # fmt: skip
    assert data["MetadataOptions"]["HttpPutResponseHopLimit"] == 2
    assert "cluster-name = 'test-cluster'" in base64.b64decode(data["UserData"]).decode()


async def test_a_class_with_enclaves_enabled_launches_with_them_in_its_template(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    enclaves = nodeclass(aws_account, spec={"enclaveOptions": {"enabled": True}})
    await launcher.create(nodeclaim(requirements=ON_DEMAND), enclaves, [priced("m5.xlarge")])
    (template,) = await templates(aws_clients)
    assert template["Data"]["EnclaveOptions"] == {"Enabled": True}


@pytest.mark.parametrize("spec", [{}, {"enclaveOptions": {"enabled": False}}], ids=["unset", "off"])
async def test_a_class_without_enclaves_launches_a_template_without_them(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any,
    spec: dict[str, Any],
) -> None:  # fmt: skip
    await launcher.create(nodeclaim(requirements=ON_DEMAND), nodeclass(aws_account, spec=spec),
                          [priced("m5.xlarge")])  # fmt: skip
    (template,) = await templates(aws_clients)
    assert "EnclaveOptions" not in template["Data"]


async def test_a_nodeclaim_requesting_the_nitro_sandbox_resource_gets_enclaves(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    """Karpenter v1.14's path: the Nitro Enclaves device plugin's resource, given capacity
    by a NodeOverlay, turns enclaves on without the class asking."""
    sandbox = "eks.amazonaws.com/nitro-sandbox"
    base = priced("m5.xlarge")
    overlaid = attrs.evolve(base, capacity={**base.capacity, sandbox: 4000},
                            allocatable={**base.allocatable, sandbox: 4000})  # fmt: skip
    claim = nodeclaim(requirements=ON_DEMAND, requests={sandbox: "1"})
    await launcher.create(claim, nodeclass(aws_account), [overlaid])
    (template,) = await templates(aws_clients)
    assert template["Data"]["EnclaveOptions"] == {"Enabled": True}


async def test_a_second_create_returns_the_instance_already_launched(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    claim = nodeclaim("claim-1", requirements=ON_DEMAND)
    types = [priced("m5.large")]
    first = await launcher.create(claim, nodeclass(aws_account), types)
    restarted = InstanceLauncher(aws_clients, cluster_info(aws_account),
                                 unavailable=launcher.unavailable)  # fmt: skip
    second = await restarted.create(claim, nodeclass(aws_account), types)
    assert second.provider_id == first.provider_id
    assert second.capacity == first.capacity
    assert len(await describe_all(aws_clients)) == 1


async def test_nodeclaims_with_equal_settings_share_a_launch_template(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    nc = nodeclass(aws_account)
    await launcher.create(nodeclaim("claim-1", requirements=ON_DEMAND), nc, [priced("m5.large")])
    fresh = InstanceLauncher(aws_clients, cluster_info(aws_account),
                             unavailable=launcher.unavailable)  # fmt: skip
    await fresh.create(nodeclaim("claim-2", requirements=ON_DEMAND), nc, [priced("m5.large")])
    assert len(await templates(aws_clients)) == 1
    assert len(await describe_all(aws_clients)) == 2


async def test_each_architecture_gets_its_ami_in_its_own_template(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    instance = await launcher.create(nodeclaim(requirements=ON_DEMAND), nodeclass(aws_account),
                                     [priced("m5.large"), priced("m6g.large")])  # fmt: skip
    images = {t["Data"]["ImageId"] for t in await templates(aws_clients)}
    assert images == {aws_account.amis["al2023"]["x86_64"], aws_account.amis["al2023"]["arm64"]}
    expected = "x86_64" if instance.instance_type == "m5.large" else "arm64"
    assert instance.image_id == aws_account.amis["al2023"][expected]


async def test_spot_is_launched_when_allowed(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    claim = nodeclaim(requirements=SPOT_OR_ON_DEMAND)
    instance = await launcher.create(claim, nodeclass(aws_account), [priced("m5.large", spot=True)])
    assert instance.capacity_type == "spot"
    assert instance.labels["karpenter.sh/capacity-type"] == "spot"
    (raw,) = await describe_all(aws_clients)
    assert raw.get("InstanceLifecycle") == "spot"
    assert (await launcher.get(raw["InstanceId"])).capacity_type == "spot"


async def test_insufficient_capacity_on_the_cheapest_falls_to_the_next_and_marks_it(
    launcher: InstanceLauncher,
    aws_account: Account,
    priced: Any,
    ec2_faults: EC2Faults,
    unavailable: UnavailableOfferings,
) -> None:
    zone = ["us-west-2a"]
    ec2_faults.ice([("m5.large", "us-west-2a", "on-demand")])
    types = [priced("m5.large", zones=zone), priced("m5.xlarge", zones=zone)]
    instance = await launcher.create(
        nodeclaim(requirements=ON_DEMAND), nodeclass(aws_account), types
    )
    assert instance.instance_type == "m5.xlarge"
    assert unavailable.is_unavailable("m5.large", "us-west-2a", "on-demand")


@pytest.mark.parametrize(
    "case",
    [("SpotMaxPriceTooLow", "spot"),
     *((c, "on-demand") for c in sorted(CAPACITY_ERROR_CODES - {"SpotMaxPriceTooLow"}))],
    ids=lambda case: case[0],
)  # fmt: skip
async def test_every_capacity_error_code_marks_its_offering_unavailable(
    launcher: InstanceLauncher,
    aws_account: Account,
    priced: Any,
    ec2_faults: EC2Faults,
    case: tuple[str, str],
) -> None:
    """An offering failing with any of the codes is skipped and cached as unavailable;
    SpotMaxPriceTooLow (aws#9501) only ever concerns spot."""
    code, capacity_type = case
    zone = ["us-west-2a"]
    ec2_faults.ice([("m5.large", "us-west-2a", capacity_type)], code=code)
    wanted = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": [capacity_type]}]
    types = [priced("m5.large", zones=zone, spot=True), priced("m5.xlarge", zones=zone, spot=True)]
    instance = await launcher.create(nodeclaim(requirements=wanted), nodeclass(aws_account), types)
    assert instance.instance_type == "m5.xlarge"
    assert launcher.unavailable.current() == {("m5.large", "us-west-2a", capacity_type)}


async def test_all_offerings_out_of_capacity_raise_insufficient_capacity_naming_them(
    launcher: InstanceLauncher,
    aws_account: Account,
    priced: Any,
    ec2_faults: EC2Faults,
    unavailable: UnavailableOfferings,
) -> None:
    ec2_faults.ice([("m5.large", "*", "on-demand")])
    with pytest.raises(InsufficientCapacity) as raised:
        await launcher.create(nodeclaim(requirements=ON_DEMAND), nodeclass(aws_account),
                              [priced("m5.large")])  # fmt: skip
    expected = {("m5.large", z, "on-demand") for z in ("us-west-2a", "us-west-2b", "us-west-2c")}
    assert set(raised.value.pools) == expected
    assert unavailable.current() == expected
    # The next launch does not even ask EC2: the cache already says no.
    with pytest.raises(InsufficientCapacity) as again:
        await launcher.create(nodeclaim(requirements=ON_DEMAND), nodeclass(aws_account),
                              [priced("m5.large")])  # fmt: skip
    assert set(again.value.pools) == expected


async def test_a_bad_instance_type_is_a_create_error_with_ec2s_code(
    launcher: InstanceLauncher, aws_account: Account, priced: Any
) -> None:
    from tests.aws.launch.conftest import instance_type

    with pytest.raises(CreateError) as raised:
        await launcher.create(nodeclaim(requirements=ON_DEMAND), nodeclass(aws_account),
                              [instance_type("x99.nonsense")])  # fmt: skip
    assert raised.value.reason == "InvalidParameterValue"


async def test_a_launch_template_deleted_behind_its_back_is_recreated(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    nc = nodeclass(aws_account)
    await launcher.create(nodeclaim("claim-1", requirements=ON_DEMAND), nc, [priced("m5.large")])
    assert await delete_launch_templates(aws_clients, cluster_name="test-cluster",
                                         nodeclass="default") == 1  # fmt: skip
    await launcher.create(nodeclaim("claim-2", requirements=ON_DEMAND), nc, [priced("m5.large")])
    assert len(await templates(aws_clients)) == 1
    assert len(await describe_all(aws_clients)) == 2


async def test_delete_launch_templates_removes_only_the_node_class_templates(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    await launcher.create(nodeclaim("a", requirements=ON_DEMAND), nodeclass(aws_account),
                          [priced("m5.large")])  # fmt: skip
    await launcher.create(nodeclaim("b", requirements=ON_DEMAND),
                          nodeclass(aws_account, name="other"), [priced("m5.large")])  # fmt: skip
    assert len(await templates(aws_clients)) == 2
    assert await delete_launch_templates(aws_clients, cluster_name="test-cluster",
                                         nodeclass="other") == 1  # fmt: skip
    (left,) = await templates(aws_clients)
    assert {t["Key"]: t["Value"] for t in left["Tags"]}["karpenter.k8s.aws/ec2nodeclass"] == (
        "default"
    )


async def test_get_list_and_terminate(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    nc = nodeclass(aws_account)
    one = await launcher.create(
        nodeclaim("claim-1", requirements=ON_DEMAND), nc, [priced("m5.large")]
    )
    two = await launcher.create(
        nodeclaim("claim-2", requirements=ON_DEMAND), nc, [priced("m5.large")]
    )
    ec2 = await aws_clients.ec2()
    await ec2.run_instances(ImageId=aws_account.amis["al2023"]["x86_64"], MinCount=1, MaxCount=1)

    listed = {i.provider_id: i for i in await launcher.list()}
    assert set(listed) == {one.provider_id, two.provider_id}  # not the foreign instance
    assert listed[one.provider_id].nodeclaim == "claim-1"
    one_id = one.provider_id.rsplit("/", 1)[1]
    got = await launcher.get(one_id)
    assert (got.instance_type, got.zone, got.nodeclaim) == ("m5.large", one.zone, "claim-1")
    assert got.labels["karpenter.sh/nodepool"] == "default"

    await launcher.terminate(one_id)
    listed = {i.provider_id: i for i in await launcher.list()}
    # moto reports shutting-down first, terminated on the next describe
    assert one.provider_id not in listed or listed[one.provider_id].terminating
    with pytest.raises(NodeClaimNotFound):
        await launcher.get(one_id)
    with pytest.raises(NodeClaimNotFound):
        await launcher.terminate(one_id)
    with pytest.raises(NodeClaimNotFound):
        await launcher.get("i-0123456789abcdef0")
    assert [i.provider_id for i in await launcher.list()] == [two.provider_id]


async def test_a_reserved_offering_is_launched_into_its_reservation_first(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    ec2 = await aws_clients.ec2()
    created = await ec2.create_capacity_reservation(
        InstanceType="m5.large", InstancePlatform="Linux/UNIX", AvailabilityZone="us-west-2b",
        InstanceCount=2, InstanceMatchCriteria="targeted",
    )  # fmt: skip
    rid = created["CapacityReservation"]["CapacityReservationId"]
    reserved = Offering("us-west-2b", "reserved", 0.0001, reservation_id=rid,
                        reservation_capacity=2)  # fmt: skip
    base = priced("m5.large")
    it = new_instance_type(base.name, capacity=base.capacity, overhead=base.overhead,
                           offerings=[*base.offerings, reserved],
                           labels=base.requirements.labels(exclude=frozenset(
                               {"node.kubernetes.io/instance-type", "topology.kubernetes.io/zone",
                                "karpenter.sh/capacity-type"})))  # fmt: skip
    nc = nodeclass(aws_account)
    nc = attrs.evolve(nc, status=attrs.evolve(nc.status, capacity_reservations=(
        CapacityReservation(availability_zone="us-west-2b", id=rid,
                            instance_match_criteria="targeted", instance_type="m5.large",
                            owner_id=aws_account.account_id),
    )))  # fmt: skip
    claim = nodeclaim(requirements=[{"key": "karpenter.sh/capacity-type", "operator": "In",
                                     "values": ["reserved", "on-demand"]}])  # fmt: skip
    instance = await launcher.create(claim, nc, [it])
    assert (instance.capacity_type, instance.zone) == ("reserved", "us-west-2b")
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-id"] == rid
    assert instance.labels["karpenter.k8s.aws/capacity-reservation-type"] == "default"
    (template,) = await templates(aws_clients)
    assert template["Data"]["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": rid},
    }


async def test_concurrent_launches_share_one_template_despite_racing_to_create_it(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    nc, types = nodeclass(aws_account), [priced("m5.large")]
    claims = [nodeclaim(f"claim-{i}", requirements=ON_DEMAND) for i in range(4)]
    launched = await asyncio.gather(*(launcher.create(c, nc, types) for c in claims))
    assert len({i.provider_id for i in launched}) == 4
    assert len(await templates(aws_clients)) == 1
