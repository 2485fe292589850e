"""Capacity, overhead and allocatable of one EC2 instance type, as Karpenter computes them.

A pod fits a node when its requests fit the node's *allocatable*, which the kubelet
derives from the machine: ``capacity - kube-reserved - system-reserved - eviction
threshold``. karpy must predict that figure before the instance exists, from one
DescribeInstanceTypes record and the EC2NodeClass, and predict it exactly as Karpenter
does, because the bootstrap passes the same max-pods, reservations and thresholds to the
kubelet. Every step is a small pure function here, so each can be tested against
Karpenter's numbers and `explain` can show them one by one:

* **cpu** is the default vCPU count;
* **memory** is the advertised MiB (less 64 MiB on Graviton, reserved for CMA) less a
  flat VM overhead (``VM_MEMORY_OVERHEAD_PERCENT``, rounded up to a MiB), unless a node of
  this type and AMI has registered before: then its real capacity is used instead;
* **pods** is kubelet ``maxPods``, else the ENI-limited figure (``ENIs x (IPs per ENI -
  1) + 2``, after ``RESERVED_ENIS`` and EFA-only interfaces), else 110, capped by
  ``podsPerCore x vCPUs``;
* **ephemeral-storage** is the RAID0 instance store, the root or ephemeral block device,
  or the family default;
* **kube-reserved** is 11 MiB per pod + 255 MiB of memory, 1Gi of storage and a tiered
  CPU share; the **eviction threshold** is 100Mi of memory and 10 % of storage; user
  settings override each key.

Quantities are integer milli-units (`karpy.base.quantity`) throughout; byte counts are
multiplied by 1000 only at the edge (`compute_shape`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.base.quantity import QuantityError, parse_quantity
from karpy.cloud.aws.instancetypes.families import DEFAULT_VOLUME_BYTES, AMIFamily
from karpy.cloud.aws.instancetypes.network import vpc_limits
from karpy.scheduling.instancetypes import compute_allocatable

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.ec2nodeclass import BlockDeviceMapping, NetworkInterface
    from karpy.scheduling.resources import ResourceList

__all__ = [
    "Overhead",
    "Shape",
    "ShapeOptions",
    "compute_shape",
    "cpu_millis",
    "eni_limited_pods",
    "ephemeral_storage_bytes",
    "eviction_threshold",
    "extended_resources",
    "kube_reserved",
    "kube_reserved_cpu_millis",
    "max_pods",
    "memory_bytes",
    "raw_memory_mib",
    "vm_overhead_mib",
]

MI: Final = 1 << 20
GI: Final = 1 << 30
MILLI: Final = 1000
DEFAULT_PODS: Final = 110
GRAVITON_CMA_MIB: Final = 64
EVICTION_MEMORY_BYTES: Final = 100 * MI
KUBE_RESERVED_STORAGE_BYTES: Final = 1 * GI
MEMORY_AVAILABLE: Final = "memory.available"
NODEFS_AVAILABLE: Final = "nodefs.available"
EFA_ONLY: Final = "efa-only"
RAID0: Final = "RAID0"

# kube-reserved CPU: a share of each band of the node's millicores (Bottlerocket's table).
CPU_TIERS: Final = ((0, 1000, 0.06), (1000, 2000, 0.01), (2000, 4000, 0.005),
                    (4000, 1 << 31, 0.0025))  # fmt: skip

RESOURCE_POD_ENI: Final = "vpc.amazonaws.com/pod-eni"
RESOURCE_EFA: Final = "vpc.amazonaws.com/efa"
RESOURCE_PRIVATE_IPV4: Final = "vpc.amazonaws.com/PrivateIPv4Address"
RESOURCE_NVIDIA_GPU: Final = "nvidia.com/gpu"
RESOURCE_AMD_GPU: Final = "amd.com/gpu"
RESOURCE_HABANA_GAUDI: Final = "habana.ai/gaudi"
RESOURCE_NEURON: Final = "aws.amazon.com/neuron"
RESOURCE_NEURONCORE: Final = "aws.amazon.com/neuroncore"
GPU_RESOURCES: Final = {"NVIDIA": RESOURCE_NVIDIA_GPU, "AMD": RESOURCE_AMD_GPU,
                        "Habana": RESOURCE_HABANA_GAUDI}  # fmt: skip


@attrs.frozen(slots=True, kw_only=True)
class ShapeOptions:
    """Everything besides the DescribeInstanceTypes record that changes a type's shape:
    the resolved AMI family, the EC2NodeClass's kubelet, storage and network settings, and
    the two operator settings. Reserved maps are milli-units; eviction values stay text
    (a percentage is not a quantity)."""

    family: AMIFamily
    max_pods: int | None = None
    pods_per_core: int | None = None
    kube_reserved: Mapping[str, int] = attrs.field(factory=dict)
    system_reserved: Mapping[str, int] = attrs.field(factory=dict)
    eviction_hard: Mapping[str, str] = attrs.field(factory=dict)
    block_device_mappings: tuple[BlockDeviceMapping, ...] = ()
    instance_store_policy: str | None = None
    # None when the EC2NodeClass sets no networkInterfaces (Karpenter's nil).
    network_interfaces: tuple[NetworkInterface, ...] | None = None
    vm_memory_overhead_percent: float = 0.075
    reserved_enis: int = 0


@attrs.frozen(slots=True, kw_only=True)
class Overhead:
    """Why allocatable is less than the machine: the VM memory overhead (already out of
    ``capacity.memory``) and the three kubelet reservations (subtracted from capacity)."""

    vm_memory: int  # milli-bytes between the advertised memory and capacity.memory
    memory_learned: bool  # capacity.memory is a registered node's, not the estimate
    kube_reserved: Mapping[str, int]
    system_reserved: Mapping[str, int]
    eviction_threshold: Mapping[str, int]

    def total(self) -> dict[str, int]:
        """The three reservations summed per resource (Karpenter's ``Overhead.Total``)."""
        out: dict[str, int] = {}
        for part in (self.kube_reserved, self.system_reserved, self.eviction_threshold):
            for name, value in part.items():
                out[name] = out.get(name, 0) + value
        return out


@attrs.frozen(slots=True, kw_only=True)
class Shape:
    """One instance type under one `ShapeOptions`: capacity, overhead, allocatable."""

    name: str
    capacity: ResourceList
    overhead: Overhead
    allocatable: ResourceList


# --- the machine --------------------------------------------------------------------------


def architectures(record: Mapping[str, Any]) -> Sequence[str]:
    return tuple((record.get("ProcessorInfo") or {}).get("SupportedArchitectures") or ())


def cpu_millis(record: Mapping[str, Any]) -> int:
    return int(record["VCpuInfo"]["DefaultVCpus"]) * MILLI


def raw_memory_mib(record: Mapping[str, Any]) -> int:
    """Advertised memory, less the 64 MiB Graviton kernels reserve for CMA."""
    mib = int(record["MemoryInfo"]["SizeInMiB"])
    arches = architectures(record)
    if arches and arches[0] == "arm64":
        mib -= GRAVITON_CMA_MIB
    return mib


def vm_overhead_mib(mib: int, percent: float) -> int:
    """The hypervisor's share, rounded up to a whole MiB (computed on bytes, as Go does)."""
    return math.ceil(float(mib * MI) * percent / 1024 / 1024)


def memory_bytes(record: Mapping[str, Any], percent: float) -> int:
    """Estimated ``capacity.memory`` in bytes."""
    mib = raw_memory_mib(record)
    return (mib - vm_overhead_mib(mib, percent)) * MI


def _default_card_interfaces(record: Mapping[str, Any]) -> int:
    network = record.get("NetworkInfo") or {}
    cards = network.get("NetworkCards") or ()
    index = int(network.get("DefaultNetworkCardIndex") or 0)
    if index < len(cards):
        return int(cards[index].get("MaximumNetworkInterfaces") or 0)
    return int(network.get("MaximumNetworkInterfaces") or 0)


def eni_limited_pods(
    record: Mapping[str, Any],
    reserved_enis: int,
    network_interfaces: Sequence[NetworkInterface] | None,
) -> int:
    """The VPC CNI's pod limit: usable ENIs of the default card x (IPv4 per ENI - 1) + 2;
    EFA-only interfaces on card 0 and ``RESERVED_ENIS`` take ENIs away."""
    efa_only = sum(1 for nic in network_interfaces or ()
                   if nic.network_card_index == 0 and nic.interface_type == EFA_ONLY)  # fmt: skip
    usable = max(_default_card_interfaces(record) - reserved_enis - efa_only, 0)
    if usable == 0:
        return 0
    per_interface = int((record.get("NetworkInfo") or {}).get("Ipv4AddressesPerInterface") or 0)
    return usable * (per_interface - 1) + 2


def max_pods(record: Mapping[str, Any], options: ShapeOptions) -> int:
    if options.max_pods is not None:
        count = options.max_pods
    elif options.family.supports_eni_limited_pod_density:
        count = eni_limited_pods(record, options.reserved_enis, options.network_interfaces)
    else:
        count = DEFAULT_PODS
    if options.pods_per_core and options.pods_per_core > 0 and options.family.pods_per_core_enabled:
        count = min(options.pods_per_core * cpu_millis(record) // MILLI, count)
    return count


def ephemeral_storage_bytes(
    record: Mapping[str, Any],
    family: AMIFamily,
    block_device_mappings: Sequence[BlockDeviceMapping] = (),
    instance_store_policy: str | None = None,
) -> int:
    """Where pods' ephemeral storage lives, and so how large it is (see module doc)."""
    if instance_store_policy == RAID0:
        total = (record.get("InstanceStorageInfo") or {}).get("TotalSizeInGB")
        if total is not None:
            return int(total) * 10**9
    if block_device_mappings:
        root = next((m for m in block_device_mappings if m.root_volume), None)
        size = _volume_bytes(root)
        if size is not None:
            return size
        if family.ephemeral_device is None:  # Custom: the last mapping is the best guess
            size = _volume_bytes(block_device_mappings[-1])
            return size if size is not None else DEFAULT_VOLUME_BYTES
        device = next((m for m in block_device_mappings
                       if m.device_name == family.ephemeral_device), None)  # fmt: skip
        size = _volume_bytes(device)
        if size is not None:
            return size
    return family.default_ephemeral_bytes


def _volume_bytes(mapping: BlockDeviceMapping | None) -> int | None:
    if mapping is None or mapping.ebs is None:
        return None
    return mapping.ebs.volume_size_bytes


def extended_resources(
    record: Mapping[str, Any],
    network_interfaces: Sequence[NetworkInterface] | None,
    *,
    windows: bool = False,
) -> dict[str, int]:
    """GPUs by maker, Neuron devices and cores, EFA interfaces, pod ENIs (and, on
    Windows, secondary IPv4 addresses), in whole units; zero counts are left out."""
    name = str(record.get("InstanceType", ""))
    out: dict[str, int] = {}
    for gpu in (record.get("GpuInfo") or {}).get("Gpus") or ():
        resource = GPU_RESOURCES.get(str(gpu.get("Manufacturer", "")))
        if resource is not None:
            out[resource] = out.get(resource, 0) + int(gpu.get("Count") or 0)
    devices = (record.get("NeuronInfo") or {}).get("NeuronDevices") or ()
    if devices:
        out[RESOURCE_NEURON] = sum(int(d.get("Count") or 0) for d in devices)
        first = devices[0]
        cores = int((first.get("CoreInfo") or {}).get("Count") or 0)
        out[RESOURCE_NEURONCORE] = int(first.get("Count") or 0) * cores
    if network_interfaces is not None:
        out[RESOURCE_EFA] = sum(1 for n in network_interfaces if n.interface_type == EFA_ONLY)
    else:
        efa = ((record.get("NetworkInfo") or {}).get("EfaInfo") or {}).get("MaximumEfaInterfaces")
        out[RESOURCE_EFA] = int(efa or 0)
    limits = vpc_limits(name)
    if limits is not None and limits.trunking_compatible:
        out[RESOURCE_POD_ENI] = limits.branch_interfaces
    if windows:
        out[RESOURCE_PRIVATE_IPV4] = limits.ipv4_per_interface - 1 if limits is not None else 0
    return {k: v for k, v in out.items() if v > 0}


# --- the reservations ---------------------------------------------------------------------


def kube_reserved_cpu_millis(cpu: int) -> int:
    """6 % of the first core, 1 % of the second, 0.5 % of the next two, 0.25 % above."""
    total = 0
    for start, end, share in CPU_TIERS:
        if cpu >= start:
            band = (end if cpu >= end else cpu) - start
            total += int(band * share)
    return total


def kube_reserved(cpu: int, pods: int, overrides: Mapping[str, int]) -> dict[str, int]:
    """Karpenter's kube-reserved defaults (milli-units), then the user's keys on top."""
    out = {
        "cpu": kube_reserved_cpu_millis(cpu),
        "memory": (11 * pods + 255) * MI * MILLI,
        "ephemeral-storage": KUBE_RESERVED_STORAGE_BYTES * MILLI,
    }
    out.update(overrides)
    return out


def _eviction_signal(capacity_bytes: int, value: str) -> int:
    """An evictionHard value in milli-units: a percentage of capacity (rounded up; 100 %
    means disabled, i.e. 0) or a quantity."""
    if value.endswith("%"):
        percent = float(value.rstrip("%"))
        if percent == 100:
            percent = 0
        return math.ceil(float(capacity_bytes) / 100 * percent) * MILLI
    return parse_quantity(value)


def eviction_threshold(
    memory: int, storage: int, eviction_hard: Mapping[str, str]
) -> dict[str, int]:
    """Hard eviction thresholds (milli-units) for a node of ``memory`` and ``storage``
    bytes: 100Mi and 10 % by default, ``evictionHard`` values instead when set.
    ``evictionSoft`` never lowers allocatable."""
    out = {
        "memory": EVICTION_MEMORY_BYTES * MILLI,
        "ephemeral-storage": math.ceil(float(storage) / 100 * 10) * MILLI,
    }
    if MEMORY_AVAILABLE in eviction_hard:
        out["memory"] = _eviction_signal(memory, eviction_hard[MEMORY_AVAILABLE])
    if NODEFS_AVAILABLE in eviction_hard:
        out["ephemeral-storage"] = _eviction_signal(storage, eviction_hard[NODEFS_AVAILABLE])
    return out


def quantities(values: Mapping[str, str]) -> dict[str, int]:
    """Reserved-resource settings as milli-units; values that are not quantities (CEL
    expressions, honoured only behind a gate karpy does not implement) are dropped, as
    Karpenter drops them with the gate off."""
    out: dict[str, int] = {}
    for name, value in values.items():
        try:
            out[name] = parse_quantity(value)
        except QuantityError:
            continue
    return out


# --- all together -------------------------------------------------------------------------


def compute_shape(
    record: Mapping[str, Any], options: ShapeOptions, *, learned_memory: int | None = None
) -> Shape:
    """The shape of ``record`` under ``options``; ``learned_memory`` (bytes) is a
    registered node's real memory capacity, which replaces the estimate."""
    cpu = cpu_millis(record)
    family = options.family
    estimated_memory = memory_bytes(record, options.vm_memory_overhead_percent)
    memory = learned_memory if learned_memory is not None else estimated_memory
    pods = max_pods(record, options)
    storage = ephemeral_storage_bytes(record, family, options.block_device_mappings,
                                      options.instance_store_policy)  # fmt: skip
    capacity: dict[str, int] = {
        "cpu": cpu,
        "memory": memory * MILLI,
        "pods": pods * MILLI,
        "ephemeral-storage": storage * MILLI,
    }
    windows = family.is_windows and "x86_64" in architectures(record)
    for name, count in extended_resources(record, options.network_interfaces,
                                          windows=windows).items():  # fmt: skip
        capacity[name] = count * MILLI
    reserved_pods = (
        eni_limited_pods(record, 0, options.network_interfaces)
        if family.uses_eni_limited_memory_overhead
        else pods
    )
    overhead = Overhead(
        vm_memory=(int(record["MemoryInfo"]["SizeInMiB"]) * MI - memory) * MILLI,
        memory_learned=learned_memory is not None,
        kube_reserved=kube_reserved(cpu, reserved_pods, options.kube_reserved),
        system_reserved=dict(options.system_reserved),
        eviction_threshold=eviction_threshold(estimated_memory, storage, options.eviction_hard),
    )
    return Shape(
        name=str(record["InstanceType"]),
        capacity=capacity,
        overhead=overhead,
        allocatable=compute_allocatable(capacity, overhead.total()),
    )
