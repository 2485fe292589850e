"""Drift of an EC2 instance from its EC2NodeClass (`karpy.cloud.aws.drift`), reason by
reason and in Karpenter's order."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.aws.amis import ami_for
from karpy.cloud.aws.drift import InstanceFacts, drift_reason, facts_of, instance_facts
from karpy.scheduling.instancetypes import Offering, new_instance_type
from karpy.scheduling.requirements import Requirement
from tests.apis.builders import ec2nodeclass, nodeclaim

HASH = "karpenter.k8s.aws/ec2nodeclass-hash"
VERSION = "karpenter.k8s.aws/ec2nodeclass-hash-version"
AMD64 = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
ARM64 = {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}
NO_GPU = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"}
GPU = {"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Exists"}
STATUS: dict[str, Any] = {
    "subnets": [{"id": "subnet-a", "zone": "us-west-2a"}, {"id": "subnet-b", "zone": "us-west-2b"}],
    "securityGroups": [{"id": "sg-1"}, {"id": "sg-2"}],
    "amis": [
        {"id": "ami-gpu", "requirements": [AMD64, GPU]},
        {"id": "ami-amd", "requirements": [AMD64, NO_GPU]},
        {"id": "ami-arm", "requirements": [ARM64, NO_GPU]},
    ],
    "capacityReservations": [],
}
FACTS = InstanceFacts("subnet-a", frozenset({"sg-1", "sg-2"}))


def nodeclass(annotations: dict[str, str] | None = None, **status: Any) -> EC2NodeClass:
    doc = ec2nodeclass()
    doc["metadata"]["annotations"] = annotations or {HASH: "h1", VERSION: "v5"}
    doc["status"] = {**STATUS, **status}
    return EC2NodeClass.from_dict(doc)


def claim(annotations: dict[str, str] | None = None, image: str = "ami-amd") -> NodeClaim:
    doc = nodeclaim()
    doc["metadata"]["annotations"] = annotations or {HASH: "h1", VERSION: "v5"}
    doc["status"] = {"providerID": "aws:///us-west-2a/i-1", "imageID": image}
    return NodeClaim.from_dict(doc)


def instance_type(arch: str = "amd64", gpus: int = 0):
    gpu = (
        Requirement.new("karpenter.k8s.aws/instance-gpu-count", "In", (str(gpus),))
        if gpus
        else Requirement.does_not_exist("karpenter.k8s.aws/instance-gpu-count")
    )
    return new_instance_type(
        "m5.large", capacity={"cpu": 2000}, labels={"kubernetes.io/arch": arch},
        requirements=[gpu], offerings=[Offering("us-west-2a", "on-demand", 0.1)],
    )  # fmt: skip


def test_an_instance_matching_its_class_has_not_drifted():
    assert drift_reason(claim(), nodeclass(), instance_type(), FACTS) == ""


def test_a_changed_class_hash_is_nodeclass_drift_before_anything_else():
    drifted = nodeclass({HASH: "h2", VERSION: "v5"}, subnets=[{"id": "subnet-z", "zone": "z"}])
    assert drift_reason(claim(), drifted, instance_type(), FACTS) == "NodeClassDrift"


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [({HASH: "h2", VERSION: "v6"}, {HASH: "h1", VERSION: "v5"}),  # a new hashing scheme
     ({HASH: "h2", VERSION: "v5"}, {"other": "x"})],  # a NodeClaim from before hashes
)  # fmt: skip
def test_hashes_are_compared_only_under_the_same_version(ours, theirs):
    assert drift_reason(claim(theirs), nodeclass(ours), instance_type(), FACTS) == ""


def test_amis_map_to_types_by_their_requirements_first_match_wins():
    amis = nodeclass().status.amis
    assert ami_for(instance_type("amd64").requirements, amis).id == "ami-amd"  # type: ignore[union-attr]
    assert ami_for(instance_type("arm64").requirements, amis).id == "ami-arm"  # type: ignore[union-attr]
    assert ami_for(instance_type("amd64", gpus=1).requirements, amis).id == "ami-gpu"  # type: ignore[union-attr]


def test_an_image_the_class_no_longer_resolves_for_the_type_is_ami_drift():
    assert drift_reason(claim(image="ami-old"), nodeclass(), instance_type(), FACTS) == "AMIDrift"
    # The GPU AMI is a resolved AMI, but not the one for a type without GPUs.
    assert drift_reason(claim(image="ami-gpu"), nodeclass(), instance_type(), FACTS) == "AMIDrift"
    # Not judged when the type is not offered any more.
    assert drift_reason(claim(image="ami-old"), nodeclass(), None, FACTS) == ""


def test_security_groups_must_be_exactly_the_classs():
    fewer = InstanceFacts("subnet-a", frozenset({"sg-1"}))
    more = InstanceFacts("subnet-a", frozenset({"sg-1", "sg-2", "sg-3"}))
    for facts in (fewer, more):
        assert drift_reason(claim(), nodeclass(), instance_type(), facts) == "SecurityGroupDrift"


def test_a_subnet_the_class_no_longer_selects_is_subnet_drift():
    facts = InstanceFacts("subnet-gone", frozenset({"sg-1", "sg-2"}))
    assert drift_reason(claim(), nodeclass(), instance_type(), facts) == "SubnetDrift"


def test_a_reservation_the_class_no_longer_selects_is_capacity_reservation_drift():
    facts = InstanceFacts("subnet-a", frozenset({"sg-1", "sg-2"}), reservation_id="cr-1")
    assert drift_reason(claim(), nodeclass(), instance_type(), facts) == "CapacityReservationDrift"
    selected = nodeclass(capacityReservations=[{
        "id": "cr-1", "availabilityZone": "us-west-2a", "instanceMatchCriteria": "targeted",
        "instanceType": "m5.large", "ownerID": "123456789012"}])  # fmt: skip
    assert drift_reason(claim(), selected, instance_type(), facts) == ""


def test_a_status_that_resolved_nothing_decides_nothing():
    empty = nodeclass(subnets=[], securityGroups=[], amis=[])
    strange = InstanceFacts("subnet-x", frozenset({"sg-x"}))
    assert drift_reason(claim(image="ami-x"), empty, instance_type(), strange) == ""


def test_facts_come_from_a_describe_instances_entry():
    described = {"SubnetId": "subnet-a", "SecurityGroups": [{"GroupId": "sg-1"}],
                 "CapacityReservationId": "cr-9"}  # fmt: skip
    assert facts_of(described) == InstanceFacts("subnet-a", frozenset({"sg-1"}), "cr-9")


async def test_instance_facts_come_from_ec2_and_a_gone_instance_has_none(aws_account, aws_clients):
    ec2 = await aws_clients.ec2()
    subnet = aws_account.subnets["us-west-2a"]
    launched = await ec2.run_instances(
        ImageId=aws_account.amis["al2023"]["x86_64"], InstanceType="m5.large", MinCount=1,
        MaxCount=1, SubnetId=subnet, SecurityGroupIds=[aws_account.security_group_id],
    )  # fmt: skip
    instance_id = launched["Instances"][0]["InstanceId"]
    facts = await instance_facts(ec2, instance_id)
    assert facts == InstanceFacts(subnet, frozenset({aws_account.security_group_id}))
    assert await instance_facts(ec2, "i-0123456789abcdef0") is None
