"""The EC2 kubelet stand-in registers Nodes for running instances and removes them after."""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any

import pytest

from karpy.base.quantity import parse_quantity
from karpy.sandbox.aws.kubelet import EC2Kubelets
from tests.aws.harness.userdata_samples import AL2023, BOTTLEROCKET

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.faults import EC2Faults
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.cluster import SandboxCluster

OWNED = {"Key": "kubernetes.io/cluster/test-cluster", "Value": "owned"}


async def _template(clients: AWSClients, account: Account, name: str, user_data: str, *,
                    volumes: dict[str, int], family: str) -> str:  # fmt: skip
    ec2 = await clients.ec2()
    answer = await ec2.create_launch_template(
        LaunchTemplateName=name,
        LaunchTemplateData={
            "ImageId": account.amis[family]["x86_64"],
            "UserData": base64.b64encode(user_data.encode()).decode(),
            "BlockDeviceMappings": [
                {"DeviceName": device, "Ebs": {"VolumeSize": size, "VolumeType": "gp3"}}
                for device, size in volumes.items()
            ],
            "SecurityGroupIds": [account.security_group_id],
        },
    )
    return str(answer["LaunchTemplate"]["LaunchTemplateId"])


async def _fleet(clients: AWSClients, account: Account, template: str, instance_type: str,
                 zone: str) -> dict[str, Any]:  # fmt: skip
    ec2 = await clients.ec2()
    answer = await ec2.create_fleet(
        Type="instant",
        LaunchTemplateConfigs=[{
            "LaunchTemplateSpecification": {"LaunchTemplateId": template, "Version": "$Latest"},
            "Overrides": [{"InstanceType": instance_type, "SubnetId": account.subnets[zone]}],
        }],
        TargetCapacitySpecification={"TotalTargetCapacity": 1,
                                     "DefaultTargetCapacityType": "on-demand"},
        TagSpecifications=[{"ResourceType": "instance",
                            "Tags": [OWNED, {"Key": "karpenter.sh/nodepool", "Value": "default"}]}],
    )  # fmt: skip
    instance_id = answer["Instances"][0]["InstanceIds"][0]
    found = await ec2.describe_instances(InstanceIds=[instance_id])
    return dict(found["Reservations"][0]["Instances"][0])


async def _kubelets(clients: AWSClients, cluster: SandboxCluster) -> EC2Kubelets:
    kubelets = EC2Kubelets(clients, cluster.access, "test-cluster")
    _opened.append(kubelets)
    return kubelets


_opened: list[EC2Kubelets] = []


@pytest.fixture(autouse=True)
async def _close_kubelets() -> AsyncIterator[None]:
    yield
    while _opened:
        await _opened.pop().stop()


def _nodes(cluster: SandboxCluster) -> dict[str, dict[str, Any]]:
    return {n["metadata"]["name"]: n for n in cluster.store.list("nodes")}


async def test_al2023_instance_registers_a_node_as_kubelet_and_ccm_would(
    aws_account: Account, aws_clients: AWSClients, sandbox_cluster: SandboxCluster
) -> None:
    template = await _template(aws_clients, aws_account, "al2023", AL2023,
                               volumes={"/dev/xvda": 80}, family="al2023")  # fmt: skip
    instance = await _fleet(aws_clients, aws_account, template, "m5.large", "us-west-2b")
    kubelets = await _kubelets(aws_clients, sandbox_cluster)
    await kubelets.sync_once()

    node = _nodes(sandbox_cluster)[instance["PrivateDnsName"]]
    assert node["spec"]["providerID"] == f"aws:///us-west-2b/{instance['InstanceId']}"
    labels = node["metadata"]["labels"]
    assert labels["team"] == "blue" and labels["karpenter.sh/nodepool"] == "default"
    assert labels["node.kubernetes.io/instance-type"] == "m5.large"
    assert labels["topology.kubernetes.io/zone"] == "us-west-2b"
    assert labels["topology.kubernetes.io/region"] == "us-west-2"
    assert labels["topology.k8s.aws/zone-id"].startswith("usw2-az")
    assert labels["kubernetes.io/arch"] == "amd64" and labels["kubernetes.io/os"] == "linux"
    assert labels["kubernetes.io/hostname"] == instance["PrivateDnsName"]
    assert sorted((t["key"], t.get("value", ""), t["effect"]) for t in node["spec"]["taints"]) == [
        ("dedicated", "gpu", "NoSchedule"),
        ("karpenter.sh/unregistered", "", "NoExecute"),
    ]
    status = node["status"]
    assert status["capacity"] == {
        "cpu": "2",
        "memory": f"{(8192 - 333) * 1024}Ki",
        "pods": "29",
        "ephemeral-storage": f"{80 * 1024 * 1024}Ki",  # the launch template's root volume
    }
    assert parse_quantity(status["allocatable"]["cpu"]) == 1830
    memory = parse_quantity(status["allocatable"]["memory"])
    assert memory == (8192 - 333 - 642) * parse_quantity("1Mi")
    # less than the capacity, more than Karpenter's 7.5% guess minus the same reservations
    assert {"type": "InternalIP", "address": instance["PrivateIpAddress"]} in status["addresses"]

    # the generic kubelet makes it Ready and keeps what was registered
    for _ in range(100):
        node = _nodes(sandbox_cluster)[instance["PrivateDnsName"]]
        conditions = {c["type"]: c["status"] for c in node["status"].get("conditions", [])}
        if conditions.get("Ready") == "True":
            break
        await asyncio.sleep(0.02)
    assert conditions.get("Ready") == "True"
    assert node["status"]["allocatable"] == status["allocatable"]

    await kubelets.sync_once()  # a second pass registers nothing new
    assert len(_nodes(sandbox_cluster)) == 1


async def test_terminated_instance_loses_its_node(
    aws_account: Account, aws_clients: AWSClients, sandbox_cluster: SandboxCluster
) -> None:
    template = await _template(aws_clients, aws_account, "al2023", AL2023,
                               volumes={"/dev/xvda": 20}, family="al2023")  # fmt: skip
    instance = await _fleet(aws_clients, aws_account, template, "c5.large", "us-west-2a")
    kubelets = await _kubelets(aws_clients, sandbox_cluster)
    await kubelets.sync_once()
    assert instance["PrivateDnsName"] in _nodes(sandbox_cluster)
    ec2 = await aws_clients.ec2()
    await ec2.terminate_instances(InstanceIds=[instance["InstanceId"]])
    await kubelets.sync_once()
    assert instance["PrivateDnsName"] not in _nodes(sandbox_cluster)


async def test_bottlerocket_instance_uses_its_data_volume_and_toml_settings(
    aws_account: Account, aws_clients: AWSClients, sandbox_cluster: SandboxCluster
) -> None:
    template = await _template(aws_clients, aws_account, "br", BOTTLEROCKET,
                               volumes={"/dev/xvda": 4, "/dev/xvdb": 50},
                               family="bottlerocket")  # fmt: skip
    ec2 = await aws_clients.ec2()
    launched = await ec2.run_instances(
        MinCount=1, MaxCount=1, InstanceType="m6g.xlarge",
        LaunchTemplate={"LaunchTemplateId": template},
        SubnetId=aws_account.subnets["us-west-2c"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [OWNED]}],
    )  # fmt: skip
    instance = launched["Instances"][0]
    kubelets = await _kubelets(aws_clients, sandbox_cluster)
    await kubelets.sync_once()  # still pending in moto's first describe? then next pass
    await kubelets.sync_once()
    node = _nodes(sandbox_cluster)[instance["PrivateDnsName"]]
    assert node["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
    assert node["metadata"]["labels"]["karpenter.sh/capacity-type"] == "spot"
    assert node["status"]["capacity"]["pods"] == "58"
    assert node["status"]["capacity"]["cpu"] == "4"
    assert node["status"]["capacity"]["ephemeral-storage"] == f"{50 * 1024 * 1024}Ki"
    assert {t["key"] for t in node["spec"]["taints"]} == {"karpenter.sh/unregistered",
                                                          "dedicated"}  # fmt: skip


async def test_instances_of_other_clusters_and_throttling_do_not_matter(
    aws_account: Account,
    aws_clients: AWSClients,
    sandbox_cluster: SandboxCluster,
    ec2_faults: EC2Faults,
) -> None:
    ec2 = await aws_clients.ec2()
    await ec2.run_instances(
        MinCount=1, MaxCount=1, InstanceType="m5.large", ImageId=aws_account.amis["al2"]["x86_64"],
        TagSpecifications=[{"ResourceType": "instance", "Tags": [
            {"Key": "kubernetes.io/cluster/other", "Value": "owned"}]}],
    )  # fmt: skip
    ec2_faults.throttle("*", 100)  # aimed at karpy: the stand-in's calls are exempt
    kubelets = await _kubelets(aws_clients, sandbox_cluster)
    await kubelets.sync_once()
    await kubelets.sync_once()
    assert _nodes(sandbox_cluster) == {}
    assert ec2_faults.describe()["throttled"] == {}
