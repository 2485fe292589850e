"""Bottlerocket user data: TOML settings, the user's merged under Karpenter's.

Bottlerocket reads one TOML document of ``[settings]``. Karpenter parses the user's
``userData``, then owns part of ``settings.kubernetes``: the cluster name, API server
and certificate are replaced; node labels are merged with Karpenter's winning; node
taints are replaced by the NodeClaim's (plus ``karpenter.sh/unregistered``); max pods,
cluster DNS, reserved resources and eviction settings are replaced when the kubelet
configuration sets them. Keys of ``settings.kubernetes`` that Bottlerocket does not know
are dropped (Karpenter decodes that table into a typed struct); every other settings
table (network, ntp, bootstrap containers...) is kept as the user wrote it.
"""

from __future__ import annotations

import tomllib
from typing import TYPE_CHECKING, Any, Final

from karpy.cloud.aws.launch.userdata import toml

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.cloud.aws.launch.userdata.options import BootstrapOptions

__all__ = ["render_bottlerocket"]

# settings.kubernetes keys in the order Karpenter's struct writes them.
KUBERNETES_KEYS: Final = (
    "api-server", "cloud-provider", "cluster-certificate", "cluster-name", "cluster-dns-ip",
    "credential-providers", "node-labels", "node-taints", "max-pods", "static-pods",
    "eviction-hard", "eviction-soft", "eviction-soft-grace-period",
    "eviction-max-pod-grace-period", "kube-reserved", "system-reserved",
    "allowed-unsafe-sysctls", "server-tls-bootstrap", "registry-qps", "registry-burst",
    "event-qps", "event-burst", "kube-api-qps", "kube-api-burst", "container-log-max-size",
    "container-log-max-files", "cpu-manager-policy", "cpu-manager-policy-options",
    "cpu-manager-reconcile-period", "memory-manager-policy",
    "memory-manager-reserved-memory", "topology-manager-scope", "topology-manager-policy",
    "topology-manager-policy-options", "image-gc-high-threshold-percent",
    "image-gc-low-threshold-percent", "ids-per-pod", "cpu-cfs-quota-enforced",
    "shutdown-grace-period", "shutdown-grace-period-for-critical-pods", "cluster-domain",
    "seccomp-default", "pod-pids-limit", "device-ownership-from-security-context",
    "single-process-oom-kill", "container-log-max-workers", "container-log-monitor-interval",
    "hostname-override-source", "log-level",
)  # fmt: skip


def _percent_text(value: Any) -> str:
    return str(int(value))


# kubelet configuration key -> (settings key, how the value is written)
_KUBELET_SETTINGS: Final[dict[str, tuple[str, Callable[[Any], Any]]]] = {
    "systemReserved": ("system-reserved", dict),
    "kubeReserved": ("kube-reserved", dict),
    "evictionHard": ("eviction-hard", dict),
    "evictionSoft": ("eviction-soft", dict),
    "evictionSoftGracePeriod": ("eviction-soft-grace-period", dict),
    "evictionMaxPodGracePeriod": ("eviction-max-pod-grace-period", int),
    "imageGCHighThresholdPercent": ("image-gc-high-threshold-percent", _percent_text),
    "imageGCLowThresholdPercent": ("image-gc-low-threshold-percent", _percent_text),
    "cpuCFSQuota": ("cpu-cfs-quota-enforced", bool),
}


def _sorted_tables(value: Any) -> Any:
    """Maps with sorted keys, all the way down (go-toml sorts map keys)."""
    if isinstance(value, dict):
        return {k: _sorted_tables(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_tables(v) for v in value]
    return value


def _kubernetes_settings(user: dict[str, Any], opts: BootstrapOptions) -> dict[str, Any]:
    k8s: dict[str, Any] = {k: v for k, v in user.items() if k in KUBERNETES_KEYS}
    cluster = opts.cluster
    k8s["cluster-name"] = cluster.name
    k8s["api-server"] = cluster.endpoint
    k8s["cluster-certificate"] = cluster.ca_bundle or None
    labels = dict(k8s.get("node-labels") or {})
    labels.update(opts.labels)
    k8s["node-labels"] = labels
    kubelet = opts.kubelet
    if kubelet.get("maxPods") is not None:
        k8s["max-pods"] = int(kubelet["maxPods"])
    if opts.cluster_dns:
        k8s["cluster-dns-ip"] = opts.cluster_dns[0]
    for kubelet_key, (settings_key, convert) in _KUBELET_SETTINGS.items():
        if kubelet.get(kubelet_key) is not None:
            k8s[settings_key] = convert(kubelet[kubelet_key])
    taints: dict[str, list[str]] = {}
    for taint in opts.taints:
        taints.setdefault(taint.key, []).append(f"{taint.value}:{taint.effect}")
    k8s["node-taints"] = taints
    ordered: dict[str, Any] = {}
    for key in KUBERNETES_KEYS:
        value = k8s.get(key)
        if value is None or (isinstance(value, dict | list) and not value):
            continue
        ordered[key] = _sorted_tables(value)
    return ordered


def _instance_store_commands(settings: dict[str, Any]) -> None:
    commands = dict(settings.get("bootstrap-commands") or {})
    bind = ["apiclient", "ephemeral-storage", "bind", "--dirs"]
    bind += ["/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]
    commands["000-mount-instance-storage"] = {
        "commands": [["apiclient", "ephemeral-storage", "init"], bind],
        "mode": "always",
        "essential": True,
    }
    settings["bootstrap-commands"] = commands


def render_bottlerocket(opts: BootstrapOptions) -> str:
    """The TOML document (not yet base64) for a Bottlerocket node; `ValueError` when the
    user's ``userData`` is not valid TOML."""
    try:
        user = tomllib.loads(opts.custom_user_data or "")
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"invalid Bottlerocket userData: {exc}") from None
    user_settings = user.get("settings") or {}
    if not isinstance(user_settings, dict):
        raise ValueError("invalid Bottlerocket userData: settings is not a table")
    kubernetes = user_settings.get("kubernetes") or {}
    settings: dict[str, Any] = {
        k: _sorted_tables(v) for k, v in sorted(user_settings.items()) if k != "kubernetes"
    }
    if opts.instance_store_policy == "RAID0":
        _instance_store_commands(settings)
    merged = {"kubernetes": _kubernetes_settings(dict(kubernetes), opts), **settings}
    return toml.dumps({"settings": merged})
