"""`BootstrapOptions`: the inputs every AMI family's user data is rendered from, and the
kubelet command-line flags the shell-based families (AL2) share.

The kubelet settings travel as one camelCase map in the shape of the kubelet's own
``KubeletConfiguration`` (``maxPods``, ``kubeReserved``, ``clusterDNS``...), already
resolved for one group of instance types (see `karpy.cloud.aws.launch.kubelet`): AL2023
writes it inline into nodeadm's ``NodeConfig``, Bottlerocket maps it onto its settings and
AL2 turns it into flags. Flag rendering follows Karpenter's bootstrap (quoted lists,
``<`` between eviction signal and threshold) with map keys sorted, so equal inputs give
byte-equal user data and hence the same launch template.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from karpy.apis.core import Taint
    from karpy.cloud.aws.launch.cluster import ClusterInfo

__all__ = [
    "BootstrapOptions",
    "go_quote",
    "kubelet_extra_args",
    "node_label_arg",
    "taint_arg",
    "taint_text",
]


@attrs.frozen(slots=True, kw_only=True)
class BootstrapOptions:
    cluster: ClusterInfo
    kubelet: Mapping[str, Any] = attrs.field(factory=dict)
    labels: Mapping[str, str] = attrs.field(factory=dict)
    taints: tuple[Taint, ...] = ()
    custom_user_data: str | None = None
    instance_store_policy: str | None = None

    @property
    def cluster_dns(self) -> list[str]:
        return [str(v) for v in self.kubelet.get("clusterDNS") or ()]


def go_quote(text: str) -> str:
    """``text`` in double quotes with Go's ``%q`` escapes (JSON's agree for what appears in
    labels and taints)."""
    return json.dumps(text, ensure_ascii=False)


def taint_text(taint: Taint) -> str:
    """``key=value:Effect`` (``key:Effect`` without a value), as kubelet flags write taints."""
    head = f"{taint.key}={taint.value}" if taint.value else taint.key
    return f"{head}:{taint.effect}"


def node_label_arg(labels: Mapping[str, str]) -> str:
    """``--node-labels="k=v,..."`` in key order, or "" without labels."""
    if not labels:
        return ""
    joined = ",".join(f"{key}={labels[key]}" for key in sorted(labels))
    return f"--node-labels={go_quote(joined)}"


def taint_arg(taints: tuple[Taint, ...]) -> str:
    """``--register-with-taints="k=v:Effect,..."`` (always present, possibly empty)."""
    return f"--register-with-taints={go_quote(','.join(taint_text(t) for t in taints))}"


def _joined_arg(name: str, values: Any, separator: str) -> str:
    if not isinstance(values, Mapping) or not values:
        return ""
    joined = ",".join(f"{key}{separator}{values[key]}" for key in sorted(values))
    return f"{name}={go_quote(joined)}"


def kubelet_extra_args(opts: BootstrapOptions) -> list[str]:
    """The kubelet flags for ``opts`` in Karpenter's order: labels, taints, then the
    kubelet settings that have a flag."""
    kubelet = opts.kubelet
    args = [node_label_arg(opts.labels), taint_arg(opts.taints)]
    if kubelet.get("maxPods") is not None:
        args.append(f"--max-pods={int(kubelet['maxPods'])}")
    if kubelet.get("podsPerCore") is not None:
        args.append(f"--pods-per-core={int(kubelet['podsPerCore'])}")
    args.append(_joined_arg("--system-reserved", kubelet.get("systemReserved"), "="))
    args.append(_joined_arg("--kube-reserved", kubelet.get("kubeReserved"), "="))
    args.append(_joined_arg("--eviction-hard", kubelet.get("evictionHard"), "<"))
    args.append(_joined_arg("--eviction-soft", kubelet.get("evictionSoft"), "<"))
    args.append(
        _joined_arg("--eviction-soft-grace-period", kubelet.get("evictionSoftGracePeriod"), "=")
    )
    for key, flag in (
        ("evictionMaxPodGracePeriod", "--eviction-max-pod-grace-period"),
        ("imageGCHighThresholdPercent", "--image-gc-high-threshold"),
        ("imageGCLowThresholdPercent", "--image-gc-low-threshold"),
    ):
        if kubelet.get(key) is not None:
            args.append(f"{flag}={int(kubelet[key])}")
    if kubelet.get("cpuCFSQuota") is not None:
        args.append(f"--cpu-cfs-quota={'true' if kubelet['cpuCFSQuota'] else 'false'}")
    return [a for a in args if a]
