"""Labels and label requirements of one EC2 instance type, from its DescribeInstanceTypes
record, spelled and valued exactly as Karpenter's AWS provider does.

Pods and NodePools select instance types by these keys (``karpenter.k8s.aws/instance-
family In [m5, c5]``, ``instance-gpu-count DoesNotExist``...), so a missing attribute
must not simply be a missing label: Karpenter models it as a ``DoesNotExist``
requirement, which satisfies ``NotIn`` and ``DoesNotExist`` selectors and fails ``In`` and
``Exists`` ones. Multi-valued attributes (tenancy: default or dedicated) are ``In``
requirements with several values and so no label. Zone, capacity type, zone ID and
capacity-reservation requirements depend on offerings and are added by the provider.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, Final

from karpy.apis import labels as L
from karpy.cloud.aws.instancetypes.capacity import architectures
from karpy.cloud.aws.instancetypes.network import bandwidth_mbps
from karpy.scheduling.requirements import Requirement

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.cloud.aws.instancetypes.families import AMIFamily

__all__ = ["ATTRIBUTE_LABELS", "architecture", "type_requirements"]

# category, optional "-<n>tb" of u-* types, generation
_SCHEME: Final = re.compile(r"(^[a-z]+)(\-[0-9]+tb)?([0-9]+).*\.")
_ARCHITECTURES: Final = {"x86_64": L.ARCH_AMD64, "arm64": L.ARCH_ARM64}

_TENANCY: Final = Requirement.new(L.LABEL_AWS_INSTANCE_TENANCY, "In", ("default", "dedicated"))
# Keys that are DoesNotExist unless the record supplies a value.
ATTRIBUTE_LABELS: Final = (
    L.LABEL_AWS_INSTANCE_CPU_MANUFACTURER,
    L.LABEL_AWS_INSTANCE_CPU_SUSTAINED_CLOCK,
    L.LABEL_AWS_INSTANCE_EBS_BANDWIDTH,
    L.LABEL_AWS_INSTANCE_NETWORK_BANDWIDTH,
    L.LABEL_AWS_INSTANCE_CATEGORY,
    L.LABEL_AWS_INSTANCE_CAPABILITY_FLEX,
    L.LABEL_AWS_INSTANCE_FAMILY,
    L.LABEL_AWS_INSTANCE_GENERATION,
    L.LABEL_AWS_INSTANCE_LOCAL_NVME,
    L.LABEL_AWS_INSTANCE_SIZE,
    L.LABEL_AWS_INSTANCE_GPU_NAME,
    L.LABEL_AWS_INSTANCE_GPU_MANUFACTURER,
    L.LABEL_AWS_INSTANCE_GPU_COUNT,
    L.LABEL_AWS_INSTANCE_GPU_MEMORY,
    L.LABEL_AWS_INSTANCE_ACCELERATOR_NAME,
    L.LABEL_AWS_INSTANCE_ACCELERATOR_MANUFACTURER,
    L.LABEL_AWS_INSTANCE_ACCELERATOR_COUNT,
)


def _kebab(text: str) -> str:
    return text.replace(" ", "-").lower()


def architecture(record: Mapping[str, Any]) -> str:
    """``amd64`` or ``arm64``: the first architecture of the record Kubernetes names."""
    arches = architectures(record)
    for arch in arches:
        if arch in _ARCHITECTURES:
            return _ARCHITECTURES[arch]
    return str(list(arches))  # unrecognised; matches nothing a pod asks for


def _bool(value: object) -> str:
    return "true" if value else "false"


def attribute_values(record: Mapping[str, Any]) -> dict[str, str]:
    """The single values of the attribute labels the record supports."""
    name = str(record["InstanceType"])
    out: dict[str, str] = {}
    parts = _SCHEME.match(name)
    if parts is not None:
        out[L.LABEL_AWS_INSTANCE_CATEGORY] = parts.group(1)
        out[L.LABEL_AWS_INSTANCE_GENERATION] = parts.group(3)
    family, dot, size = name.partition(".")
    if dot and "." not in size:
        out[L.LABEL_AWS_INSTANCE_FAMILY] = family
        out[L.LABEL_AWS_INSTANCE_SIZE] = size
    storage = record.get("InstanceStorageInfo") or {}
    if storage.get("NvmeSupport") != "unsupported" and storage.get("TotalSizeInGB") is not None:
        out[L.LABEL_AWS_INSTANCE_LOCAL_NVME] = str(storage["TotalSizeInGB"])
    out[L.LABEL_AWS_INSTANCE_CAPABILITY_FLEX] = _bool("-flex" in family)
    bandwidth = bandwidth_mbps(name)
    if bandwidth is not None:
        out[L.LABEL_AWS_INSTANCE_NETWORK_BANDWIDTH] = str(bandwidth)
    gpus: Sequence[Any] = (record.get("GpuInfo") or {}).get("Gpus") or ()
    if len(gpus) == 1:
        gpu = gpus[0]
        out[L.LABEL_AWS_INSTANCE_GPU_NAME] = _kebab(str(gpu.get("Name", "")))
        out[L.LABEL_AWS_INSTANCE_GPU_MANUFACTURER] = _kebab(str(gpu.get("Manufacturer", "")))
        out[L.LABEL_AWS_INSTANCE_GPU_COUNT] = str(gpu.get("Count", 0))
        out[L.LABEL_AWS_INSTANCE_GPU_MEMORY] = str(
            (gpu.get("MemoryInfo") or {}).get("SizeInMiB", 0)
        )
    neuron = record.get("NeuronInfo")
    accelerators: Sequence[Any] = (record.get("InferenceAcceleratorInfo") or {}).get(
        "Accelerators"
    ) or ()
    if len(accelerators) == 1 and neuron is None:
        acc = accelerators[0]
        out[L.LABEL_AWS_INSTANCE_ACCELERATOR_NAME] = _kebab(str(acc.get("Name", "")))
        out[L.LABEL_AWS_INSTANCE_ACCELERATOR_MANUFACTURER] = _kebab(
            str(acc.get("Manufacturer", ""))
        )
        out[L.LABEL_AWS_INSTANCE_ACCELERATOR_COUNT] = str(acc.get("Count", 0))
    devices: Sequence[Any] = (neuron or {}).get("NeuronDevices") or ()
    if len(devices) == 1:
        device = devices[0]
        out[L.LABEL_AWS_INSTANCE_ACCELERATOR_NAME] = _kebab(str(device.get("Name", "")))
        out[L.LABEL_AWS_INSTANCE_ACCELERATOR_MANUFACTURER] = "aws"
        out[L.LABEL_AWS_INSTANCE_ACCELERATOR_COUNT] = str(device.get("Count", 0))
    processor = record.get("ProcessorInfo")
    if processor is not None:
        out[L.LABEL_AWS_INSTANCE_CPU_MANUFACTURER] = _kebab(str(processor.get("Manufacturer", "")))
        ghz = float(processor.get("SustainedClockSpeedInGhz") or 0.0)
        out[L.LABEL_AWS_INSTANCE_CPU_SUSTAINED_CLOCK] = str(_round_half_away(ghz * 1000))
    ebs = record.get("EbsInfo") or {}
    optimized = ebs.get("EbsOptimizedInfo")
    if optimized is not None and ebs.get("EbsOptimizedSupport") == "default":
        out[L.LABEL_AWS_INSTANCE_EBS_BANDWIDTH] = str(optimized.get("MaximumBandwidthInMbps", 0))
    return out


@functools.lru_cache(maxsize=8192)
def _one(key: str, value: str) -> Requirement:
    # ~1,400 types share most label values: build each requirement once per process.
    return Requirement.new(key, "In", (value,))


@functools.lru_cache(maxsize=256)
def _absent(key: str) -> Requirement:
    return Requirement.does_not_exist(key)


def _round_half_away(value: float) -> int:
    """Go's ``math.Round``: halves away from zero (Python's ``round`` goes to even)."""
    return int(value + 0.5) if value >= 0 else -int(-value + 0.5)


def type_requirements(
    record: Mapping[str, Any], *, region: str, family: AMIFamily
) -> tuple[Requirement, ...]:
    """Every requirement of the type that does not depend on offerings."""
    arch = architecture(record)
    network = record.get("NetworkInfo") or {}
    if not family.is_windows:
        os_requirement = _one(L.LABEL_OS, "linux")
    elif arch == L.ARCH_AMD64:
        os_requirement = _one(L.LABEL_OS, "windows")
    else:
        os_requirement = Requirement.new(L.LABEL_OS, "In", ())  # no OS: matches nothing
    fixed = [
        _one(L.LABEL_INSTANCE_TYPE, str(record["InstanceType"])),
        _one(L.LABEL_ARCH, arch),
        os_requirement,
        _one(L.LABEL_REGION, region),
        _one(L.LABEL_WINDOWS_BUILD, family.windows_build)
        if family.windows_build
        else _absent(L.LABEL_WINDOWS_BUILD),
        _one(L.LABEL_AWS_INSTANCE_CPU, str(record["VCpuInfo"]["DefaultVCpus"])),
        _one(L.LABEL_AWS_INSTANCE_MEMORY, str(record["MemoryInfo"]["SizeInMiB"])),
        _one(L.LABEL_AWS_INSTANCE_HYPERVISOR, str(record.get("Hypervisor", ""))),
        _one(L.LABEL_AWS_INSTANCE_ENCRYPTION_IN_TRANSIT,
             _bool(network.get("EncryptionInTransitSupported"))),
        _one(L.LABEL_AWS_NITRO_SANDBOX, _bool(record.get("NitroEnclavesSupport") == "supported")),
        _TENANCY,
    ]  # fmt: skip
    values = attribute_values(record)
    fixed += [_one(key, values[key]) if key in values else _absent(key)
              for key in ATTRIBUTE_LABELS]  # fmt: skip
    return tuple(fixed)
