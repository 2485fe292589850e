"""The seeded EKS account: what the AWS provider finds when it resolves a NodeClass."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account


async def _parameter(clients: AWSClients, name: str) -> str:
    ssm = await clients.ssm()
    return str((await ssm.get_parameter(Name=name))["Parameter"]["Value"])


async def test_al2023_alias_parameters_resolve_to_images_of_the_right_architecture(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    base = "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023"
    x86 = await _parameter(aws_clients, f"{base}/x86_64/standard/recommended/image_id")
    arm = await _parameter(aws_clients, f"{base}/arm64/standard/recommended/image_id")
    assert x86 == aws_account.amis["al2023"]["x86_64"]
    assert arm == aws_account.amis["al2023"]["arm64"]
    ec2 = await aws_clients.ec2()
    images = (await ec2.describe_images(ImageIds=[x86, arm]))["Images"]
    by_id = {image["ImageId"]: image for image in images}
    assert by_id[x86]["Architecture"] == "x86_64"
    assert by_id[arm]["Architecture"] == "arm64"
    assert by_id[x86]["Name"] == "amazon-eks-node-al2023-x86_64-standard-1.31-v20241109"


async def test_versioned_parameters_name_the_older_release(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    older, newer = aws_account.ami_versions["al2023"]
    assert (older, newer) == ("v20241024", "v20241109")
    name = (
        "/aws/service/eks/optimized-ami/1.31/amazon-linux-2023/x86_64/standard/"
        f"amazon-eks-node-al2023-x86_64-standard-1.31-{older}/image_id"
    )
    assert await _parameter(aws_clients, name) == aws_account.previous_amis["al2023"]["x86_64"]
    assert aws_account.previous_amis["al2023"]["x86_64"] != aws_account.amis["al2023"]["x86_64"]


async def test_bottlerocket_and_al2_parameters_resolve(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    br = "/aws/service/bottlerocket/aws-k8s-1.31"
    assert (
        await _parameter(aws_clients, f"{br}/arm64/latest/image_id")
        == (aws_account.amis["bottlerocket"]["arm64"])
    )
    assert (
        await _parameter(aws_clients, f"{br}-nvidia/x86_64/1.26.2/image_id")
        == (aws_account.amis["bottlerocket-nvidia"]["x86_64"])
    )
    al2 = "/aws/service/eks/optimized-ami/1.31"
    assert (
        await _parameter(aws_clients, f"{al2}/amazon-linux-2-arm64/recommended/image_id")
        == (aws_account.amis["al2"]["arm64"])
    )
    assert (
        await _parameter(aws_clients, f"{al2}/amazon-linux-2-gpu/recommended/image_id")
        == (aws_account.amis["al2-gpu"]["x86_64"])
    )
    ec2 = await aws_clients.ec2()
    image = await ec2.describe_images(ImageIds=[aws_account.amis["bottlerocket"]["arm64"]])
    assert image["Images"][0]["Name"].startswith("bottlerocket-aws-k8s-1.31-aarch64-v1.26.2-")


async def test_subnets_and_security_group_are_found_by_the_discovery_tag(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    ec2 = await aws_clients.ec2()
    tag = [{"Name": "tag:karpenter.sh/discovery", "Values": [aws_account.cluster_name]}]
    subnets = (await ec2.describe_subnets(Filters=tag))["Subnets"]
    assert {s["AvailabilityZone"]: s["SubnetId"] for s in subnets} == aws_account.subnets
    assert set(aws_account.subnets) == {"us-west-2a", "us-west-2b", "us-west-2c"}
    assert all(s["AvailableIpAddressCount"] > 4000 for s in subnets)  # /20
    groups = (await ec2.describe_security_groups(Filters=tag))["SecurityGroups"]
    assert [(g["GroupId"], g["GroupName"]) for g in groups] == [
        (aws_account.security_group_id, "test-cluster-node")
    ]


async def test_node_role_and_eks_cluster_exist(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    iam = await aws_clients.iam()
    role = (await iam.get_role(RoleName="KarpenterNodeRole-test-cluster"))["Role"]
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
        "Service": "ec2.amazonaws.com"
    }
    eks = await aws_clients.client("eks")
    cluster = (await eks.describe_cluster(name="test-cluster"))["cluster"]
    assert cluster["version"] == "1.31"
    assert cluster["endpoint"] == aws_account.cluster_endpoint
    assert aws_account.cluster_ca_bundle


async def test_reset_between_tests_leaves_one_account(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    ec2 = await aws_clients.ec2()
    vpcs = await ec2.describe_vpcs(Filters=[{"Name": "tag:Name", "Values": ["test-cluster-vpc"]}])
    assert [v["VpcId"] for v in vpcs["Vpcs"]] == [aws_account.vpc_id]
