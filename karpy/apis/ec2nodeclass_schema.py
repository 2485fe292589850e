"""The wire schema of ``karpenter.k8s.aws/v1`` EC2NodeClass, equivalent to Karpenter's
v1.14 CRD (the typed ``kubelet`` block of the released versions, not HEAD's open map).

Most EC2NodeClass validation lives here, in OpenAPI bounds and CEL rules: selector-term
shapes, role XOR instanceProfile, amiFamily/alias consistency, restricted tags, kubelet
keys and the block device and network interface invariants.
"""

from __future__ import annotations

import re
from typing import Any

from karpy.apis import labels, schema_common
from karpy.apis.crd import CustomResource, PrinterColumn
from karpy.apis.ec2nodeclass_instance import (
    BLOCK_DEVICE_MAPPINGS,
    CONNECTION_TRACKING,
    KUBELET,
    METADATA_OPTIONS,
    NETWORK_INTERFACES,
    PLACEMENT_GROUP,
)
from karpy.apis.ec2nodeclass_selectors import (
    AMI_TERMS,
    CAPACITY_RESERVATION_TERMS,
    SECURITY_GROUP_TERMS,
    SUBNET_TERMS,
)
from karpy.apis.openapi import Rule, array, boolean, integer, kind_schema, obj, string, string_map

__all__ = ["AMI_FAMILIES", "EC2NODECLASS", "EC2NODECLASS_SCHEMA"]

AMI_FAMILIES = (
    "AL2",
    "AL2023",
    "Bottlerocket",
    "Custom",
    "Windows2019",
    "Windows2022",
    "Windows2025",
)

_RESTRICTED_TAGS = (
    ("eks:eks-cluster-name", "self.all(k, k !='eks:eks-cluster-name')"),
    ("kubernetes.io/cluster/", "self.all(k, !k.startsWith('kubernetes.io/cluster') )"),
    ("karpenter.sh/nodepool", "self.all(k, k != 'karpenter.sh/nodepool')"),
    ("karpenter.sh/nodeclaim", "self.all(k, k !='karpenter.sh/nodeclaim')"),
    ("karpenter.k8s.aws/ec2nodeclass", "self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')"),
)


def _tag_rule(tag: str, cel: str) -> Rule:
    if tag.endswith("/"):
        return Rule(
            cel,
            f"tag contains a restricted tag matching {tag}",
            lambda tags: not any(k.startswith("kubernetes.io/cluster") for k in tags),
        )
    return Rule(cel, f"tag contains a restricted tag matching {tag}", lambda tags: tag not in tags)


_tags_field = string_map(
    None,
    "Tags put on every AWS resource created for the nodes (instances, volumes, "
    "network interfaces, launch templates, ...).",
    rules=(
        Rule(
            "self.all(k, k != '')",
            "empty tag keys aren't supported",
            lambda tags: all(k != "" for k in tags),
        ),
        *(_tag_rule(tag, cel) for tag, cel in _RESTRICTED_TAGS),
    ),
)


def _alias_rule(alias_family: str, ami_family: str) -> Rule:
    def check(spec: dict[str, Any]) -> bool:
        if "amiFamily" not in spec:
            return True
        uses_alias = any(
            "alias" in t and _alias_domain(t["alias"]) == alias_family
            for t in spec.get("amiSelectorTerms", ())
        )
        return not uses_alias or spec["amiFamily"] in ("Custom", ami_family)

    return Rule(
        f"!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
        f"x.alias.find('^[^@]+') == '{alias_family}') ? (self.amiFamily == 'Custom' || "
        f"self.amiFamily == '{ami_family}') : true)",
        f"if set, amiFamily must be '{ami_family}' or 'Custom' when using an {ami_family} alias"
        if ami_family[0] in "A"
        else f"if set, amiFamily must be '{ami_family}' or 'Custom' when using a "
        f"{ami_family} alias",
        check,
    )


def _alias_domain(alias: str) -> str:
    """CEL's ``alias.find('^[^@]+')``."""
    match = re.search(r"^[^@]+", alias)
    return match.group(0) if match else ""


_spec = obj(
    "How to launch nodes on EC2: network, AMIs, IAM, storage, kubelet and metadata "
    "settings shared by every NodePool that references this class.",
    {
        "amiFamily": string(
            "The AMI family, which decides the user data format and default block "
            "devices; implied by an alias.",
            enum=AMI_FAMILIES,
        ),
        "amiSelectorTerms": AMI_TERMS,
        "associatePublicIPAddress": boolean(
            "Whether nodes get a public IPv4 address (default: the subnet's setting)."
        ),
        "blockDeviceMappings": BLOCK_DEVICE_MAPPINGS,
        "capacityReservationSelectorTerms": CAPACITY_RESERVATION_TERMS,
        "connectionTracking": CONNECTION_TRACKING,
        "context": string("The EC2 Fleet context, for reserved-capacity arrangements."),
        "cpuOptions": obj(
            "CPU options of the nodes.",
            {
                "nestedVirtualization": string(
                    "Whether nested virtualization is turned on (only types that "
                    "support it are then used).",
                    enum=("enabled", "disabled"),
                )
            },
        ),
        "detailedMonitoring": boolean("Whether CloudWatch detailed monitoring is on."),
        "enclaveOptions": obj(
            "AWS Nitro Enclaves options of the nodes.",
            {
                "enabled": boolean(
                    "Whether Nitro Enclaves are enabled on the nodes (only types that "
                    "support them are then used). The enclave's CPUs and memory are not "
                    "subtracted from allocatable: use a NodeOverlay for that.",
                    default=False,
                )
            },
        ),
        "instanceProfile": string(
            "An existing instance profile for the nodes (Karpenter does not manage it).",
            rules=(Rule("self != ''", "instanceProfile cannot be empty", lambda v: v != ""),),
        ),
        "instanceStorePolicy": string(
            "RAID0 combines the instance store disks and puts the kubelet and container "
            "runtime on them.",
            enum=("RAID0",),
        ),
        "ipPrefixCount": integer(
            "How many IPv4 prefixes to assign to the primary interface.",
            format="int32",
            minimum=0,
        ),
        "kubelet": KUBELET,
        "metadataOptions": METADATA_OPTIONS,
        "networkInterfaces": NETWORK_INTERFACES,
        "placementGroupSelector": PLACEMENT_GROUP,
        "role": string(
            "The IAM role of the nodes; Karpenter creates and manages an instance profile for it.",
            rules=(Rule("self != ''", "role cannot be empty", lambda v: v != ""),),
        ),
        "securityGroupSelectorTerms": SECURITY_GROUP_TERMS,
        "subnetSelectorTerms": SUBNET_TERMS,
        "tags": _tags_field,
        "userData": string(
            "User data merged with (or, for Custom, used instead of) Karpenter's bootstrap."
        ),
    },
    required=("amiSelectorTerms", "securityGroupSelectorTerms", "subnetSelectorTerms"),
    rules=(
        Rule(
            "(has(self.role) && !has(self.instanceProfile)) || "
            "(!has(self.role) && has(self.instanceProfile))",
            "must specify exactly one of ['role', 'instanceProfile']",
            lambda spec: ("role" in spec) != ("instanceProfile" in spec),
        ),
        _alias_rule("al2", "AL2"),
        _alias_rule("al2023", "AL2023"),
        _alias_rule("bottlerocket", "Bottlerocket"),
        _alias_rule("windows2019", "Windows2019"),
        _alias_rule("windows2022", "Windows2022"),
        _alias_rule("windows2025", "Windows2025"),
        Rule(
            "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
            "must specify amiFamily if amiSelectorTerms does not contain an alias",
            lambda spec: (
                any("alias" in t for t in spec.get("amiSelectorTerms", ())) or "amiFamily" in spec
            ),
        ),
    ),
)

_status_requirement = obj(
    "A node selector requirement.",
    {
        "key": string("The node label the requirement applies to."),
        "operator": string("How the label's value relates to values."),
        "values": array(string(), "The values to compare with.", list_type="atomic"),
    },
    required=("key", "operator"),
)

_status = obj(
    "What the class's selectors resolved to, and whether it is ready.",
    {
        "amis": array(
            obj(
                "An AMI the selector terms resolved to.",
                {
                    "deprecated": boolean("Whether the AMI is deprecated."),
                    "id": string("The AMI ID."),
                    "name": string("The AMI name."),
                    "requirements": array(
                        _status_requirement,
                        "Which instance types the AMI can boot (architecture, GPUs, ...).",
                    ),
                },
                required=("id", "requirements"),
            ),
            "Resolved AMIs.",
        ),
        "capacityReservations": array(
            obj(
                "A capacity reservation the selector terms resolved to.",
                {
                    "availabilityZone": string("The reservation's availability zone."),
                    "endTime": string("When the reservation ends.", format="date-time"),
                    "id": string("The reservation ID.", pattern="^cr-[0-9a-z]+$"),
                    "instanceMatchCriteria": string("open or targeted.", enum=("open", "targeted")),
                    "instanceType": string("The reserved instance type."),
                    "interruptible": boolean("Whether the reservation can be reclaimed."),
                    "ownerID": string("The owning account.", pattern="^[0-9]{12}$"),
                    "reservationType": string(
                        "default (on-demand reservation) or capacity-block.",
                        enum=("default", "capacity-block"),
                        default="default",
                    ),
                    "state": string(
                        "active, or expiring when a capacity block is about to end.",
                        enum=("active", "expiring"),
                        default="active",
                    ),
                },
                required=(
                    "availabilityZone",
                    "id",
                    "instanceMatchCriteria",
                    "instanceType",
                    "ownerID",
                ),
            ),
            "Resolved capacity reservations.",
        ),
        "conditions": schema_common.conditions(list_map=False),
        "instanceProfile": string("The instance profile the nodes use."),
        "securityGroups": array(
            obj(
                "A resolved security group.",
                {"id": string("The group ID."), "name": string("The group name.")},
                required=("id",),
            ),
            "Resolved security groups.",
        ),
        "subnets": array(
            obj(
                "A resolved subnet.",
                {
                    "id": string("The subnet ID."),
                    "zone": string("The subnet's availability zone."),
                    "zoneID": string("The availability zone ID."),
                },
                required=("id", "zone"),
            ),
            "Resolved subnets.",
        ),
    },
)

EC2NODECLASS_SCHEMA = kind_schema(
    "An EC2NodeClass holds the AWS-specific settings of the nodes that NodePools "
    "referencing it launch.",
    _spec,
    _status,
)

EC2NODECLASS = CustomResource(
    group=labels.AWS_GROUP,
    version="v1",
    kind="EC2NodeClass",
    plural="ec2nodeclasses",
    schema=EC2NODECLASS_SCHEMA,
    short_names=("ec2nc", "ec2ncs"),
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Role", ".spec.role", priority=1),
    ),
)
