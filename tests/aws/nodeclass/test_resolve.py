"""Resolving an EC2NodeClass against a seeded moto account, over HTTP: every selector
kind, every alias family, the newest AMI winning, messages when nothing matches, the
managed instance profile, and failures that keep the last verdict."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

import pytest

from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.nodeclass import NodeClassResolver, resolve
from karpy.cloud.aws.nodeclass.placementgroup import check_placement_group
from karpy.cloud.aws.nodeclass.reservations import find_reservations
from karpy.sandbox.aws.amis import EKS_OWNER, ImageSpec, Release, publish_parameters
from karpy.sandbox.aws.amis import register_images as register_eks_images
from tests.aws.conftest import CREDENTIALS, REGION
from tests.aws.nodeclass.helpers import CLUSTER, newer_al2023_release, nodeclass, with_status
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.cloud.aws.nodeclass.resolve import Resolution
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer


async def _resolve(clients: AWSClients, nc: EC2NodeClass, k8s: str = "1.31",
                   **options: Any) -> Resolution:  # fmt: skip
    options.setdefault("manage_instance_profile", True)
    return await resolve(nc, clients, cluster_name=CLUSTER, k8s_version=k8s, **options)


def _condition(resolution: Resolution, type_: str) -> tuple[str, str, str]:
    found = resolution.status.condition(type_)
    assert found is not None, type_
    return found.status, found.reason, found.message


async def test_a_discovery_tagged_account_resolves_every_field_and_is_ready(
    aws_account: Account, aws_clients: AWSClients
):
    result = await _resolve(aws_clients, nodeclass())
    status = result.status
    assert result.ready and not result.errors
    assert {s.zone: s.id for s in status.subnets} == aws_account.subnets
    assert all(s.zone_id and s.zone_id.startswith("usw2-az") for s in status.subnets)
    assert [(g.id, g.name) for g in status.security_groups] == [
        (aws_account.security_group_id, f"{CLUSTER}-node")
    ]
    expected = {
        aws_account.amis[key][arch]
        for key in ("al2023", "al2023-nvidia", "al2023-neuron")
        for arch in aws_account.amis[key]
    }
    assert {a.id for a in status.amis} == expected
    assert status.instance_profile.startswith(f"{CLUSTER}_")
    for type_ in (
        "SubnetsReady",
        "SecurityGroupsReady",
        "AMIsReady",
        "InstanceProfileReady",
        "ValidationSucceeded",
        "CapacityReservationsReady",
        "PlacementGroupReady",
    ):
        assert _condition(result, type_)[0] == "True", type_  # fmt: skip


async def test_subnets_with_more_free_addresses_come_first(
    aws_account: Account, aws_clients: AWSClients
):
    ec2 = await aws_clients.ec2()
    small = await ec2.create_subnet(
        VpcId=aws_account.vpc_id, CidrBlock="10.0.200.0/24", AvailabilityZone="us-west-2a",
        TagSpecifications=[{"ResourceType": "subnet", "Tags": [{"Key": "extra", "Value": "1"}]}],
    )  # fmt: skip
    small_id = small["Subnet"]["SubnetId"]
    nc = nodeclass(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "*"}},
                                        {"tags": {"extra": "1"}}])  # fmt: skip
    result = await _resolve(aws_clients, nc)
    assert [s.id for s in result.status.subnets][-1] == small_id, "a /24 has fewer free IPs"
    assert len(result.status.subnets) == 4


async def test_subnets_and_security_groups_by_id_and_by_group_name(
    aws_account: Account, aws_clients: AWSClients
):
    subnet = aws_account.subnets["us-west-2b"]
    nc = nodeclass(subnetSelectorTerms=[{"id": subnet}],
                   securityGroupSelectorTerms=[{"name": f"{CLUSTER}-node"}])  # fmt: skip
    result = await _resolve(aws_clients, nc)
    assert [(s.id, s.zone) for s in result.status.subnets] == [(subnet, "us-west-2b")]
    assert [g.id for g in result.status.security_groups] == [aws_account.security_group_id]
    by_id = await _resolve(aws_clients, nodeclass(
        securityGroupSelectorTerms=[{"id": aws_account.security_group_id}]))  # fmt: skip
    assert [g.id for g in by_id.status.security_groups] == [aws_account.security_group_id]


async def test_selectors_that_match_nothing_say_which_selector(
    aws_account: Account, aws_clients: AWSClients
):
    nc = nodeclass(subnetSelectorTerms=[{"tags": {"karpenter.sh/discovery": "other"}}],
                   securityGroupSelectorTerms=[{"name": "nope"}])  # fmt: skip
    result = await _resolve(aws_clients, nc)
    assert _condition(result, "SubnetsReady") == (
        "False", "SubnetsNotFound",
        'SubnetSelector did not match any Subnets: [{"tags":{"karpenter.sh/discovery":"other"}}]',
    )  # fmt: skip
    assert _condition(result, "SecurityGroupsReady") == (
        "False", "SecurityGroupsNotFound",
        'SecurityGroupSelector did not match any SecurityGroups: [{"name":"nope"}]',
    )  # fmt: skip
    assert _condition(result, "ValidationSucceeded")[1] == "DependenciesNotReady"
    ready = _condition(result, "Ready")
    assert ready[:2] == ("False", "UnhealthyDependents")
    assert "SubnetsReady=False" in ready[2] and "SecurityGroupsReady=False" in ready[2]
    assert result.status.subnets == () and result.status.security_groups == ()
    assert result.requeue_after == 60.0


@pytest.mark.parametrize("minutes", [2, 7])
async def test_a_ready_class_is_looked_at_again_after_the_security_group_refresh(
    aws_account: Account, aws_clients: AWSClients, minutes: int
):
    """``SECURITY_GROUP_REFRESH_INTERVAL`` (Karpenter v1.15), here the shortest refresh
    (reserved capacity off: its reservations are polled every minute)."""
    resolver = NodeClassResolver(
        aws_clients, cluster_name=CLUSTER, reserved_capacity=False, ami_refresh=900.0,
        subnet_refresh=900.0, security_group_refresh=60.0 * minutes,
    )  # fmt: skip
    result = await resolver.resolve(nodeclass(), "1.31")
    assert result.ready
    assert result.requeue_after == 60.0 * minutes


def _ids(account: Account, table: str, *keys: str) -> set[str]:
    found = getattr(account, table)
    return {image for key in keys for image in found[key].values()}


@pytest.mark.parametrize(("alias", "table", "keys"), [
    ("al2023@latest", "amis", ("al2023", "al2023-nvidia", "al2023-neuron")),
    ("al2023@v20241024", "previous_amis", ("al2023", "al2023-nvidia", "al2023-neuron")),
    ("bottlerocket@latest", "amis", ("bottlerocket", "bottlerocket-nvidia")),
    ("bottlerocket@v1.26.1", "previous_amis", ("bottlerocket", "bottlerocket-nvidia")),
    ("bottlerocket@1.26.1", "previous_amis", ("bottlerocket", "bottlerocket-nvidia")),
    ("al2@latest", "amis", ("al2", "al2-gpu")),
    ("al2@v20241024", "previous_amis", ("al2", "al2-gpu")),
])  # fmt: skip
async def test_each_alias_family_resolves_every_architecture_and_variant(
    aws_account: Account, aws_clients: AWSClients, alias: str, table: str, keys: tuple[str, ...]
):
    result = await _resolve(aws_clients, nodeclass(amiSelectorTerms=[{"alias": alias}]))
    assert {a.id for a in result.status.amis} == _ids(aws_account, table, *keys)
    archs = {r.values for a in result.status.amis for r in a.requirements
             if r.key == "kubernetes.io/arch"}  # fmt: skip
    assert archs == {("amd64",), ("arm64",)}
    standard = aws_account.amis[keys[0]]["x86_64"] if table == "amis" else None
    if standard is not None:
        entry = next(a for a in result.status.amis if a.id == standard)
        assert [(r.key, r.operator) for r in entry.requirements] == [
            ("kubernetes.io/arch", "In"),
            ("karpenter.k8s.aws/instance-gpu-count", "DoesNotExist"),
            ("karpenter.k8s.aws/instance-accelerator-count", "DoesNotExist"),
        ]


async def test_aliases_refused_or_unpublished_are_reported(
    aws_account: Account, aws_clients: AWSClients
):
    al2 = await _resolve(aws_clients, nodeclass(amiSelectorTerms=[{"alias": "al2@latest"}]),
                         k8s="1.33")  # fmt: skip
    assert _condition(al2, "AMIsReady")[:2] == ("False", "UnsupportedAlias")
    missing = await _resolve(aws_clients, nodeclass(), k8s="1.29")
    assert _condition(missing, "AMIsReady") == (
        "False", "AMINotFound",
        'AMISelector did not match any AMIs: no SSM parameter answered for alias '
        '"al2023@latest" on Kubernetes 1.29',
    )  # fmt: skip
    assert missing.status.amis == () and not missing.ready


async def test_name_terms_default_to_self_and_amazon_owners_and_pick_the_newest(
    aws_account: Account, aws_clients: AWSClients
):
    name = f"amazon-eks-node-al2023-*-standard-{aws_account.k8s_version}-*"
    result = await _resolve(aws_clients, nodeclass(amiSelectorTerms=[{"name": name}],
                                                   amiFamily="AL2023"))  # fmt: skip
    assert {a.id for a in result.status.amis} == _ids(aws_account, "amis", "al2023")
    owned = await _resolve(aws_clients, nodeclass(
        amiSelectorTerms=[{"name": name, "owner": EKS_OWNER}], amiFamily="AL2023"))  # fmt: skip
    assert {a.id for a in owned.status.amis} == _ids(aws_account, "amis", "al2023")
    foreign = [{"name": name, "owner": "111122223333"}]
    elsewhere = await _resolve(aws_clients, nodeclass(amiSelectorTerms=foreign,
                                                      amiFamily="AL2023"))  # fmt: skip
    status, reason, message = _condition(elsewhere, "AMIsReady")
    assert (status, reason) == ("False", "AMINotFound")
    assert message == ("AMISelector did not match any AMIs: "
                       f'[{{"name":"{name}","owner":"111122223333"}}]')  # fmt: skip


async def _tagged_image(clients: AWSClients, name: str, tags: dict[str, str]) -> str:
    ec2 = await clients.ec2()
    image = await ec2.register_image(
        Name=name, Architecture="x86_64", RootDeviceName="/dev/xvda", VirtualizationType="hvm",
        TagSpecifications=[{"ResourceType": "image",
                            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )  # fmt: skip
    image_id: str = image["ImageId"]
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.ec2.models import ec2_backends

    ec2_backends[DEFAULT_ACCOUNT_ID][REGION].amis[image_id].architecture = "x86_64"
    if not (await ec2.describe_images(ImageIds=[image_id]))["Images"][0].get("Tags"):
        await ec2.create_tags(Resources=[image_id],
                              Tags=[{"Key": k, "Value": v} for k, v in tags.items()])  # fmt: skip
    return image_id


async def test_tag_id_and_ssm_parameter_terms(aws_account: Account, aws_clients: AWSClients):
    custom = await _tagged_image(aws_clients, "golden-1", {"team": "platform"})
    by_tag = await _resolve(aws_clients, nodeclass(amiSelectorTerms=[{"tags": {"team": "*"}}],
                                                   amiFamily="AL2023"))  # fmt: skip
    assert [a.id for a in by_tag.status.amis] == [custom]
    by_value = await _resolve(aws_clients, nodeclass(
        amiSelectorTerms=[{"tags": {"team": "platform"}}], amiFamily="AL2023"))  # fmt: skip
    assert [a.id for a in by_value.status.amis] == [custom]
    by_id = await _resolve(aws_clients, nodeclass(amiSelectorTerms=[{"id": custom}],
                                                  amiFamily="Custom"))  # fmt: skip
    assert [(a.id, a.name) for a in by_id.status.amis] == [(custom, "golden-1")]

    ssm = await aws_clients.ssm()
    await ssm.put_parameter(Name="/team/golden-ami", Value=custom, Type="String")
    by_parameter = await _resolve(aws_clients, nodeclass(
        amiSelectorTerms=[{"ssmParameter": "/team/golden-ami"}], amiFamily="AL2023"))  # fmt: skip
    assert [a.id for a in by_parameter.status.amis] == [custom]
    missing = await _resolve(aws_clients, nodeclass(
        amiSelectorTerms=[{"ssmParameter": "/team/none"}], amiFamily="AL2023"))  # fmt: skip
    assert _condition(missing, "AMIsReady")[:2] == ("False", "AMINotFound")


async def test_latest_is_read_again_on_the_next_refresh_and_the_new_ami_wins(
    aws_account: Account, aws_clients: AWSClients
):
    clock = FakeClock()
    resolver = NodeClassResolver(aws_clients, cluster_name=CLUSTER, clock=clock)
    nc = nodeclass()
    first = await resolver.resolve(nc, "1.31")
    old = aws_account.amis["al2023"]["x86_64"]
    assert old in {a.id for a in first.status.amis}

    ids = register_eks_images(REGION, newer_al2023_release(aws_account, "20241201"))
    publish_parameters(ids, REGION)
    (new,) = ids.values()
    calls = resolver.amis.params.calls
    again = await resolver.resolve(nc, "1.31")
    assert resolver.amis.params.calls == calls, "within the refresh, SSM answers are reused"
    assert old in {a.id for a in again.status.amis}

    await clock.advance(61)
    refreshed = await resolver.resolve(nc, "1.31")
    ids_now = {a.id for a in refreshed.status.amis}
    assert new in ids_now and old not in ids_now
    assert refreshed.status.amis[0].id == new, "newest first"


async def test_the_managed_instance_profile_is_created_once_and_reused(
    aws_account: Account, aws_clients: AWSClients
):
    resolver = NodeClassResolver(aws_clients, cluster_name=CLUSTER)
    nc = nodeclass(tags={"team": "platform"})
    first = await resolver.resolve(nc, "1.31")
    name = first.status.instance_profile
    iam = await aws_clients.iam()
    profile = (await iam.get_instance_profile(InstanceProfileName=name))["InstanceProfile"]
    assert profile["Path"] == f"/karpenter/{REGION}/{CLUSTER}/uid-default/"
    assert [r["RoleName"] for r in profile["Roles"]] == [aws_account.role_name]
    tags = {t["Key"]: t["Value"] for t in profile["Tags"]}
    assert tags == {"team": "platform", f"kubernetes.io/cluster/{CLUSTER}": "owned",
                    "eks:eks-cluster-name": CLUSTER, "karpenter.k8s.aws/ec2nodeclass": "default",
                    "topology.kubernetes.io/region": REGION}  # fmt: skip

    written = with_status(nc, first.status)
    assert (await resolver.resolve(written, "1.31")).status.instance_profile == name
    # A fresh process whose status write was lost adopts the profile under the class's path.
    fresh = NodeClassResolver(aws_clients, cluster_name=CLUSTER)
    assert (await fresh.resolve(nc, "1.31")).status.instance_profile == name
    listed = (await iam.list_instance_profiles())["InstanceProfiles"]
    assert [p["InstanceProfileName"] for p in listed] == [name]

    assert await resolver.profiles.delete_managed(nc) == [name]
    assert (await iam.list_instance_profiles())["InstanceProfiles"] == []


async def test_a_missing_role_or_profile_is_named_and_nothing_is_left_behind(
    aws_account: Account, aws_clients: AWSClients
):
    no_role = await _resolve(aws_clients, nodeclass(role="NoSuchRole"))
    assert _condition(no_role, "InstanceProfileReady") == (
        "False", "RoleNotFound", 'role "NoSuchRole" does not exist')  # fmt: skip
    assert no_role.status.instance_profile == ""
    iam = await aws_clients.iam()
    assert (await iam.list_instance_profiles())["InstanceProfiles"] == []

    await iam.create_instance_profile(InstanceProfileName="mine")
    given = await _resolve(aws_clients, nodeclass(role=None, instanceProfile="mine"))
    assert given.status.instance_profile == "mine"
    assert _condition(given, "InstanceProfileReady")[0] == "True"
    absent = await _resolve(aws_clients, nodeclass(role=None, instanceProfile="theirs"))
    assert _condition(absent, "InstanceProfileReady") == (
        "False", "InstanceProfileNotFound", 'instance profile "theirs" does not exist')  # fmt: skip
    isolated = NodeClassResolver(aws_clients, cluster_name=CLUSTER, verify_instance_profile=False)
    trusted = await isolated.resolve(nodeclass(role=None, instanceProfile="theirs"), "1.31")
    assert _condition(trusted, "InstanceProfileReady")[0] == "True", "no IAM in an isolated VPC"


async def test_looking_without_managing_creates_no_profile(
    aws_account: Account, aws_clients: AWSClients
):
    result = await resolve(nodeclass(), aws_clients, cluster_name=CLUSTER, k8s_version="1.31")
    assert _condition(result, "InstanceProfileReady")[:2] == ("Unknown", "NotManaged")
    assert result.status.amis and result.status.subnets
    iam = await aws_clients.iam()
    assert (await iam.list_instance_profiles())["InstanceProfiles"] == []


async def test_restricted_tags_fail_validation(aws_account: Account, aws_clients: AWSClients):
    result = await _resolve(aws_clients, nodeclass(tags={"karpenter.sh/nodepool": "x"}))
    status, reason, message = _condition(result, "ValidationSucceeded")
    assert (status, reason) == ("False", "TagValidationFailed")
    assert '"karpenter.sh/nodepool"' in message
    assert not result.ready


async def test_an_aws_failure_keeps_the_previous_verdict(
    aws_account: Account, moto_server: MotoServer, ec2_faults: Any
):
    # botocore's max_attempts counts retries: none, so the throttled call fails.
    clients = AWSClients(REGION, endpoint_url=moto_server.url, credentials=CREDENTIALS,
                         max_attempts=0)  # fmt: skip
    try:
        resolver = NodeClassResolver(clients, cluster_name=CLUSTER)
        nc = nodeclass()
        good = await resolver.resolve(nc, "1.31")
        assert good.ready
        written = with_status(nc, good.status)
        ec2_faults.throttle("DescribeSubnets", 1)
        hiccup = await resolver.resolve(written, "1.31")
        assert [step for step, _ in hiccup.errors] == ["SubnetsReady"]
        assert "RequestLimitExceeded" in hiccup.errors[0][1]
        assert hiccup.status.subnets == good.status.subnets
        assert hiccup.ready, "a class that was ready stays ready through a passing error"
    finally:
        await clients.aclose()


class _Paginator:
    def __init__(self, pages: list[dict[str, Any]]) -> None:
        self.pages = pages

    async def paginate(self, **params: Any) -> Any:
        for page in self.pages:
            yield page


class _ReservationsEC2:
    """DescribeCapacityReservations as EC2 answers it (moto does not implement it)."""

    def __init__(self, reservations: list[dict[str, Any]]) -> None:
        self.reservations = reservations

    def get_paginator(self, operation: str) -> _Paginator:
        assert operation == "describe_capacity_reservations"
        return _Paginator([{"CapacityReservations": self.reservations}])


async def test_reservations_are_deduplicated_and_ended_ones_dropped():
    now = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    live = {"CapacityReservationId": "cr-1", "EndDate": now + datetime.timedelta(hours=1)}
    ended = {"CapacityReservationId": "cr-2", "EndDate": now - datetime.timedelta(hours=1)}
    open_ended = {"CapacityReservationId": "cr-3"}
    ec2 = _ReservationsEC2([live, ended, open_ended])
    spec = nodeclass(capacityReservationSelectorTerms=[{"id": "cr-1"}, {"tags": {"team": "a"}}])
    terms = spec.spec.capacity_reservation_selector_terms
    found = await find_reservations(ec2, terms, now)
    assert [r["CapacityReservationId"] for r in found] == ["cr-1", "cr-3"]


class _PlacementEC2:
    """DescribePlacementGroups as EC2 answers it (moto's answers with a 500)."""

    def __init__(self, groups: dict[str, str]) -> None:
        self.groups = groups  # name -> state

    async def describe_placement_groups(self, GroupNames: list[str]) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        (name,) = GroupNames
        if name not in self.groups:
            error = {"Code": "InvalidPlacementGroup.Unknown", "Message": f"{name} unknown"}
            raise ClientError({"Error": error}, "DescribePlacementGroups")
        return {"PlacementGroups": [{"GroupName": name, "State": self.groups[name]}]}


async def test_a_named_placement_group_must_exist_and_be_available():
    selector = nodeclass(placementGroupSelector={"name": "pg-a"}).spec.placement_group_selector
    assert (await check_placement_group(_PlacementEC2({"pg-a": "available"}), selector)).is_true
    for groups in ({}, {"pg-a": "deleting"}):
        outcome = await check_placement_group(_PlacementEC2(groups), selector)
        assert (outcome.status, outcome.reason, outcome.message) == (
            "False", "PlacementGroupNotFound", 'Placement group "pg-a" not found')  # fmt: skip


async def test_capacity_reservations_count_only_with_their_gate(
    aws_account: Account, aws_clients: AWSClients
):
    result = await _resolve(aws_clients, nodeclass(), reserved_capacity=False)
    assert result.status.condition("CapacityReservationsReady") is None
    assert result.ready


async def test_a_new_role_gets_a_new_profile_and_the_old_one_stays_for_running_nodes(
    aws_account: Account, aws_clients: AWSClients
):
    import json

    iam = await aws_clients.iam()
    await iam.create_role(RoleName="OtherNodeRole", AssumeRolePolicyDocument=json.dumps({}))
    resolver = NodeClassResolver(aws_clients, cluster_name=CLUSTER)
    nc = nodeclass()
    first = (await resolver.resolve(nc, "1.31")).status
    moved = nodeclass(role="OtherNodeRole")
    moved = with_status(moved, first)
    second = (await resolver.resolve(moved, "1.31")).status
    assert second.instance_profile != first.instance_profile
    profile = await iam.get_instance_profile(InstanceProfileName=second.instance_profile)
    assert [r["RoleName"] for r in profile["InstanceProfile"]["Roles"]] == ["OtherNodeRole"]
    names = {p["InstanceProfileName"] for p in
             (await iam.list_instance_profiles())["InstanceProfiles"]}  # fmt: skip
    assert names == {first.instance_profile, second.instance_profile}


async def test_a_windows_alias_requires_windows_and_its_build(
    aws_account: Account, aws_clients: AWSClients
):
    k8s = aws_account.k8s_version
    path = (f"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-"
            f"{k8s}/image_id")  # fmt: skip
    release = Release("2024.11", datetime.datetime(2024, 11, 12, tzinfo=datetime.UTC))
    spec = ImageSpec("windows2022", "x86_64", f"Windows_Server-2022-English-Core-EKS_Optimized-"
                     f"{k8s}-2024.11.12", "801119661308", release, True, (path,))  # fmt: skip
    ids = register_eks_images(REGION, [spec])
    publish_parameters(ids, REGION)
    result = await _resolve(
        aws_clients, nodeclass(amiSelectorTerms=[{"alias": "windows2022@latest"}])
    )
    (ami,) = result.status.amis
    assert ami.id == ids[spec]
    assert [(r.key, r.operator, r.values) for r in ami.requirements] == [
        ("kubernetes.io/os", "In", ("windows",)),
        ("kubernetes.io/arch", "In", ("amd64",)),
        ("node.kubernetes.io/windows-build", "In", ("10.0.20348",)),
    ]
    too_early = await _resolve(aws_clients, nodeclass(
        amiSelectorTerms=[{"alias": "windows2025@latest"}]))  # fmt: skip
    assert _condition(too_early, "AMIsReady")[:2] == ("False", "UnsupportedAlias")
