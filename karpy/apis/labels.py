"""Label, annotation, taint and finalizer names that karpy shares with Karpenter.

These names are the API: nodes, pods and manifests written for Karpenter carry them, so
they are spelled exactly as Karpenter spells them. Sets of "well-known" labels are the
keys the scheduler may narrow with requirements; any other key on a pod's node selector
must come from a NodePool's template labels.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "karpenter.sh"
COMPATIBILITY_GROUP: Final = "compatibility.karpenter.sh"
AWS_GROUP: Final = "karpenter.k8s.aws"

# Values
ARCH_AMD64: Final = "amd64"
ARCH_ARM64: Final = "arm64"
CAPACITY_TYPE_SPOT: Final = "spot"
CAPACITY_TYPE_ON_DEMAND: Final = "on-demand"
CAPACITY_TYPE_RESERVED: Final = "reserved"

# Kubernetes labels
LABEL_HOSTNAME: Final = "kubernetes.io/hostname"
LABEL_ZONE: Final = "topology.kubernetes.io/zone"
LABEL_REGION: Final = "topology.kubernetes.io/region"
LABEL_INSTANCE_TYPE: Final = "node.kubernetes.io/instance-type"
LABEL_ARCH: Final = "kubernetes.io/arch"
LABEL_OS: Final = "kubernetes.io/os"
LABEL_WINDOWS_BUILD: Final = "node.kubernetes.io/windows-build"

# Karpenter labels
LABEL_NODEPOOL: Final = f"{GROUP}/nodepool"
LABEL_CAPACITY_TYPE: Final = f"{GROUP}/capacity-type"
LABEL_INITIALIZED: Final = f"{GROUP}/initialized"
LABEL_REGISTERED: Final = f"{GROUP}/registered"
LABEL_DO_NOT_SYNC_TAINTS: Final = f"{GROUP}/do-not-sync-taints"

# Karpenter annotations
ANNOTATION_DO_NOT_DISRUPT: Final = f"{GROUP}/do-not-disrupt"
# Node or NodeClaim: node repair leaves it alone (Karpenter 1.15; do-not-disrupt does not)
ANNOTATION_DO_NOT_REPAIR: Final = f"{GROUP}/do-not-repair"
# NodeClaim, node repair's reboot (Karpenter 1.15): the node's bootID before the reboot was
# asked for (so a restarted controller never reboots twice), and the policy's drain bound
ANNOTATION_REBOOT_PRE_BOOT_ID: Final = f"{GROUP}/reboot-pre-boot-id"
ANNOTATION_REBOOT_GRACE: Final = f"{GROUP}/reboot-termination-grace-period"
ANNOTATION_PROVIDER_COMPATIBILITY: Final = f"{COMPATIBILITY_GROUP}/provider"
ANNOTATION_NODEPOOL_HASH: Final = f"{GROUP}/nodepool-hash"
ANNOTATION_NODEPOOL_HASH_VERSION: Final = f"{GROUP}/nodepool-hash-version"
ANNOTATION_TERMINATION_TIMESTAMP: Final = f"{GROUP}/nodeclaim-termination-timestamp"
ANNOTATION_MIN_VALUES_RELAXED: Final = f"{GROUP}/nodeclaim-min-values-relaxed"
ANNOTATION_PRICE_OVERLAY_APPLIED: Final = f"{GROUP}/price-overlay-applied"
ANNOTATION_CAPACITY_OVERLAY_APPLIED: Final = f"{GROUP}/capacity-overlay-applied"
ANNOTATION_POD_DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
# karpy's own: on a NodeClaim a disruption decision chose, the replacements it waits for
ANNOTATION_REPLACEMENTS: Final = "disruption.karpy.dev/replacements"
# karpy's own: on a NodeClaim node repair chose, its repair policy's drain bound (a Go
# duration), which the deletion turns into the termination timestamp
ANNOTATION_REPAIR_GRACE: Final = "disruption.karpy.dev/repair-termination-grace-period"
# karpy's own: on a NodeClaim node repair chose to reboot ("true"), and when its reboot was
# asked for (RFC 3339; kept after it, so a node is rebooted at most once)
ANNOTATION_REPAIR_REBOOT: Final = "disruption.karpy.dev/repair-reboot"
ANNOTATION_REBOOTED_AT: Final = "disruption.karpy.dev/rebooted-at"
# EC2NodeClass drift: the class's hash (and its scheme's version) on the class and on each
# NodeClaim launched from it; the managed instance profile's name on the class.
ANNOTATION_EC2NODECLASS_HASH: Final = f"{AWS_GROUP}/ec2nodeclass-hash"
ANNOTATION_EC2NODECLASS_HASH_VERSION: Final = f"{AWS_GROUP}/ec2nodeclass-hash-version"
ANNOTATION_INSTANCE_PROFILE: Final = f"{AWS_GROUP}/instance-profile-name"
# On a NodeClaim whose instance got its Name tag after registration (nodeclaim.tagging);
# the second is Karpenter's marker that the cluster-name tag was written too.
ANNOTATION_INSTANCE_TAGGED: Final = f"{AWS_GROUP}/tagged"
ANNOTATION_CLUSTER_NAME_TAGGED: Final = f"compatibility.{AWS_GROUP}/cluster-name-tagged"

# Taints karpenter manages
TAINT_DISRUPTED: Final = f"{GROUP}/disrupted"
TAINT_UNREGISTERED: Final = f"{GROUP}/unregistered"

# Finalizers
FINALIZER_TERMINATION: Final = f"{GROUP}/termination"
FINALIZER_AWS_TERMINATION: Final = f"{AWS_GROUP}/termination"

# AWS provider labels (all derived from the instance type or the node class)
LABEL_AWS_CAPACITY_RESERVATION_ID: Final = f"{AWS_GROUP}/capacity-reservation-id"
LABEL_AWS_CAPACITY_RESERVATION_TYPE: Final = f"{AWS_GROUP}/capacity-reservation-type"
LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE: Final = (
    f"{AWS_GROUP}/capacity-reservation-interruptible"
)
LABEL_AWS_INSTANCE_HYPERVISOR: Final = f"{AWS_GROUP}/instance-hypervisor"
LABEL_AWS_INSTANCE_ENCRYPTION_IN_TRANSIT: Final = (
    f"{AWS_GROUP}/instance-encryption-in-transit-supported"
)
LABEL_AWS_NITRO_SANDBOX: Final = f"{AWS_GROUP}/nitro-sandbox"
LABEL_AWS_INSTANCE_CATEGORY: Final = f"{AWS_GROUP}/instance-category"
LABEL_AWS_INSTANCE_CAPABILITY_FLEX: Final = f"{AWS_GROUP}/instance-capability-flex"
LABEL_AWS_INSTANCE_FAMILY: Final = f"{AWS_GROUP}/instance-family"
LABEL_AWS_INSTANCE_GENERATION: Final = f"{AWS_GROUP}/instance-generation"
LABEL_AWS_INSTANCE_LOCAL_NVME: Final = f"{AWS_GROUP}/instance-local-nvme"
LABEL_AWS_INSTANCE_SIZE: Final = f"{AWS_GROUP}/instance-size"
LABEL_AWS_INSTANCE_CPU: Final = f"{AWS_GROUP}/instance-cpu"
LABEL_AWS_INSTANCE_CPU_MANUFACTURER: Final = f"{AWS_GROUP}/instance-cpu-manufacturer"
LABEL_AWS_INSTANCE_CPU_SUSTAINED_CLOCK: Final = (
    f"{AWS_GROUP}/instance-cpu-sustained-clock-speed-mhz"
)
LABEL_AWS_INSTANCE_MEMORY: Final = f"{AWS_GROUP}/instance-memory"
LABEL_AWS_INSTANCE_EBS_BANDWIDTH: Final = f"{AWS_GROUP}/instance-ebs-bandwidth"
LABEL_AWS_INSTANCE_NETWORK_BANDWIDTH: Final = f"{AWS_GROUP}/instance-network-bandwidth"
LABEL_AWS_INSTANCE_GPU_NAME: Final = f"{AWS_GROUP}/instance-gpu-name"
LABEL_AWS_INSTANCE_GPU_MANUFACTURER: Final = f"{AWS_GROUP}/instance-gpu-manufacturer"
LABEL_AWS_INSTANCE_GPU_COUNT: Final = f"{AWS_GROUP}/instance-gpu-count"
LABEL_AWS_INSTANCE_GPU_MEMORY: Final = f"{AWS_GROUP}/instance-gpu-memory"
LABEL_AWS_INSTANCE_ACCELERATOR_NAME: Final = f"{AWS_GROUP}/instance-accelerator-name"
LABEL_AWS_INSTANCE_ACCELERATOR_MANUFACTURER: Final = (
    f"{AWS_GROUP}/instance-accelerator-manufacturer"
)
LABEL_AWS_INSTANCE_ACCELERATOR_COUNT: Final = f"{AWS_GROUP}/instance-accelerator-count"
LABEL_AWS_NODECLASS: Final = f"{AWS_GROUP}/ec2nodeclass"
LABEL_AWS_INSTANCE_TENANCY: Final = f"{AWS_GROUP}/instance-tenancy"
LABEL_AWS_PLACEMENT_GROUP_ID: Final = f"{AWS_GROUP}/placement-group-id"
LABEL_AWS_PLACEMENT_GROUP_PARTITION: Final = f"{AWS_GROUP}/placement-group-partition"
LABEL_AWS_ZONE_ID: Final = "topology.k8s.aws/zone-id"

# Keys every provider offers to requirements (Karpenter core's set).
CORE_WELL_KNOWN_LABELS: Final = frozenset(
    {
        LABEL_NODEPOOL,
        LABEL_ZONE,
        LABEL_REGION,
        LABEL_INSTANCE_TYPE,
        LABEL_ARCH,
        LABEL_OS,
        LABEL_CAPACITY_TYPE,
        LABEL_WINDOWS_BUILD,
    }
)

# Keys the AWS provider adds.
AWS_WELL_KNOWN_LABELS: Final = frozenset(
    {
        LABEL_AWS_CAPACITY_RESERVATION_ID,
        LABEL_AWS_CAPACITY_RESERVATION_TYPE,
        LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE,
        LABEL_AWS_INSTANCE_HYPERVISOR,
        LABEL_AWS_INSTANCE_ENCRYPTION_IN_TRANSIT,
        LABEL_AWS_NITRO_SANDBOX,
        LABEL_AWS_INSTANCE_CATEGORY,
        LABEL_AWS_INSTANCE_CAPABILITY_FLEX,
        LABEL_AWS_INSTANCE_FAMILY,
        LABEL_AWS_INSTANCE_GENERATION,
        LABEL_AWS_INSTANCE_SIZE,
        LABEL_AWS_INSTANCE_LOCAL_NVME,
        LABEL_AWS_INSTANCE_CPU,
        LABEL_AWS_INSTANCE_CPU_MANUFACTURER,
        LABEL_AWS_INSTANCE_CPU_SUSTAINED_CLOCK,
        LABEL_AWS_INSTANCE_MEMORY,
        LABEL_AWS_INSTANCE_EBS_BANDWIDTH,
        LABEL_AWS_INSTANCE_NETWORK_BANDWIDTH,
        LABEL_AWS_INSTANCE_GPU_NAME,
        LABEL_AWS_INSTANCE_GPU_MANUFACTURER,
        LABEL_AWS_INSTANCE_GPU_COUNT,
        LABEL_AWS_INSTANCE_GPU_MEMORY,
        LABEL_AWS_INSTANCE_ACCELERATOR_NAME,
        LABEL_AWS_INSTANCE_ACCELERATOR_MANUFACTURER,
        LABEL_AWS_INSTANCE_ACCELERATOR_COUNT,
        LABEL_AWS_ZONE_ID,
        LABEL_AWS_INSTANCE_TENANCY,
        LABEL_AWS_PLACEMENT_GROUP_ID,
        LABEL_AWS_PLACEMENT_GROUP_PARTITION,
    }
)

# Label domains only karpenter may set (except for the well-known keys in them).
CORE_RESTRICTED_LABEL_DOMAINS: Final = frozenset({GROUP})
AWS_RESTRICTED_LABEL_DOMAINS: Final = frozenset({AWS_GROUP})
# Individual keys nobody may require or set in a template.
RESTRICTED_LABELS: Final = frozenset({LABEL_HOSTNAME})

# Aliased keys rewritten to their current names before matching.
NORMALIZED_LABELS: Final = {
    "failure-domain.beta.kubernetes.io/zone": LABEL_ZONE,
    "failure-domain.beta.kubernetes.io/region": LABEL_REGION,
    "beta.kubernetes.io/arch": LABEL_ARCH,
    "beta.kubernetes.io/os": LABEL_OS,
    "beta.kubernetes.io/instance-type": LABEL_INSTANCE_TYPE,
}

# Keys whose values are a closed set: a requirement must name at least one of them.
WELL_KNOWN_VALUES: Final = {
    LABEL_CAPACITY_TYPE: frozenset(
        {CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, CAPACITY_TYPE_RESERVED}
    ),
    LABEL_AWS_INSTANCE_TENANCY: frozenset({"default", "dedicated"}),
}

# Taints a new node carries while it boots; the scheduler treats them as tolerated
# when it simulates new capacity, and initialization waits for them to go.
KNOWN_EPHEMERAL_TAINTS: Final = (
    ("node.kubernetes.io/not-ready", "NoSchedule"),
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoSchedule"),
    ("node.cloudprovider.kubernetes.io/uninitialized", "NoSchedule"),
    (TAINT_UNREGISTERED, "NoExecute"),
)
EPHEMERAL_TAINT_PREFIX: Final = "readiness.k8s.io/"

# Resources every instance type reports.
WELL_KNOWN_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})


def label_domain(key: str) -> str:
    """The DNS prefix of a label key (``"karpenter.sh"`` for ``"karpenter.sh/nodepool"``)."""
    prefix, sep, _ = key.partition("/")
    return prefix if sep else ""


def normalize_label(key: str) -> str:
    """The current name of an aliased label key, or the key itself."""
    return NORMALIZED_LABELS.get(key, key)


def nodeclass_label_key(group: str, kind: str) -> str:
    """The node label naming a node's NodeClass, e.g. ``karpenter.k8s.aws/ec2nodeclass``."""
    return f"{group}/{kind.lower()}"
