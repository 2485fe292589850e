"""What an AMI family changes about an instance type's shape.

The resolved AMI family (AL2, AL2023, Bottlerocket, Windows20xx, Custom) decides four
things the allocatable arithmetic needs, mirroring Karpenter's per-family feature flags:
which block device holds pods' ephemeral storage and its default size; whether max pods
defaults to the ENI-limited figure (all but Windows) and whether kube-reserved memory is
computed from that figure rather than from the effective max pods (AL2, AL2023, Custom);
whether ``podsPerCore`` is honoured (not by Bottlerocket); and the OS the nodes run
(Windows families run amd64 only and carry a build label).
"""

from __future__ import annotations

from typing import Final

import attrs

__all__ = ["DEFAULT_VOLUME_BYTES", "AMIFamily", "family"]

GI: Final = 1 << 30
DEFAULT_VOLUME_BYTES: Final = 20 * GI  # Karpenter's default EBS volume: 20Gi gp3, encrypted


@attrs.frozen(slots=True)
class AMIFamily:
    name: str
    # The device pods' ephemeral storage lives on; None when unknown (Custom).
    ephemeral_device: str | None
    # Size of that device when no blockDeviceMapping overrides it.
    default_ephemeral_bytes: int
    uses_eni_limited_memory_overhead: bool = True
    pods_per_core_enabled: bool = True
    supports_eni_limited_pod_density: bool = True
    os: str = "linux"
    windows_build: str | None = None

    @property
    def is_windows(self) -> bool:
        return self.os == "windows"


def _windows(name: str, build: str) -> AMIFamily:
    return AMIFamily(name, "/dev/sda1", 50 * GI, uses_eni_limited_memory_overhead=False,
                     supports_eni_limited_pod_density=False, os="windows",
                     windows_build=build)  # fmt: skip


FAMILIES: Final = {
    "AL2": AMIFamily("AL2", "/dev/xvda", DEFAULT_VOLUME_BYTES),
    "AL2023": AMIFamily("AL2023", "/dev/xvda", DEFAULT_VOLUME_BYTES),
    "Bottlerocket": AMIFamily(
        "Bottlerocket",
        "/dev/xvdb",
        DEFAULT_VOLUME_BYTES,
        uses_eni_limited_memory_overhead=False,
        pods_per_core_enabled=False,
    ),
    "Custom": AMIFamily("Custom", None, DEFAULT_VOLUME_BYTES),
    "Windows2019": _windows("Windows2019", "10.0.17763"),
    "Windows2022": _windows("Windows2022", "10.0.20348"),
    "Windows2025": _windows("Windows2025", "10.0.26100"),
}


def family(name: str) -> AMIFamily:
    """The family named ``name``; anything unknown is AL2, as in Karpenter."""
    return FAMILIES.get(name, FAMILIES["AL2"])
