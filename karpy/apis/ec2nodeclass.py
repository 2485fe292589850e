"""``karpenter.k8s.aws/v1`` EC2NodeClass as an attrs model.

The spec says how to launch instances (subnets, security groups, AMIs, IAM, storage,
kubelet and IMDS settings); the status (`karpy.apis.ec2nodeclass_status`) says what
those selectors resolved to. Attribute names are the snake_case of the JSON fields
(``amiSelectorTerms`` → ``ami_selector_terms``, ``kmsKeyID`` → ``kms_key_id``).
Optional fields are None when absent, so that "not set" and "set to false/0" stay
distinct, as they are for the CRD's rules.
"""

from __future__ import annotations

# ruff: noqa: RUF009 - `wire(...)` declares attrs fields, as attrs.field does.
import ipaddress
import re
from collections.abc import Mapping  # noqa: TC003 - annotations are resolved at runtime
from typing import Any, ClassVar

import attrs

from karpy.apis import labels, openapi_engine
from karpy.apis.core import InvalidObject, ObjectMeta
from karpy.apis.ec2nodeclass_instance import KUBELET
from karpy.apis.ec2nodeclass_schema import EC2NODECLASS, EC2NODECLASS_SCHEMA
from karpy.apis.ec2nodeclass_status import EC2NodeClassStatus
from karpy.apis.fielderrors import FieldError
from karpy.apis.records import Record, wire
from karpy.apis.wire import KindModel, prepare
from karpy.base.quantity import parse_quantity

__all__ = [
    "AMISelectorTerm",
    "BlockDevice",
    "BlockDeviceMapping",
    "CPUOptions",
    "CapacityReservationSelectorTerm",
    "ConnectionTracking",
    "EC2NodeClass",
    "EC2NodeClassSpec",
    "EnclaveOptions",
    "KubeletConfiguration",
    "MetadataOptions",
    "NetworkInterface",
    "PlacementGroupSelector",
    "SecurityGroupSelectorTerm",
    "SubnetSelectorTerm",
]


@attrs.frozen(slots=True, kw_only=True)
class SubnetSelectorTerm(Record):
    tags: Mapping[str, str] | None = wire("tags", default=None)
    id: str | None = wire("id", default=None)


@attrs.frozen(slots=True, kw_only=True)
class SecurityGroupSelectorTerm(Record):
    tags: Mapping[str, str] | None = wire("tags", default=None)
    id: str | None = wire("id", default=None)
    name: str | None = wire("name", default=None)


@attrs.frozen(slots=True, kw_only=True)
class CapacityReservationSelectorTerm(Record):
    tags: Mapping[str, str] | None = wire("tags", default=None)
    id: str | None = wire("id", default=None)
    owner_id: str | None = wire("ownerID", default=None)
    instance_match_criteria: str | None = wire("instanceMatchCriteria", default=None)


@attrs.frozen(slots=True, kw_only=True)
class AMISelectorTerm(Record):
    alias: str | None = wire("alias", default=None)
    tags: Mapping[str, str] | None = wire("tags", default=None)
    id: str | None = wire("id", default=None)
    name: str | None = wire("name", default=None)
    owner: str | None = wire("owner", default=None)
    ssm_parameter: str | None = wire("ssmParameter", default=None)


@attrs.frozen(slots=True, kw_only=True)
class PlacementGroupSelector(Record):
    name: str | None = wire("name", default=None)
    id: str | None = wire("id", default=None)


@attrs.frozen(slots=True, kw_only=True)
class KubeletConfiguration(Record):
    """The kubelet settings Karpenter passes to nodes (and reads for allocatable).

    Reserved-resource and eviction maps keep their text values, as Go does: eviction
    thresholds may be percentages, which are not quantities."""

    cluster_dns: tuple[str, ...] = wire("clusterDNS", default=())
    max_pods: int | None = wire("maxPods", default=None)
    pods_per_core: int | None = wire("podsPerCore", default=None)
    system_reserved: Mapping[str, str] = wire("systemReserved", factory=dict)
    kube_reserved: Mapping[str, str] = wire("kubeReserved", factory=dict)
    eviction_hard: Mapping[str, str] = wire("evictionHard", factory=dict)
    eviction_soft: Mapping[str, str] = wire("evictionSoft", factory=dict)
    eviction_soft_grace_period: Mapping[str, str] = wire("evictionSoftGracePeriod", factory=dict)
    eviction_max_pod_grace_period: int | None = wire("evictionMaxPodGracePeriod", default=None)
    image_gc_high_threshold_percent: int | None = wire("imageGCHighThresholdPercent", default=None)
    image_gc_low_threshold_percent: int | None = wire("imageGCLowThresholdPercent", default=None)
    cpu_cfs_quota: bool | None = wire("cpuCFSQuota", default=None)

    @property
    def kube_reserved_resources(self) -> dict[str, int]:
        """``kube_reserved`` as milli-units per resource."""
        return {k: parse_quantity(v) for k, v in self.kube_reserved.items()}

    @property
    def system_reserved_resources(self) -> dict[str, int]:
        """``system_reserved`` as milli-units per resource."""
        return {k: parse_quantity(v) for k, v in self.system_reserved.items()}


@attrs.frozen(slots=True, kw_only=True)
class BlockDevice(Record):
    delete_on_termination: bool | None = wire("deleteOnTermination", default=None)
    encrypted: bool | None = wire("encrypted", default=None)
    iops: int | None = wire("iops", default=None)
    kms_key_id: str | None = wire("kmsKeyID", default=None)
    snapshot_id: str | None = wire("snapshotID", default=None)
    throughput: int | None = wire("throughput", default=None)
    volume_initialization_rate: int | None = wire("volumeInitializationRate", default=None)
    volume_size: str | None = wire("volumeSize", default=None)
    volume_type: str | None = wire("volumeType", default=None)

    @property
    def volume_size_bytes(self) -> int | None:
        """``volume_size`` in bytes (``20Gi`` → 21474836480)."""
        return None if self.volume_size is None else parse_quantity(self.volume_size) // 1000


@attrs.frozen(slots=True, kw_only=True)
class BlockDeviceMapping(Record):
    device_name: str | None = wire("deviceName", default=None)
    ebs: BlockDevice | None = wire("ebs", default=None)
    root_volume: bool = wire("rootVolume", default=False)


@attrs.frozen(slots=True, kw_only=True)
class NetworkInterface(Record):
    network_card_index: int = wire("networkCardIndex", always=True)
    device_index: int = wire("deviceIndex", always=True)
    interface_type: str = wire("interfaceType", always=True)


@attrs.frozen(slots=True, kw_only=True)
class MetadataOptions(Record):
    """IMDS settings; every field has a default, so the record is always complete."""

    http_endpoint: str = wire("httpEndpoint", default="enabled", always=True)
    http_protocol_ipv6: str = wire("httpProtocolIPv6", default="disabled", always=True)
    http_put_response_hop_limit: int = wire("httpPutResponseHopLimit", default=1, always=True)
    http_tokens: str = wire("httpTokens", default="required", always=True)


@attrs.frozen(slots=True, kw_only=True)
class ConnectionTracking(Record):
    tcp_established_timeout: int | None = wire("tcpEstablishedTimeout", default=None)
    udp_stream_timeout: int | None = wire("udpStreamTimeout", default=None)
    udp_timeout: int | None = wire("udpTimeout", default=None)


@attrs.frozen(slots=True, kw_only=True)
class CPUOptions(Record):
    nested_virtualization: str | None = wire("nestedVirtualization", default=None)


@attrs.frozen(slots=True, kw_only=True)
class EnclaveOptions(Record):
    """``spec.enclaveOptions`` (Karpenter v1.15): Nitro Enclaves on every node of the
    class. Kept as its own object, not a bare flag, because ``enclaveOptions: {}`` and an
    absent field differ for the drift hash, as in Karpenter."""

    enabled: bool = wire("enabled", default=False)


@attrs.frozen(slots=True, kw_only=True)
class EC2NodeClassSpec(Record):
    subnet_selector_terms: tuple[SubnetSelectorTerm, ...] = wire("subnetSelectorTerms", always=True)
    security_group_selector_terms: tuple[SecurityGroupSelectorTerm, ...] = wire(
        "securityGroupSelectorTerms", always=True
    )
    ami_selector_terms: tuple[AMISelectorTerm, ...] = wire("amiSelectorTerms", always=True)
    capacity_reservation_selector_terms: tuple[CapacityReservationSelectorTerm, ...] = wire(
        "capacityReservationSelectorTerms", default=()
    )
    placement_group_selector: PlacementGroupSelector | None = wire(
        "placementGroupSelector", default=None
    )
    associate_public_ip_address: bool | None = wire("associatePublicIPAddress", default=None)
    ip_prefix_count: int | None = wire("ipPrefixCount", default=None)
    ami_family: str | None = wire("amiFamily", default=None)
    user_data: str | None = wire("userData", default=None)
    role: str | None = wire("role", default=None)
    instance_profile: str | None = wire("instanceProfile", default=None)
    tags: Mapping[str, str] = wire("tags", factory=dict)
    kubelet: KubeletConfiguration | None = wire("kubelet", default=None)
    block_device_mappings: tuple[BlockDeviceMapping, ...] = wire("blockDeviceMappings", default=())
    instance_store_policy: str | None = wire("instanceStorePolicy", default=None)
    network_interfaces: tuple[NetworkInterface, ...] = wire("networkInterfaces", default=())
    detailed_monitoring: bool | None = wire("detailedMonitoring", default=None)
    metadata_options: MetadataOptions = wire("metadataOptions", default=MetadataOptions())
    connection_tracking: ConnectionTracking | None = wire("connectionTracking", default=None)
    context: str | None = wire("context", default=None)
    cpu_options: CPUOptions | None = wire("cpuOptions", default=None)
    enclave_options: EnclaveOptions | None = wire("enclaveOptions", default=None)

    @property
    def enclaves_enabled(self) -> bool:
        return self.enclave_options is not None and self.enclave_options.enabled


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


_ALIAS_FAMILIES = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}

# Tag keys Karpenter sets itself; a node class that sets them fails validation.
_RESTRICTED_TAG_PATTERNS = (
    r"^kubernetes\.io/cluster/[0-9A-Za-z][A-Za-z0-9\-_]*$",
    f"^{labels.LABEL_NODEPOOL}$".replace(".", r"\."),
    r"^eks:eks-cluster-name$",
    f"^{labels.LABEL_AWS_NODECLASS}$".replace(".", r"\."),
    f"^{labels.GROUP}/nodeclaim$".replace(".", r"\."),
)


@attrs.frozen(slots=True, kw_only=True)
class EC2NodeClass(KindModel):
    API_VERSION: ClassVar[str] = EC2NODECLASS.api_version
    KIND: ClassVar[str] = EC2NODECLASS.kind
    SCHEMA: ClassVar = EC2NODECLASS_SCHEMA

    metadata: ObjectMeta
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus = EC2NodeClassStatus()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EC2NodeClass:
        wire_form = prepare(EC2NODECLASS_SCHEMA, data, cls.API_VERSION, cls.KIND)
        spec = wire_form.get("spec")
        if spec is None:
            # The CRD does not require spec, but a node class without one is useless.
            raise InvalidObject([FieldError.required("spec")])
        return cls(
            metadata=ObjectMeta.from_dict(wire_form.get("metadata")),
            spec=EC2NodeClassSpec.from_dict(spec, "spec"),
            status=EC2NodeClassStatus.parse(wire_form.get("status")),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "apiVersion": self.API_VERSION,
            "kind": self.KIND,
            "metadata": self.metadata.to_dict(),
            "spec": self.spec.to_dict(),
        }
        status = self.status.to_dict()
        if status:
            out["status"] = status
        return out

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def alias(self) -> tuple[str, str] | None:
        """(family, version) of the AMI alias term, e.g. ("AL2023", "latest")."""
        for term in self.spec.ami_selector_terms:
            if term.alias:
                family, _, version = term.alias.partition("@")
                return _ALIAS_FAMILIES.get(family, family), version
        return None

    @property
    def ami_family(self) -> str:
        """The AMI family in effect: the explicit one, else the alias's, else Custom."""
        if self.spec.ami_family is not None:
            return self.spec.ami_family
        alias = self.alias
        return alias[0] if alias is not None else "Custom"

    def validate_runtime(self) -> list[FieldError]:
        """The node class controller's checks: the kubelet values (`kubelet_errors`),
        then tags (tags Karpenter owns are refused)."""
        return self.kubelet_errors() + self._tag_errors()

    def kubelet_errors(self) -> list[FieldError]:
        """``spec.kubelet`` against the CRD's bounds for it, whichever CRD admitted the
        object: keys, quantity, percentage and duration patterns, and cluster DNS entries
        that parse as IP addresses. These values end up in user data (shell flags, TOML,
        YAML), so a class written before the patterns existed must not launch nodes."""
        kubelet = self.spec.kubelet
        if kubelet is None:
            return []
        path = "spec.kubelet"
        errors = [
            e
            for e in openapi_engine.validate(KUBELET, kubelet.to_dict(), path)
            if e.path != "<nil>"
        ]
        flagged = {e.path for e in errors}
        for index, address in enumerate(kubelet.cluster_dns):
            at = f"{path}.clusterDNS[{index}]"
            if at not in flagged and not _is_ip(address):
                errors.append(FieldError.invalid(at, address, f"{at} must be an IP address"))
        return errors

    def _tag_errors(self) -> list[FieldError]:
        restricted = [
            key
            for key in self.spec.tags
            if any(re.search(p, key) for p in _RESTRICTED_TAG_PATTERNS)
        ]
        if not restricted:
            return []
        shown = ", ".join(f'"{k}"' for k in restricted)
        return [
            FieldError.invalid(
                "spec.tags", key, f"tags failed validation requirements, tags: {shown}"
            )
            for key in restricted
        ]
