"""The drift hashes Karpenter stamps on NodeClaims, computed as Karpenter computes them.

A NodeClaim carries ``karpenter.sh/nodepool-hash`` (its NodePool's template when it was
created) and, on AWS, ``karpenter.k8s.aws/ec2nodeclass-hash``. When the current hash of
the NodePool or EC2NodeClass differs, the node has drifted. Using Karpenter's exact
algorithm (`karpy.apis.gohash`) means nodes Karpenter launched are not all reported as
drifted when karpy takes over, and the other way round.

Each function describes the Go struct Karpenter hashes, field by field, in declaration
order, leaving out fields tagged ``hash:"ignore"`` (requirements, budgets, selector
terms, ``ipPrefixCount``, the literal ``amiFamily``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.gohash import Bool, GoStruct, Int, Map, Ptr, Slice, go_hash
from karpy.base.quantity import format_quantity, parse_quantity
from karpy.durations import from_timedelta, parse_duration

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import timedelta

    from karpy.apis.core import Taint
    from karpy.apis.ec2nodeclass import EC2NodeClass, KubeletConfiguration
    from karpy.apis.nodepool import NodeClaimTemplate

__all__ = [
    "EC2NODECLASS_HASH_VERSION",
    "NODEPOOL_HASH_VERSION",
    "ec2nodeclass_hash",
    "nodepool_template_hash",
]

NODEPOOL_HASH_VERSION = "v3"
EC2NODECLASS_HASH_VERSION = "v5"


def _ptr(value: Any) -> Ptr | None:
    return None if value is None else Ptr(value)


def _ptr_int(value: int | None, bits: int) -> Ptr | None:
    return None if value is None else Ptr(Int(value, bits))


def _ptr_bool(value: bool | None) -> Ptr | None:
    return None if value is None else Ptr(Bool(value))


def _map(values: Mapping[str, Any]) -> Map | None:
    return Map(tuple(values.items())) if values else None


def _duration(value: timedelta) -> GoStruct:
    """metav1.Duration."""
    return GoStruct("Duration", (("Duration", Int(from_timedelta(value))),))


def _taint(taint: Taint) -> GoStruct:
    time_added = None
    if taint.time_added is not None:  # metav1.Time{time.Time}: only unexported fields
        time_added = Ptr(GoStruct("Time", (("Time", GoStruct("Time", (), nonzero=True)),)))
    return GoStruct(
        "Taint",
        (
            ("Key", taint.key),
            ("Value", taint.value),
            ("Effect", taint.effect),
            ("TimeAdded", time_added),
        ),
    )


def nodepool_template_hash(template: NodeClaimTemplate) -> str:
    """The ``karpenter.sh/nodepool-hash`` of a NodePool's template (version v3)."""
    spec = template.spec
    metadata = GoStruct(
        "ObjectMeta",
        (
            ("Labels", _map(template.metadata.labels)),
            ("Annotations", _map(template.metadata.annotations)),
        ),
    )
    ref = spec.node_class_ref
    expire_after = (
        None if spec.expire_after is None else Ptr(Int(from_timedelta(spec.expire_after)))
    )
    template_spec = GoStruct(
        "NodeClaimTemplateSpec",
        (
            ("Taints", Slice(tuple(_taint(t) for t in spec.taints)) if spec.taints else None),
            (
                "StartupTaints",
                Slice(tuple(_taint(t) for t in spec.startup_taints))
                if spec.startup_taints
                else None,
            ),
            (
                "NodeClassRef",
                Ptr(
                    GoStruct(
                        "NodeClassReference",
                        (("Kind", ref.kind), ("Name", ref.name), ("Group", ref.group)),
                    )
                ),
            ),
            (
                "TerminationGracePeriod",
                None
                if spec.termination_grace_period is None
                else Ptr(_duration(spec.termination_grace_period)),
            ),
            ("ExpireAfter", GoStruct("NillableDuration", (("Duration", expire_after),))),
        ),
    )
    return str(
        go_hash(GoStruct("NodeClaimTemplate", (("ObjectMeta", metadata), ("Spec", template_spec))))
    )


def _kubelet(kubelet: KubeletConfiguration) -> GoStruct:
    grace = {k: _duration_text(v) for k, v in kubelet.eviction_soft_grace_period.items()}
    return GoStruct(
        "KubeletConfiguration",
        (
            ("ClusterDNS", Slice(kubelet.cluster_dns) if kubelet.cluster_dns else None),
            ("MaxPods", _ptr_int(kubelet.max_pods, 32)),
            ("PodsPerCore", _ptr_int(kubelet.pods_per_core, 32)),
            ("SystemReserved", _map(kubelet.system_reserved)),
            ("KubeReserved", _map(kubelet.kube_reserved)),
            ("EvictionHard", _map(kubelet.eviction_hard)),
            ("EvictionSoft", _map(kubelet.eviction_soft)),
            ("EvictionSoftGracePeriod", _map(grace)),
            ("EvictionMaxPodGracePeriod", _ptr_int(kubelet.eviction_max_pod_grace_period, 32)),
            ("ImageGCHighThresholdPercent", _ptr_int(kubelet.image_gc_high_threshold_percent, 32)),
            ("ImageGCLowThresholdPercent", _ptr_int(kubelet.image_gc_low_threshold_percent, 32)),
            ("CPUCFSQuota", _ptr_bool(kubelet.cpu_cfs_quota)),
        ),
    )


def _duration_text(text: str) -> GoStruct:
    return GoStruct("Duration", (("Duration", Int(parse_duration(text))),))


def _canonical_quantity(text: str) -> str:
    """resource.Quantity.String() of a parsed quantity: same format, largest suffix."""
    return format_quantity(parse_quantity(text), binary=text.endswith("i"))


def ec2nodeclass_hash(nodeclass: EC2NodeClass, ca_bundle: str | None = None) -> str:
    """The ``karpenter.k8s.aws/ec2nodeclass-hash`` of a node class (version v5): its
    spec, its AMI family in effect and the cluster CA bundle."""
    spec = nodeclass.spec
    placement = spec.placement_group_selector
    mappings = tuple(
        Ptr(
            GoStruct(
                "BlockDeviceMapping",
                (
                    ("DeviceName", _ptr(m.device_name)),
                    (
                        "EBS",
                        None
                        if m.ebs is None
                        else Ptr(
                            GoStruct(
                                "BlockDevice",
                                (
                                    ("DeleteOnTermination", _ptr_bool(m.ebs.delete_on_termination)),
                                    ("Encrypted", _ptr_bool(m.ebs.encrypted)),
                                    ("IOPS", _ptr_int(m.ebs.iops, 64)),
                                    ("KMSKeyID", _ptr(m.ebs.kms_key_id)),
                                    ("SnapshotID", _ptr(m.ebs.snapshot_id)),
                                    ("Throughput", _ptr_int(m.ebs.throughput, 64)),
                                    (
                                        "VolumeInitializationRate",
                                        _ptr_int(m.ebs.volume_initialization_rate, 32),
                                    ),
                                    (
                                        "VolumeSize",
                                        None
                                        if m.ebs.volume_size is None
                                        else _canonical_quantity(m.ebs.volume_size),
                                    ),
                                    ("VolumeType", _ptr(m.ebs.volume_type)),
                                ),
                            )
                        ),
                    ),
                    ("RootVolume", Bool(m.root_volume)),
                ),
            )
        )
        for m in spec.block_device_mappings
    )
    interfaces = tuple(
        Ptr(
            GoStruct(
                "NetworkInterface",
                (
                    ("NetworkCardIndex", Int(n.network_card_index, 32)),
                    ("DeviceIndex", Int(n.device_index, 32)),
                    ("InterfaceType", n.interface_type),
                ),
            )
        )
        for n in spec.network_interfaces
    )
    imds = spec.metadata_options
    tracking = spec.connection_tracking
    go_spec = GoStruct(
        "EC2NodeClassSpec",
        (
            (
                "PlacementGroupSelector",
                None
                if placement is None
                else Ptr(
                    GoStruct(
                        "PlacementGroupSelector",
                        (("Name", _ptr(placement.name)), ("ID", _ptr(placement.id))),
                    )
                ),
            ),
            ("AssociatePublicIPAddress", _ptr_bool(spec.associate_public_ip_address)),
            ("UserData", _ptr(spec.user_data)),
            ("Role", spec.role or ""),
            ("InstanceProfile", _ptr(spec.instance_profile)),
            ("Tags", _map(spec.tags)),
            ("Kubelet", None if spec.kubelet is None else Ptr(_kubelet(spec.kubelet))),
            ("BlockDeviceMappings", Slice(mappings) if mappings else None),
            ("InstanceStorePolicy", _ptr(spec.instance_store_policy)),
            ("NetworkInterfaces", Slice(interfaces) if interfaces else None),
            ("DetailedMonitoring", _ptr_bool(spec.detailed_monitoring)),
            (
                "MetadataOptions",
                Ptr(
                    GoStruct(
                        "MetadataOptions",
                        (
                            ("HTTPEndpoint", Ptr(imds.http_endpoint)),
                            ("HTTPProtocolIPv6", Ptr(imds.http_protocol_ipv6)),
                            (
                                "HTTPPutResponseHopLimit",
                                Ptr(Int(imds.http_put_response_hop_limit, 64)),
                            ),
                            ("HTTPTokens", Ptr(imds.http_tokens)),
                        ),
                    )
                ),
            ),
            (
                "ConnectionTracking",
                None
                if tracking is None
                else Ptr(
                    GoStruct(
                        "ConnectionTracking",
                        (
                            (
                                "TCPEstablishedTimeout",
                                _ptr_int(tracking.tcp_established_timeout, 32),
                            ),
                            ("UDPStreamTimeout", _ptr_int(tracking.udp_stream_timeout, 32)),
                            ("UDPTimeout", _ptr_int(tracking.udp_timeout, 32)),
                        ),
                    )
                ),
            ),
            ("Context", _ptr(spec.context)),
            (
                "CPUOptions",
                None
                if spec.cpu_options is None
                else Ptr(
                    GoStruct(
                        "CPUOptions",
                        (("NestedVirtualization", _ptr(spec.cpu_options.nested_virtualization)),),
                    )
                ),
            ),
            (
                # v1.15; nil (absent) is left out, so classes without it keep their hash.
                "EnclaveOptions",
                None
                if spec.enclave_options is None
                else Ptr(
                    GoStruct("EnclaveOptions", (("Enabled", Bool(spec.enclave_options.enabled)),))
                ),
            ),
        ),
    )
    return str(go_hash(Slice((go_spec, nodeclass.ami_family, ca_bundle or ""))))
