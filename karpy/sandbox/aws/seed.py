"""`seed_account`: make an empty moto look like the AWS account of an EKS cluster.

What Karpenter finds in a real account when it starts, created through the AWS APIs
(through `AWSClients`, as karpy itself calls AWS) where moto implements them: a VPC with
one private /20 subnet in each of three zones and a node security group, all tagged
``karpenter.sh/discovery: <cluster>`` as the getting-started guide tags them; the node IAM
role ``KarpenterNodeRole-<cluster>`` (EC2 may assume it); the EKS cluster itself
(DescribeCluster gives its endpoint and CA); the EKS-optimized AMIs and their public SSM
parameters (`karpy.sandbox.aws.amis`). Spot prices and Pricing need no seeding: the
`MotoServer` answers them from its `PriceTable`.

The returned `Account` is what tests and the sandbox need to refer to those resources.
moto must run in this process (`MotoServer`): the AMI details and SSM parameters are
written into its backends directly.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import attrs
from moto.core.models import DEFAULT_ACCOUNT_ID

from karpy.sandbox.aws.amis import eks_images, publish_parameters, register_images

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients

__all__ = ["DISCOVERY_TAG", "Account", "seed_account"]

DISCOVERY_TAG: Final = "karpenter.sh/discovery"
DEFAULT_REGION: Final = "us-west-2"
DEFAULT_K8S_VERSION: Final = "1.31"
ZONE_SUFFIXES: Final = ("a", "b", "c")
VPC_CIDR: Final = "10.0.0.0/16"
EC2_TRUST_POLICY: Final = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "ec2.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}
EKS_TRUST_POLICY: Final = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "eks.amazonaws.com"},
            "Action": "sts:AssumeRole",
        }
    ],
}


@attrs.frozen(slots=True)
class Account:
    """The seeded account of an EKS cluster (module docstring).

    ``amis`` maps a family key (``al2023``, ``al2023-nvidia``, ``al2023-neuron``,
    ``bottlerocket``, ``bottlerocket-nvidia``, ``al2``, ``al2-gpu``) to {arch: image id}
    of the newest release (what ``@latest`` resolves to); ``previous_amis`` the same for
    the older release; ``ami_versions`` the family's (older, newer) alias versions.
    """

    region: str
    cluster_name: str
    account_id: str
    vpc_id: str
    subnets: dict[str, str]
    security_group_id: str
    role_name: str
    role_arn: str
    amis: dict[str, dict[str, str]]
    previous_amis: dict[str, dict[str, str]]
    ami_versions: dict[str, tuple[str, str]]
    k8s_version: str
    cluster_endpoint: str
    cluster_ca_bundle: str


def _tags(resource: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


async def _network(ec2: Any, cluster: str, region: str) -> tuple[str, dict[str, str], str]:
    discovery = {DISCOVERY_TAG: cluster, f"kubernetes.io/cluster/{cluster}": "shared"}
    vpc = await ec2.create_vpc(
        CidrBlock=VPC_CIDR, TagSpecifications=_tags("vpc", {"Name": f"{cluster}-vpc"})
    )
    vpc_id = vpc["Vpc"]["VpcId"]
    subnets: dict[str, str] = {}
    for index, suffix in enumerate(ZONE_SUFFIXES):
        zone = f"{region}{suffix}"
        tags = {**discovery, "Name": f"{cluster}-private-{zone}",
                "kubernetes.io/role/internal-elb": "1"}  # fmt: skip
        subnet = await ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=f"10.0.{index * 16}.0/20",
            AvailabilityZone=zone,
            TagSpecifications=_tags("subnet", tags),
        )
        subnets[zone] = subnet["Subnet"]["SubnetId"]
    group = await ec2.create_security_group(
        GroupName=f"{cluster}-node",
        Description=f"Nodes of EKS cluster {cluster}",
        VpcId=vpc_id,
        TagSpecifications=_tags("security-group", {**discovery, "Name": f"{cluster}-node"}),
    )
    return vpc_id, subnets, group["GroupId"]


async def _roles(iam: Any, cluster: str) -> tuple[str, str, str]:
    node = await iam.create_role(
        RoleName=f"KarpenterNodeRole-{cluster}",
        AssumeRolePolicyDocument=json.dumps(EC2_TRUST_POLICY),
        Description=f"Nodes that Karpenter launches for {cluster}",
    )
    control_plane = await iam.create_role(
        RoleName=f"{cluster}-cluster-role",
        AssumeRolePolicyDocument=json.dumps(EKS_TRUST_POLICY),
    )
    return node["Role"]["RoleName"], node["Role"]["Arn"], control_plane["Role"]["Arn"]


async def seed_account(
    clients: AWSClients,
    cluster_name: str = "test-cluster",
    *,
    k8s_version: str = DEFAULT_K8S_VERSION,
    account_id: str = DEFAULT_ACCOUNT_ID,
) -> Account:
    """Create the account of EKS cluster ``cluster_name`` in the in-process moto that
    ``clients`` talk to (module docstring), in ``clients.region``."""
    region = clients.region
    ec2 = await clients.ec2()
    vpc_id, subnets, group_id = await _network(ec2, cluster_name, region)
    role_name, role_arn, cluster_role_arn = await _roles(await clients.iam(), cluster_name)
    eks = await clients.client("eks")
    await eks.create_cluster(
        name=cluster_name,
        version=k8s_version,
        roleArn=cluster_role_arn,
        resourcesVpcConfig={"subnetIds": list(subnets.values()), "securityGroupIds": [group_id]},
    )
    cluster = (await eks.describe_cluster(name=cluster_name))["cluster"]

    images = eks_images(k8s_version)
    ids = register_images(region, images, account_id)
    publish_parameters(ids, region, account_id)
    amis: dict[str, dict[str, str]] = {}
    previous: dict[str, dict[str, str]] = {}
    versions: dict[str, list[str]] = {}
    for spec, image_id in ids.items():
        (amis if spec.latest else previous).setdefault(spec.key, {})[spec.architecture] = image_id
        family = versions.setdefault(spec.key, [])
        if spec.release.version not in family:
            family.append(spec.release.version)
    return Account(
        region=region,
        cluster_name=cluster_name,
        account_id=account_id,
        vpc_id=vpc_id,
        subnets=subnets,
        security_group_id=group_id,
        role_name=role_name,
        role_arn=role_arn,
        amis=amis,
        previous_amis=previous,
        ami_versions={key: (found[0], found[-1]) for key, found in versions.items()},
        k8s_version=k8s_version,
        cluster_endpoint=str(cluster["endpoint"]),
        cluster_ca_bundle=str(cluster["certificateAuthority"]["data"]),
    )
