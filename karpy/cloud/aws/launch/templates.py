"""Launch templates: one per distinct launch configuration, created once and reused.

A CreateFleet request names launch templates and overrides only the instance type,
subnet and image; everything else an instance needs (user data, IMDS options, block
devices, security groups, instance profile, monitoring, public IP, resource tags) lives
in the template. Templates are named ``karpenter.k8s.aws/<hash>`` where the hash covers
the whole template (its data and tags), so equal configurations share one template, a
changed node class or AMI gets a new one, and any process computes the same name: a
template is looked up by name before it is created, and a concurrent creator's
``AlreadyExists`` is success. Known names are remembered in memory with when each was last
used, at most `MAX_KNOWN` of them (the least recently used forgotten first; the launcher
drops one when CreateFleet reports it missing, the garbage collector when it deletes it).
`delete_launch_templates` removes every template of a node class when the class goes
away; `karpy.cloud.aws.launch.templategc` removes those no launch has used for a while.

Defaults follow Karpenter: IMDSv2 required with a hop limit of 1 (the node class's
``metadataOptions`` defaults), and when the class lists no block devices the AMI family's
root volume (AL2/AL2023 ``/dev/xvda`` 20Gi gp3 encrypted; Bottlerocket ``/dev/xvda`` 4Gi
plus ``/dev/xvdb`` 20Gi for data).

Nitro Enclaves are turned on (``EnclaveOptions``) when the class sets
``spec.enclaveOptions.enabled`` (Karpenter v1.15) or the NodeClaim requests the
``eks.amazonaws.com/nitro-sandbox`` resource of the Nitro Enclaves device plugin (v1.14).
Karpenter always writes ``EnclaveOptions`` (``Enabled: false`` by default); karpy writes it
only when enabled, which EC2 reads the same, so templates made before the field existed
keep their names.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError

from karpy.apis.ec2nodeclass import BlockDevice, BlockDeviceMapping
from karpy.apis.labels import CAPACITY_TYPE_RESERVED, CAPACITY_TYPE_SPOT
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.launch.tags import (
    TAG_EKS_CLUSTER_NAME,
    TAG_NODECLASS,
    cluster_tag_key,
    ec2_tags,
    tag_filters,
    tags_of,
)
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients

__all__ = [
    "LAUNCH_TEMPLATE_PREFIX",
    "MAX_KNOWN",
    "RESOURCE_NITRO_SANDBOX",
    "LaunchTemplates",
    "default_block_device_mappings",
    "delete_launch_templates",
    "enclaves_wanted",
    "is_owned_template",
    "launch_template_data",
    "launch_template_name",
    "owned_template_filters",
]

log = get_logger("aws.launchtemplates")

LAUNCH_TEMPLATE_PREFIX: Final = "karpenter.k8s.aws"
MAX_KNOWN: Final = 4096
_GIB: Final = 1 << 30
_NOT_FOUND: Final = frozenset(
    {"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound",
     "InvalidLaunchTemplateId.NotFoundException"}
)  # fmt: skip
_ALREADY_EXISTS: Final = "InvalidLaunchTemplateName.AlreadyExistsException"

_DEFAULT_EBS: Final = BlockDevice(encrypted=True, volume_type="gp3", volume_size="20Gi")

RESOURCE_NITRO_SANDBOX: Final = "eks.amazonaws.com/nitro-sandbox"


def enclaves_wanted(nodeclass: EC2NodeClass, requests: Mapping[str, int]) -> bool:
    """Whether the instance needs Nitro Enclaves: the class asks for them, or the NodeClaim
    requests the device plugin's enclave resource."""
    return nodeclass.spec.enclaves_enabled or RESOURCE_NITRO_SANDBOX in requests


def default_block_device_mappings(family: str) -> tuple[BlockDeviceMapping, ...]:
    """The AMI family's volumes when the node class lists none."""
    if family == "Bottlerocket":
        os_volume = BlockDevice(encrypted=True, volume_type="gp3", volume_size="4Gi")
        return (
            BlockDeviceMapping(device_name="/dev/xvda", ebs=os_volume),
            BlockDeviceMapping(device_name="/dev/xvdb", ebs=_DEFAULT_EBS),
        )
    if family in ("AL2", "AL2023"):
        return (BlockDeviceMapping(device_name="/dev/xvda", ebs=_DEFAULT_EBS),)
    return ()  # Custom: the AMI's own mappings


def _block_device_request(mapping: BlockDeviceMapping) -> dict[str, Any]:
    ebs = mapping.ebs or BlockDevice()
    size = ebs.volume_size_bytes
    fields = {
        "DeleteOnTermination": ebs.delete_on_termination,
        "Encrypted": ebs.encrypted,
        "VolumeType": ebs.volume_type,
        "Iops": ebs.iops or None,
        "Throughput": ebs.throughput or None,
        "KmsKeyId": ebs.kms_key_id,
        "SnapshotId": ebs.snapshot_id,
        "VolumeInitializationRate": ebs.volume_initialization_rate,
        "VolumeSize": None if size is None else math.ceil(size / _GIB),
    }
    request: dict[str, Any] = {"Ebs": {k: v for k, v in fields.items() if v is not None}}
    if mapping.device_name:
        request["DeviceName"] = mapping.device_name
    return request


def launch_template_data(
    nodeclass: EC2NodeClass,
    *,
    image_id: str,
    user_data: str,
    capacity_type: str,
    tags: Mapping[str, str],
    reservation_id: str = "",
    enclaves: bool = False,
) -> dict[str, Any]:
    """The ``LaunchTemplateData`` of one template (``user_data`` already base64);
    ``enclaves`` turns Nitro Enclaves on (`enclaves_wanted`)."""
    spec, status = nodeclass.spec, nodeclass.status
    imds = spec.metadata_options
    mappings = spec.block_device_mappings or default_block_device_mappings(nodeclass.ami_family)
    group_ids = [sg.id for sg in status.security_groups]
    resource_tags = [{"ResourceType": "network-interface", "Tags": ec2_tags(tags)}]
    if capacity_type == CAPACITY_TYPE_SPOT:
        resource_tags.append({"ResourceType": "spot-instances-request", "Tags": ec2_tags(tags)})
    data: dict[str, Any] = {
        "ImageId": image_id,
        "UserData": user_data,
        "IamInstanceProfile": {"Name": status.instance_profile},
        "Monitoring": {"Enabled": bool(spec.detailed_monitoring)},
        "MetadataOptions": {
            "HttpEndpoint": imds.http_endpoint,
            "HttpProtocolIpv6": imds.http_protocol_ipv6,
            "HttpPutResponseHopLimit": imds.http_put_response_hop_limit,
            "HttpTokens": imds.http_tokens,
            "InstanceMetadataTags": "disabled",
        },
        "TagSpecifications": resource_tags,
    }
    if mappings:
        data["BlockDeviceMappings"] = [_block_device_request(m) for m in mappings]
    if spec.associate_public_ip_address is None:
        data["SecurityGroupIds"] = group_ids
    else:
        # The public IP setting lives on the primary network interface, so the groups do too.
        data["NetworkInterfaces"] = [{
            "DeviceIndex": 0,
            "AssociatePublicIpAddress": spec.associate_public_ip_address,
            "Groups": group_ids,
        }]  # fmt: skip
    if capacity_type == CAPACITY_TYPE_RESERVED and reservation_id:
        data["CapacityReservationSpecification"] = {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": reservation_id},
        }
    if enclaves:
        data["EnclaveOptions"] = {"Enabled": True}
    return data


def launch_template_name(data: Mapping[str, Any], tags: Mapping[str, str]) -> str:
    """``karpenter.k8s.aws/<decimal hash>`` of the template's data and tags."""
    canonical = json.dumps({"data": data, "tags": tags}, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).digest()
    return f"{LAUNCH_TEMPLATE_PREFIX}/{int.from_bytes(digest[:8], 'big')}"


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class LaunchTemplates:
    """Ensures launch templates exist, remembering the names it has seen exist and when
    each was last used (module docstring)."""

    def __init__(
        self, clients: AWSClients, *, clock: Clock = SYSTEM_CLOCK, max_known: int = MAX_KNOWN
    ) -> None:
        self.clients = clients
        self.clock = clock
        self.max_known = max_known
        self._known: OrderedDict[str, datetime] = OrderedDict()

    def __len__(self) -> int:
        return len(self._known)

    def _used(self, name: str) -> None:
        self._known[name] = self.clock.now()
        self._known.move_to_end(name)
        while len(self._known) > self.max_known:
            self._known.popitem(last=False)

    def last_used(self, name: str) -> datetime | None:
        """When a launch last used ``name`` (None when not remembered)."""
        return self._known.get(name)

    async def ensure(self, name: str, data: Mapping[str, Any], tags: Mapping[str, str]) -> str:
        """Make sure the template ``name`` exists (find it, else create it); returns ``name``."""
        if name in self._known:
            self._used(name)
            return name
        ec2 = await self.clients.ec2()
        try:
            found = (await ec2.describe_launch_templates(LaunchTemplateNames=[name]))[
                "LaunchTemplates"
            ]
        except ClientError as exc:
            if _code(exc) not in _NOT_FOUND:
                raise
            found = []
        if not found:
            try:
                created = await ec2.create_launch_template(
                    LaunchTemplateName=name,
                    LaunchTemplateData=dict(data),
                    TagSpecifications=[{"ResourceType": "launch-template", "Tags": ec2_tags(tags)}],
                )
                log.debug("created launch template", launchTemplate=name,
                          id=created["LaunchTemplate"]["LaunchTemplateId"])  # fmt: skip
            except ClientError as exc:
                if _code(exc) != _ALREADY_EXISTS:
                    raise
        self._used(name)
        return name

    def forget(self, name: str) -> None:
        """Drop ``name`` from memory (it was reported missing, or deleted); the next use
        looks it up again and recreates it."""
        self._known.pop(name, None)


def owned_template_filters(cluster_name: str) -> list[dict[str, Any]]:
    """EC2 ``Filters`` for the launch templates karpy made for ``cluster_name``."""
    owned = {cluster_tag_key(cluster_name): "owned", TAG_EKS_CLUSTER_NAME: cluster_name}
    return tag_filters(owned, keys=(TAG_NODECLASS,))


def is_owned_template(name: str, tags: Mapping[str, str], cluster_name: str) -> bool:
    """Whether a template (its name and tags) is karpy's for ``cluster_name``; checked again
    on what DescribeLaunchTemplates answers, whatever the filters matched."""
    return (
        bool(cluster_name)
        and name.startswith(f"{LAUNCH_TEMPLATE_PREFIX}/")
        and tags.get(cluster_tag_key(cluster_name)) == "owned"
        and tags.get(TAG_EKS_CLUSTER_NAME) == cluster_name
        and bool(tags.get(TAG_NODECLASS))
    )


async def delete_launch_templates(clients: AWSClients, *, cluster_name: str, nodeclass: str) -> int:
    """Delete every launch template karpy made for ``nodeclass`` in the cluster (those
    `is_owned_template` accepts); how many were deleted."""
    ec2 = await clients.ec2()
    filters = [*owned_template_filters(cluster_name),
               *tag_filters({TAG_NODECLASS: nodeclass})]  # fmt: skip
    ids: list[tuple[str, str]] = []
    token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"Filters": filters, "MaxResults": 200}
        if token:
            kwargs["NextToken"] = token
        page = await ec2.describe_launch_templates(**kwargs)
        ids += [(t["LaunchTemplateId"], t["LaunchTemplateName"]) for t in page["LaunchTemplates"]
                if is_owned_template(t["LaunchTemplateName"], tags_of(t.get("Tags")),
                                     cluster_name)]  # fmt: skip
        token = page.get("NextToken")
        if not token:
            break
    deleted = 0
    for template_id, name in ids:
        try:
            await ec2.delete_launch_template(LaunchTemplateId=template_id)
        except ClientError as exc:
            if _code(exc) not in _NOT_FOUND:
                raise
            continue
        deleted += 1
        log.debug("deleted launch template", launchTemplate=name, nodeclass=nodeclass)
    return deleted
