"""Why an EC2 instance no longer matches its EC2NodeClass (the provider's part of drift).

Checked in Karpenter's order, the first reason wins:

* ``NodeClassDrift``: the class's static fields changed — its hash annotation differs from
  the one stamped on the NodeClaim at launch (only compared when both carry the same hash
  version, so a new hashing scheme never drifts a whole fleet);
* ``AMIDrift``: the image the NodeClaim runs is not the AMI the class now resolves for its
  instance type (the first AMI in ``status.amis`` whose requirements the type satisfies);
* ``SecurityGroupDrift``: the instance's security groups are not exactly the class's;
* ``SubnetDrift``: the instance's subnet is not among the class's;
* ``CapacityReservationDrift``: it runs in a reservation the class no longer selects.

A status that has resolved nothing yet (no AMIs, subnets or security groups) decides
nothing: drift waits for the NodeClass controller rather than replacing nodes over a
transient lookup failure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs
from botocore.exceptions import ClientError

from karpy.apis.labels import ANNOTATION_EC2NODECLASS_HASH, ANNOTATION_EC2NODECLASS_HASH_VERSION
from karpy.cloud.aws.amis import ami_for

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.scheduling.instancetypes import InstanceType

__all__ = ["InstanceFacts", "drift_reason", "facts_of", "instance_facts"]

NODECLASS_DRIFT: Final = "NodeClassDrift"
AMI_DRIFT: Final = "AMIDrift"
SECURITY_GROUP_DRIFT: Final = "SecurityGroupDrift"
SUBNET_DRIFT: Final = "SubnetDrift"
CAPACITY_RESERVATION_DRIFT: Final = "CapacityReservationDrift"


@attrs.frozen(slots=True)
class InstanceFacts:
    """What DescribeInstances says about an instance that drift compares."""

    subnet_id: str
    security_group_ids: frozenset[str]
    reservation_id: str = ""


def _static_drift(claim: NodeClaim, nodeclass: EC2NodeClass) -> bool:
    ours = nodeclass.metadata.annotations
    theirs = claim.metadata.annotations
    keys = (ANNOTATION_EC2NODECLASS_HASH, ANNOTATION_EC2NODECLASS_HASH_VERSION)
    if not all(k in ours and k in theirs for k in keys):
        return False
    if ours[ANNOTATION_EC2NODECLASS_HASH_VERSION] != theirs[ANNOTATION_EC2NODECLASS_HASH_VERSION]:
        return False
    return ours[ANNOTATION_EC2NODECLASS_HASH] != theirs[ANNOTATION_EC2NODECLASS_HASH]


def drift_reason(
    claim: NodeClaim,
    nodeclass: EC2NodeClass,
    instance_type: InstanceType | None,
    facts: InstanceFacts | None,
) -> str:
    """The first drift reason (see the module docstring), or ``""``. ``instance_type`` is
    the claim's type as the provider lists it now (None: not offered any more, so the AMI
    is not judged); ``facts`` None skips the checks that need the instance."""
    if _static_drift(claim, nodeclass):
        return NODECLASS_DRIFT
    status = nodeclass.status
    if instance_type is not None and status.amis and claim.status.image_id:
        ami = ami_for(instance_type.requirements, status.amis)
        if ami is None or ami.id != claim.status.image_id:
            return AMI_DRIFT
    if facts is None:
        return ""
    groups = frozenset(g.id for g in status.security_groups)
    if groups and groups != facts.security_group_ids:
        return SECURITY_GROUP_DRIFT
    if status.subnets and facts.subnet_id not in {s.id for s in status.subnets}:
        return SUBNET_DRIFT
    reservations = {r.id for r in status.capacity_reservations}
    if facts.reservation_id and facts.reservation_id not in reservations:
        return CAPACITY_RESERVATION_DRIFT
    return ""


def facts_of(described: Mapping[str, Any]) -> InstanceFacts:
    """`InstanceFacts` from one DescribeInstances ``Instances[]`` entry."""
    groups: Iterable[Mapping[str, Any]] = described.get("SecurityGroups") or ()
    return InstanceFacts(
        subnet_id=str(described.get("SubnetId", "")),
        security_group_ids=frozenset(str(g["GroupId"]) for g in groups),
        reservation_id=str(described.get("CapacityReservationId") or ""),
    )


async def instance_facts(ec2: Any, instance_id: str) -> InstanceFacts | None:
    """The instance's facts, or None when EC2 no longer knows it."""
    try:
        answer = await ec2.describe_instances(InstanceIds=[instance_id])
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "InvalidInstanceID.NotFound":
            return None
        raise
    for reservation in answer.get("Reservations", ()):
        for described in reservation.get("Instances", ()):
            return facts_of(described)
    return None
