"""Finding and terminating the cluster's EC2 instances, answered from EC2 every time.

Instances are found by their tags (`karpy.cloud.aws.launch.tags`), never from a memory
of what this process launched, so a restarted controller sees everything the last one
launched. ``terminated`` instances count as gone; ``shutting-down`` ones are still listed,
marked terminating, so garbage collection and termination can tell "going" from "gone".
EC2's ``InvalidInstanceID.NotFound`` becomes `NodeClaimNotFound`.

`create_instance_tags` adds tags to one instance after its launch (the
``nodeclaim.tagging`` controller's Name tag, `karpy.cloud.aws.tagging`).

Only karpy's own instances are ever listed or terminated: `list_instances` asks EC2 for
the ownership tags (`karpy.cloud.aws.launch.tags.owned_instance_filters`) and checks them
again on what comes back, and `terminate_instance` reads the instance's tags first and
refuses one that lacks them (as `NodeClaimNotFound`, with a warning: to karpy, such a
NodeClaim has no instance), whoever asks: termination, or garbage collection's stand-in
NodeClaim for an orphan.

`instance_record` turns one DescribeInstances entry into the provider-neutral
`karpy.cloud.provider.Instance`: provider ID, NodeClaim (from its tag), type, zone,
capacity type (``spot`` from the instance lifecycle, ``reserved`` when it runs in a
capacity reservation) and the labels EC2 alone can tell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from karpy.apis.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_AWS_ZONE_ID,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)
from karpy.cloud.aws.launch.providerid import provider_id
from karpy.cloud.aws.launch.tags import (
    TAG_NODECLAIM,
    TAG_NODEPOOL,
    ec2_tags,
    is_owned_instance,
    owned_instance_filters,
    tags_of,
)
from karpy.cloud.errors import NodeClaimNotFound
from karpy.cloud.provider import Instance
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.cloud.aws.clients import AWSClients

__all__ = [
    "LIVE_STATES",
    "TERMINATING_STATES",
    "create_instance_tags",
    "describe",
    "describe_instance",
    "get_instance",
    "instance_record",
    "list_instances",
    "terminate_instance",
]

log = get_logger("aws.instances")

# Every state but ``terminated``: what Get and List consider to exist.
LIVE_STATES: Final = ("pending", "running", "stopping", "stopped", "shutting-down")
TERMINATING_STATES: Final = frozenset({"shutting-down", "terminated"})
NOT_FOUND: Final = "InvalidInstanceID.NotFound"
PAGE_SIZE: Final = 1000


def _state_filter(states: Sequence[str] = LIVE_STATES) -> dict[str, Any]:
    return {"Name": "instance-state-name", "Values": list(states)}


def capacity_type_of(raw: Mapping[str, Any]) -> str:
    if raw.get("InstanceLifecycle") == "spot":
        return CAPACITY_TYPE_SPOT
    if raw.get("CapacityReservationId"):
        return CAPACITY_TYPE_RESERVED
    return CAPACITY_TYPE_ON_DEMAND


def instance_record(raw: Mapping[str, Any]) -> Instance:
    """The `Instance` of one DescribeInstances entry (labels EC2 can tell only)."""
    tags = tags_of(raw.get("Tags"))
    placement = raw.get("Placement") or {}
    zone = str(placement.get("AvailabilityZone", ""))
    capacity_type = capacity_type_of(raw)
    labels = {
        LABEL_INSTANCE_TYPE: str(raw.get("InstanceType", "")),
        LABEL_ZONE: zone,
        LABEL_CAPACITY_TYPE: capacity_type,
    }
    if placement.get("AvailabilityZoneId"):
        labels[LABEL_AWS_ZONE_ID] = str(placement["AvailabilityZoneId"])
    if capacity_type == CAPACITY_TYPE_RESERVED:
        labels[LABEL_AWS_CAPACITY_RESERVATION_ID] = str(raw["CapacityReservationId"])
    if tags.get(TAG_NODEPOOL):
        labels[LABEL_NODEPOOL] = tags[TAG_NODEPOOL]
    state = str((raw.get("State") or {}).get("Name", ""))
    return Instance(
        provider_id=provider_id(zone, str(raw["InstanceId"])),
        nodeclaim=tags.get(TAG_NODECLAIM, ""),
        instance_type=str(raw.get("InstanceType", "")),
        zone=zone,
        capacity_type=capacity_type,
        image_id=str(raw.get("ImageId", "")),
        labels=labels,
        created=raw.get("LaunchTime"),
        terminating=state in TERMINATING_STATES,
    )


async def describe(clients: AWSClients, **kwargs: Any) -> list[dict[str, Any]]:
    """Every instance DescribeInstances returns for ``kwargs``, across pages."""
    ec2 = await clients.ec2()
    out: list[dict[str, Any]] = []
    token: str | None = None
    while True:
        page = await ec2.describe_instances(**kwargs, **({"NextToken": token} if token else {}))
        for reservation in page.get("Reservations") or ():
            out.extend(reservation.get("Instances") or ())
        token = page.get("NextToken")
        if not token:
            return out


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


async def describe_instance(clients: AWSClients, instance_id: str) -> dict[str, Any]:
    """The DescribeInstances entry of one instance that is not terminated;
    `NodeClaimNotFound` when there is none."""
    try:
        found = await describe(clients, InstanceIds=[instance_id], Filters=[_state_filter()])
    except ClientError as exc:
        if _code(exc) == NOT_FOUND:
            raise NodeClaimNotFound(f"instance {instance_id} not found") from None
        raise
    if not found:
        raise NodeClaimNotFound(f"instance {instance_id} not found (terminated)")
    return found[0]


async def get_instance(clients: AWSClients, instance_id: str) -> Instance:
    """The instance; `NodeClaimNotFound` when it does not exist or is terminated."""
    return instance_record(await describe_instance(clients, instance_id))


async def list_instances(clients: AWSClients, cluster_name: str) -> list[Instance]:
    """Every instance karpy launched for the cluster that is not terminated (carrying all
    the ownership tags, see the module docstring)."""
    filters = owned_instance_filters(cluster_name)
    raw = await describe(clients, Filters=[*filters, _state_filter()], MaxResults=PAGE_SIZE)
    return [
        instance_record(r) for r in raw if is_owned_instance(tags_of(r.get("Tags")), cluster_name)
    ]


async def _owned(
    clients: AWSClients, instance_id: str, cluster_name: str, action: str
) -> dict[str, Any]:
    """The instance as EC2 describes it, read before acting on it: `NodeClaimNotFound`
    (and a warning) when it is not karpy's for ``cluster_name``, whatever asked."""
    raw = await describe_instance(clients, instance_id)
    if not is_owned_instance(tags_of(raw.get("Tags")), cluster_name):
        log.warning(f"refused to {action} instance: not karpy's", instance=instance_id,
                    cluster=cluster_name)  # fmt: skip
        raise NodeClaimNotFound(f"instance {instance_id} is not karpy's for {cluster_name}")
    return raw


async def terminate_instance(clients: AWSClients, instance_id: str, *, cluster_name: str) -> None:
    """Begin terminating the instance (nothing to do when it is already shutting down);
    `NodeClaimNotFound` when it is gone or is not karpy's for ``cluster_name``."""
    raw = await _owned(clients, instance_id, cluster_name, "terminate")
    if (raw.get("State") or {}).get("Name") == "shutting-down":
        return
    ec2 = await clients.ec2()
    try:
        await ec2.terminate_instances(InstanceIds=[instance_id])
    except ClientError as exc:
        if _code(exc) == NOT_FOUND:
            raise NodeClaimNotFound(f"instance {instance_id} not found") from None
        raise


async def reboot_instance(clients: AWSClients, instance_id: str, *, cluster_name: str) -> None:
    """Ask EC2 to reboot the instance (RebootInstances: the operating system restarts on the
    same host, keeping its disks and IPs); `NodeClaimNotFound` when it is gone, shutting
    down, or not karpy's for ``cluster_name``."""
    raw = await _owned(clients, instance_id, cluster_name, "reboot")
    if (raw.get("State") or {}).get("Name") in ("shutting-down", "terminated"):
        raise NodeClaimNotFound(f"instance {instance_id} is terminating")
    ec2 = await clients.ec2()
    try:
        await ec2.reboot_instances(InstanceIds=[instance_id])
    except ClientError as exc:
        if _code(exc) == NOT_FOUND:
            raise NodeClaimNotFound(f"instance {instance_id} not found") from None
        raise


async def create_instance_tags(
    clients: AWSClients, instance_id: str, tags: Mapping[str, str]
) -> None:
    """Add ``tags`` to the instance (CreateTags); `NodeClaimNotFound` when it is gone. The
    caller checks ownership first (`karpy.cloud.aws.tagging`)."""
    ec2 = await clients.ec2()
    try:
        await ec2.create_tags(Resources=[instance_id], Tags=ec2_tags(tags))
    except ClientError as exc:
        if _code(exc) == NOT_FOUND:
            raise NodeClaimNotFound(f"instance {instance_id} not found") from None
        raise
