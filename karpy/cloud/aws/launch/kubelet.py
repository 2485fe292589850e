"""The kubelet settings a launch template passes to its nodes, per group of instance types.

A node's real allocatable must match what the scheduler assumed, so the user data carries
the values the instance-type provider used: ``maxPods`` is the type's pods capacity, and
``kubeReserved`` the node class's when it sets one, else what the provider reserved for
that type (its overhead less the node class's ``systemReserved`` and the eviction
threshold, `derive_kube_reserved`). Instance types that agree on these values share a
launch template (`KubeletValues` is the grouping key, as in Karpenter's resolver).

`kubelet_config` then builds the camelCase ``KubeletConfiguration`` map for the user data:
the node class's ``spec.kubelet`` as written, with ``maxPods``, the reserved resources and
(when the class sets none) ``clusterDNS`` filled in.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.base.quantity import format_resource, parse_quantity
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.scheduling.instancetypes import InstanceType

__all__ = ["KubeletValues", "derive_kube_reserved", "kubelet_config", "kubelet_values"]

DEFAULT_EVICTION_MEMORY: Final = parse_quantity("100Mi")
DEFAULT_EVICTION_NODEFS_PERCENT: Final = 10.0
_SIGNALS: Final = {MEMORY: "memory.available", EPHEMERAL_STORAGE: "nodefs.available"}


@attrs.frozen(slots=True)
class KubeletValues:
    """Per-type kubelet values; equal values share a launch template."""

    max_pods: int
    kube_reserved: tuple[tuple[str, str], ...] = ()
    system_reserved: tuple[tuple[str, str], ...] = ()


def _eviction_threshold(resource: str, capacity: int, eviction_hard: Mapping[str, str]) -> int:
    """The hard eviction threshold of ``resource`` in milli-units, as Karpenter computes it
    for allocatable: a percentage of capacity (rounded up) or a quantity."""
    text = eviction_hard.get(_SIGNALS[resource])
    if text is None:
        if resource == MEMORY:
            return DEFAULT_EVICTION_MEMORY
        text = f"{DEFAULT_EVICTION_NODEFS_PERCENT}%"
    if text.endswith("%"):
        percent = float(text[:-1])
        if percent >= 100:
            return 0
        return math.ceil(capacity / 1000 * percent / 100) * 1000
    return parse_quantity(text)


def derive_kube_reserved(it: InstanceType, nodeclass: EC2NodeClass) -> dict[str, int]:
    """What the instance-type provider reserved for the kubelet on ``it``: its overhead less
    the node class's ``systemReserved`` and the hard eviction thresholds."""
    kubelet = nodeclass.spec.kubelet
    system = kubelet.system_reserved_resources if kubelet else {}
    eviction_hard = dict(kubelet.eviction_hard) if kubelet else {}
    reserved: dict[str, int] = {}
    for resource, overhead in it.overhead.items():
        if resource == PODS:
            continue
        value = overhead - system.get(resource, 0)
        if resource in _SIGNALS:
            value -= _eviction_threshold(resource, it.capacity.get(resource, 0), eviction_hard)
        if value > 0:
            reserved[resource] = value
    return reserved


def _as_text(resources: Mapping[str, int]) -> tuple[tuple[str, str], ...]:
    return tuple((name, format_resource(name, resources[name])) for name in sorted(resources))


def kubelet_values(it: InstanceType, nodeclass: EC2NodeClass) -> KubeletValues:
    """`KubeletValues` of ``it`` under ``nodeclass`` (see the module docstring)."""
    kubelet = nodeclass.spec.kubelet
    if kubelet is not None and kubelet.kube_reserved:
        kube = tuple(sorted(kubelet.kube_reserved.items()))
    else:
        derived = derive_kube_reserved(it, nodeclass)
        kube = _as_text({k: v for k, v in derived.items() if k in (CPU, MEMORY, EPHEMERAL_STORAGE)})
    system = tuple(sorted(kubelet.system_reserved.items())) if kubelet else ()
    return KubeletValues(
        max_pods=it.capacity.get(PODS, 0) // 1000, kube_reserved=kube, system_reserved=system
    )


def kubelet_config(
    nodeclass: EC2NodeClass, values: KubeletValues, dns_ip: str | None
) -> dict[str, Any]:
    """The ``KubeletConfiguration`` map for one launch template."""
    kubelet = nodeclass.spec.kubelet
    config: dict[str, Any] = kubelet.to_dict() if kubelet is not None else {}
    if config.get("maxPods") is None:
        config["maxPods"] = values.max_pods
    if values.kube_reserved:
        config["kubeReserved"] = dict(values.kube_reserved)
    if values.system_reserved:
        config["systemReserved"] = dict(values.system_reserved)
    if not config.get("clusterDNS") and dns_ip:
        config["clusterDNS"] = [dns_ip]
    return config
