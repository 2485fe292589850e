"""`BootstrapOptions`: the inputs every AMI family's user data is rendered from, and the
kubelet command-line flags the shell-based families (AL2) share.

The kubelet settings travel as one camelCase map in the shape of the kubelet's own
``KubeletConfiguration`` (``maxPods``, ``kubeReserved``, ``clusterDNS``...), already
resolved for one group of instance types (see `karpy.cloud.aws.launch.kubelet`): AL2023
writes it inline into nodeadm's ``NodeConfig``, Bottlerocket maps it onto its settings and
AL2 turns it into flags. Flag rendering follows Karpenter's bootstrap (quoted lists,
``<`` between eviction signal and threshold) with map keys sorted, so equal inputs give
byte-equal user data and hence the same launch template.

The flags travel as one string (bootstrap.sh's ``--kubelet-extra-args``, nodeadm's
``flags``) that is split into words later, shell-style, by systemd. So each flag value is
one double-quoted word (`flag_value`): ``"`` and ``\\`` escaped; control characters and
``'`` refused (bootstrap.sh writes the string into a systemd unit as
``Environment='KUBELET_EXTRA_ARGS=...'``, where a line break would start a new unit line
and a ``'`` would end the assignment and start another); and a label, taint or map entry
that contains its list's own separators (``,`` between entries, ``=``/``<``/``:`` inside
one) is refused rather than written as two entries. Refusals are `ValueError`, which the
launcher reports as invalid user data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from karpy.apis.core import Taint
    from karpy.cloud.aws.launch.cluster import ClusterInfo

__all__ = [
    "BootstrapOptions",
    "flag_value",
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


_UNWRITABLE = re.compile(r"[\x00-\x1f\x7f']")


def flag_value(text: str) -> str:
    """``text`` as one double-quoted word of a kubelet command line (see the module
    docstring); for the characters labels, taints and quantities use, this is Go's ``%q``,
    as Karpenter writes it. `ValueError` for control characters and ``'``."""
    found = _UNWRITABLE.search(text)
    if found:
        raise ValueError(f"{text!r} contains {found.group()!r}, which no kubelet flag may")
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _entry(what: str, text: str, separators: str) -> str:
    """``text`` unchanged, unless it holds one of ``separators`` (`ValueError`)."""
    found = [c for c in separators if c in text]
    if found:
        raise ValueError(f"{what} {text!r} contains {found[0]!r}, a separator of its flag")
    return text


def taint_text(taint: Taint) -> str:
    """``key=value:Effect`` (``key:Effect`` without a value), as kubelet flags write taints."""
    key = _entry("taint key", taint.key, ",=:")
    head = f"{key}={_entry('taint value', taint.value, ',:')}" if taint.value else key
    return f"{head}:{_entry('taint effect', taint.effect, ',')}"


def node_label_arg(labels: Mapping[str, str]) -> str:
    """``--node-labels="k=v,..."`` in key order, or "" without labels."""
    if not labels:
        return ""
    joined = ",".join(
        f"{_entry('label key', key, ',=')}={_entry('label value', labels[key], ',')}"
        for key in sorted(labels)
    )
    return f"--node-labels={flag_value(joined)}"


def taint_arg(taints: tuple[Taint, ...]) -> str:
    """``--register-with-taints="k=v:Effect,..."`` (always present, possibly empty)."""
    return f"--register-with-taints={flag_value(','.join(taint_text(t) for t in taints))}"


def _joined_arg(name: str, values: Any, separator: str) -> str:
    if not isinstance(values, Mapping) or not values:
        return ""
    joined = ",".join(
        f"{_entry(name + ' key', str(key), ',' + separator)}{separator}"
        f"{_entry(name + ' value', str(values[key]), ',')}"
        for key in sorted(values)
    )
    return f"{name}={flag_value(joined)}"


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
