"""The capacity and allocatable a real kubelet would report for an EC2 instance.

Karpenter cannot know a node's memory before it boots: it guesses ``MiB x (1 - 7.5%)``
(``VM_MEMORY_OVERHEAD_PERCENT``) and karpy, like Karpenter, learns the real figure from
registered Nodes. For that path to be exercised, the sandbox's Nodes must *differ* from
the guess the way real ones do: the hypervisor and firmware take a fixed part and a share
that shrinks as a fraction on bigger instances. The stand-in takes 2.5% plus 128 MiB (an
m5.large's 8 GiB reports 7,859 MiB, 4.1% less; an m5.24xlarge's 384 GiB reports 2.5%
less), always less than Karpenter's 7.5%.

Capacity: ``cpu`` = vCPUs, ``memory`` = MiB minus that overhead (in Ki, as kubelets
report it), ``pods`` = the user data's max pods (kubelet's default 110 without one),
``ephemeral-storage`` = the root (or, for Bottlerocket, data) volume size. Allocatable
= capacity - kubeReserved - systemReserved - evictionHard (``memory.available`` from
memory, ``nodefs.available`` from ephemeral storage, either a quantity or a percentage
of capacity), never below zero, as the kubelet computes it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import attrs

from karpy.base.quantity import QuantityError, format_resource, parse_quantity

if TYPE_CHECKING:
    from karpy.sandbox.aws.userdata import NodeBootstrap

__all__ = ["NodeResources", "memory_overhead_mib", "node_resources"]

OVERHEAD_FIXED_MIB: Final = 128
OVERHEAD_FRACTION: Final = 0.025
DEFAULT_MAX_PODS: Final = 110
MIB: Final = 1024 * 1024 * 1000  # milli-units of one MiB
GIB: Final = 1024 * MIB
EVICTION_SIGNALS: Final = {"memory": "memory.available", "ephemeral-storage": "nodefs.available"}


@attrs.frozen(slots=True)
class NodeResources:
    """``status.capacity`` and ``status.allocatable`` of a Node, as quantity strings."""

    capacity: dict[str, str]
    allocatable: dict[str, str]
    problems: tuple[str, ...] = ()


def memory_overhead_mib(memory_mib: int) -> int:
    """What the VM keeps of ``memory_mib`` (module docstring)."""
    return OVERHEAD_FIXED_MIB + math.ceil(memory_mib * OVERHEAD_FRACTION)


def _reserved(values: dict[str, str], resource: str, problems: list[str], what: str) -> int:
    raw = values.get(resource)
    if raw is None:
        return 0
    try:
        return parse_quantity(raw)
    except QuantityError:
        problems.append(f"{what} {resource}={raw!r}: not a quantity")
        return 0


def _eviction(values: dict[str, str], resource: str, capacity: int, problems: list[str]) -> int:
    signal = EVICTION_SIGNALS.get(resource)
    raw = values.get(signal) if signal else None
    if raw is None:
        return 0
    text = raw.strip().rstrip("%") if raw.strip().endswith("%") else None
    if text is not None:
        try:
            return math.ceil(capacity * float(text) / 100)
        except ValueError:
            problems.append(f"evictionHard {signal}={raw!r}: not a percentage")
            return 0
    return _reserved(values, signal or "", problems, "evictionHard")


def node_resources(
    vcpus: int, memory_mib: int, volume_gib: int, bootstrap: NodeBootstrap
) -> NodeResources:
    """Capacity and allocatable of an instance with this shape booted with ``bootstrap``."""
    problems: list[str] = []
    capacity = {
        "cpu": vcpus * 1000,
        "memory": (memory_mib - memory_overhead_mib(memory_mib)) * MIB,
        "pods": (bootstrap.max_pods or DEFAULT_MAX_PODS) * 1000,
        "ephemeral-storage": volume_gib * GIB,
    }
    allocatable = {}
    for resource, total in capacity.items():
        left = total
        left -= _reserved(bootstrap.kube_reserved, resource, problems, "kubeReserved")
        left -= _reserved(bootstrap.system_reserved, resource, problems, "systemReserved")
        left -= _eviction(bootstrap.eviction_hard, resource, total, problems)
        allocatable[resource] = max(left, 0)
    return NodeResources(
        capacity={k: _format(k, v) for k, v in capacity.items()},
        allocatable={k: _format(k, v) for k, v in allocatable.items()},
        problems=tuple(problems),
    )


def _format(resource: str, milli: int) -> str:
    if resource in ("memory", "ephemeral-storage"):
        units = milli // 1000  # whole bytes, rounded down
        return f"{units // 1024}Ki" if units % 1024 == 0 else str(units)
    return format_resource(resource, milli)
