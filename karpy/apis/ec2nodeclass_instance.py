"""EC2NodeClass settings of the launched instances: kubelet, block devices, network
interfaces, instance metadata (IMDS), placement group and connection tracking, with the
bounds and CEL rules of Karpenter's CRD."""

from __future__ import annotations

from typing import Any

from karpy.apis.ec2nodeclass_selectors import has_any
from karpy.apis.openapi import Rule, Schema, array, boolean, integer, obj, string, string_map

__all__ = [
    "BLOCK_DEVICE_MAPPINGS",
    "CLUSTER_DNS_IP",
    "CONNECTION_TRACKING",
    "EVICTION_GRACE_PERIOD",
    "EVICTION_SIGNALS",
    "EVICTION_THRESHOLD",
    "KUBELET",
    "METADATA_OPTIONS",
    "METADATA_OPTIONS_DEFAULT",
    "NETWORK_INTERFACES",
    "PLACEMENT_GROUP",
    "QUANTITY_STRING",
    "RESERVED_RESOURCES",
]

EVICTION_SIGNALS = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")
QUANTITY_STRING = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
EVICTION_THRESHOLD = (
    r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$"
)
# Not in Karpenter's CRD, whose grace periods (metav1.Duration) are any string there and
# fail only when Karpenter decodes them: karpy's own, so that no text that is not an
# unsigned Go duration (``90s``, ``1m30s``, ``1.5m``) reaches a node's kubelet flags.
EVICTION_GRACE_PERIOD = r"^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$"
# Also karpy's own (Karpenter's clusterDNS items are plain strings): the characters of
# an IPv4 or IPv6 address; the model checks that it parses as one (`kubelet_errors`).
CLUSTER_DNS_IP = r"^([0-9]{1,3}(\.[0-9]{1,3}){3}|[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*)$"


def _key_rule(field: str, keys: tuple[str, ...], cel_list: str) -> Rule:
    listed = ",".join(f"'{k}'" for k in keys)
    return Rule(
        f"self.all(x, {cel_list})",
        f"valid keys for {field} are [{listed}]",
        lambda m: all(k in keys for k in m),
    )


def _eviction_map(field: str, description: str, *, pattern: str | None) -> Schema:
    cel_list = "x in [" + ",".join(f"'{s}'" for s in EVICTION_SIGNALS) + "]"
    return string_map(
        string(pattern=pattern),
        description,
        rules=(_key_rule(field, EVICTION_SIGNALS, cel_list),),
    )


def _reserved_map(field: str, description: str) -> Schema:
    cel_list = " || ".join(f"x=='{r}'" for r in RESERVED_RESOURCES)
    return string_map(
        string(pattern=QUANTITY_STRING),
        description,
        rules=(
            _key_rule(field, RESERVED_RESOURCES, cel_list),
            Rule(
                "self.all(x, !self[x].startsWith('-'))",
                f"{field} value cannot be a negative resource quantity",
                lambda m: not any(v.startswith("-") for v in m.values()),
            ),
        ),
    )


def _soft_keys_match(kubelet: dict[str, Any], field: str, other: str) -> bool:
    """Every key of ``field`` is in ``other``; like CEL, reading an absent ``other`` is an
    evaluation error (KeyError), but only once there is a key to look up."""
    if field not in kubelet:
        return True
    return all(k in kubelet[other] for k in kubelet[field])


def _image_gc_ok(kubelet: dict[str, Any]) -> bool:
    high = kubelet.get("imageGCHighThresholdPercent")
    low = kubelet.get("imageGCLowThresholdPercent")
    return high is None or low is None or high > low


KUBELET = obj(
    "Kubelet settings for the nodes (a subset of KubeletConfiguration).",
    {
        "clusterDNS": array(
            string(pattern=CLUSTER_DNS_IP), "IP addresses of the cluster DNS servers."
        ),
        "cpuCFSQuota": boolean("Whether CPU limits are enforced with CFS quota."),
        "evictionHard": _eviction_map(
            "evictionHard",
            "Hard eviction thresholds per signal (a quantity or a percentage).",
            pattern=EVICTION_THRESHOLD,
        ),
        "evictionMaxPodGracePeriod": integer(
            "The longest grace period (seconds) given to pods evicted by a soft threshold.",
            format="int32",
        ),
        "evictionSoft": _eviction_map(
            "evictionSoft",
            "Soft eviction thresholds per signal; each needs a grace period.",
            pattern=EVICTION_THRESHOLD,
        ),
        "evictionSoftGracePeriod": _eviction_map(
            "evictionSoftGracePeriod",
            "How long each soft threshold must be exceeded before evicting (a Go duration).",
            pattern=EVICTION_GRACE_PERIOD,
        ),
        "imageGCHighThresholdPercent": integer(
            "Disk usage (percent) above which image garbage collection always runs.",
            format="int32",
            minimum=0,
            maximum=100,
        ),
        "imageGCLowThresholdPercent": integer(
            "Disk usage (percent) image garbage collection frees down to.",
            format="int32",
            minimum=0,
            maximum=100,
        ),
        "kubeReserved": _reserved_map(
            "kubeReserved", "Resources reserved for Kubernetes system daemons."
        ),
        "maxPods": integer("The most pods a node may run.", format="int32", minimum=0),
        "podsPerCore": integer(
            "Pods allowed per CPU core (capped by maxPods).", format="int32", minimum=0
        ),
        "systemReserved": _reserved_map(
            "systemReserved", "Resources reserved for OS daemons and the kernel."
        ),
    },
    rules=(
        Rule(
            "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  "
            "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true",
            "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
            _image_gc_ok,
        ),
        Rule(
            "has(self.evictionSoft) ? self.evictionSoft.all(e, "
            "(e in self.evictionSoftGracePeriod)):true",
            "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
            lambda k: _soft_keys_match(k, "evictionSoft", "evictionSoftGracePeriod"),
        ),
        Rule(
            "has(self.evictionSoftGracePeriod) ? self.evictionSoftGracePeriod.all(e, "
            "(e in self.evictionSoft)):true",
            "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
            lambda k: _soft_keys_match(k, "evictionSoftGracePeriod", "evictionSoft"),
        ),
    ),
)

_VOLUME_SIZE = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|"
    r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|"
    r"([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)

_ebs = obj(
    "The EBS volume behind the device.",
    {
        "deleteOnTermination": boolean("Whether the volume is deleted with the instance."),
        "encrypted": boolean("Whether the volume is encrypted."),
        "iops": integer("Provisioned IOPS (io1, io2 and gp3 volumes).", format="int64"),
        "kmsKeyID": string("The KMS key that encrypts the volume."),
        "snapshotID": string("The snapshot the volume is created from."),
        "throughput": integer("Throughput in MiB/s (gp3 volumes).", format="int64"),
        "volumeInitializationRate": integer(
            "How fast (MiB/s) a volume created from a snapshot is initialized.",
            format="int32",
            minimum=100,
            maximum=300,
        ),
        "volumeSize": string(
            "The volume size, e.g. 20Gi or 100G (at most 64T).", pattern=_VOLUME_SIZE
        ),
        "volumeType": string(
            "The EBS volume type.",
            enum=("standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"),
        ),
    },
    rules=(
        Rule(
            "has(self.snapshotID) || has(self.volumeSize)",
            "snapshotID or volumeSize must be defined",
            lambda ebs: "snapshotID" in ebs or "volumeSize" in ebs,
        ),
        Rule(
            "!has(self.volumeInitializationRate) || (has(self.snapshotID) && "
            "self.snapshotID != '')",
            "snapshotID must be set when volumeInitializationRate is set",
            lambda ebs: "volumeInitializationRate" not in ebs or ebs.get("snapshotID", "") != "",
        ),
    ),
)

BLOCK_DEVICE_MAPPINGS = array(
    obj(
        "A block device attached at launch.",
        {
            "deviceName": string("The device name, e.g. /dev/xvda."),
            "ebs": _ebs,
            "rootVolume": boolean(
                "Whether this is the root volume (its size becomes the node's ephemeral-storage)."
            ),
        },
    ),
    "Block devices attached to the nodes; replaces the AMI family's defaults.",
    max_items=50,
    rules=(
        Rule(
            "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",
            "must have only one blockDeviceMappings with rootVolume",
            lambda mappings: sum(1 for m in mappings if m.get("rootVolume") is True) <= 1,
        ),
    ),
)


def _interfaces_unique(interfaces: list[dict[str, Any]]) -> bool:
    def same_slot(x: dict[str, Any], y: dict[str, Any]) -> bool:
        return (x.get("networkCardIndex"), x.get("deviceIndex")) == (
            y.get("networkCardIndex"),
            y.get("deviceIndex"),
        )

    for x in interfaces:
        if sum(1 for y in interfaces if same_slot(x, y)) != 1:
            return False
        if x.get("interfaceType") == "efa-only":
            efa_on_card = sum(
                1
                for y in interfaces
                if y.get("networkCardIndex") == x.get("networkCardIndex")
                and y.get("interfaceType") == "efa-only"
            )
            if efa_on_card != 1:
                return False
    return True


NETWORK_INTERFACES = array(
    obj(
        "A network interface attached at launch.",
        {
            "deviceIndex": integer("The interface's device index.", format="int32", minimum=0),
            "interfaceType": string(
                "interface (a normal ENI) or efa-only.", enum=("interface", "efa-only")
            ),
            "networkCardIndex": integer(
                "The network card the interface is on.", format="int32", minimum=0
            ),
        },
        required=("deviceIndex", "interfaceType", "networkCardIndex"),
    ),
    "Network interfaces of the nodes (e.g. for EFA); must include the primary one.",
    max_items=150,
    rules=(
        Rule(
            "self.size() == 0 || self.exists(x, x.deviceIndex == 0 && x.networkCardIndex == 0 "
            "&& x.interfaceType == 'interface')",
            "networkInterfaces must include a primary interface with interfaceType='interface'",
            lambda nis: (
                len(nis) == 0
                or any(
                    n.get("deviceIndex") == 0
                    and n.get("networkCardIndex") == 0
                    and n.get("interfaceType") == "interface"
                    for n in nis
                )
            ),
        ),
        Rule(
            "self.all(x, self.filter(y, x.networkCardIndex == y.networkCardIndex && "
            "x.deviceIndex == y.deviceIndex).size() == 1 && (x.interfaceType != 'efa-only' || "
            "self.filter(y, x.networkCardIndex == y.networkCardIndex && "
            "y.interfaceType == 'efa-only').size() == 1))",
            "networkInterfaces must not have duplicate networkCardIndex and deviceIndex "
            "pairs, and can have at most one efa device per network card",
            _interfaces_unique,
        ),
    ),
)

METADATA_OPTIONS_DEFAULT = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}

METADATA_OPTIONS = obj(
    "Instance metadata service (IMDS) settings of the nodes.",
    {
        "httpEndpoint": string(
            "Whether the metadata endpoint is reachable.",
            enum=("enabled", "disabled"),
            default="enabled",
        ),
        "httpProtocolIPv6": string(
            "Whether the endpoint is also served over IPv6.",
            enum=("enabled", "disabled"),
            default="disabled",
        ),
        "httpPutResponseHopLimit": integer(
            "How many network hops a metadata token response may travel (1 keeps it "
            "out of pods not on the host network).",
            format="int64",
            minimum=1,
            maximum=64,
            default=1,
        ),
        "httpTokens": string(
            "Whether IMDSv2 session tokens are required.",
            enum=("required", "optional"),
            default="required",
        ),
    },
    default=dict(METADATA_OPTIONS_DEFAULT),
)

PLACEMENT_GROUP = obj(
    "A placement group for the nodes, by name or ID.",
    {
        "id": string("The placement group ID.", pattern="^pg-[0-9a-z]+$"),
        "name": string("The placement group name.", min_length=1),
    },
    rules=(
        Rule(
            "has(self.name) || has(self.id)",
            "expected at least one, got none, ['name', 'id']",
            lambda pg: "name" in pg or "id" in pg,
        ),
        Rule(
            "!(has(self.name) && has(self.id))",
            "'name' and 'id' are mutually exclusive",
            lambda pg: not ("name" in pg and "id" in pg),
        ),
    ),
)

CONNECTION_TRACKING = obj(
    "Connection tracking timeouts (seconds) of the nodes' primary interface.",
    {
        "tcpEstablishedTimeout": integer(
            "Idle timeout of established TCP connections.",
            format="int32",
            minimum=60,
            maximum=432000,
        ),
        "udpStreamTimeout": integer(
            "Idle timeout of UDP flows seen in both directions.",
            format="int32",
            minimum=60,
            maximum=180,
        ),
        "udpTimeout": integer(
            "Idle timeout of UDP flows seen in one direction.",
            format="int32",
            minimum=30,
            maximum=60,
        ),
    },
    rules=(
        Rule(
            "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",
            "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set",
            lambda ct: has_any(ct, "tcpEstablishedTimeout", "udpStreamTimeout", "udpTimeout"),
        ),
    ),
)
