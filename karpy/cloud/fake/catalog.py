"""The fake cloud's instance types: Karpenter's KWOK catalog, or a catalog file.

The embedded catalog is the one Karpenter's KWOK provider generates, restricted to Linux:
three families by memory per vCPU (``c`` 2 GiB, ``s`` 4 GiB, ``m`` 8 GiB) x twelve sizes
(1 to 256 vCPUs) x ``amd64``/``arm64``, each offered on-demand and spot in four zones
``test-zone-a`` .. ``test-zone-d``. A type is named ``<family>-<vCPUs>x-<arch>-linux``;
it holds ``min(16 x vCPUs, 1024)`` pods and 20 Gi of ephemeral storage, reserves 100m CPU
and 10 Mi of memory for the kubelet, and costs ``0.025 x vCPUs + 0.001 x memory bytes / 1e9``
dollars an hour on demand, 70 % of that as spot. Its labels ``karpenter.kwok.sh/instance-
family``, ``-size`` (the vCPU count), ``-cpu`` and ``-memory`` are well-known, so pods and
NodePools may select on them.

``FAKE_INSTANCE_TYPES`` replaces it with a file in the format of ``karpy simulate
--instance-types`` (`karpy.scheduling.catalog`), so a simulation and the sandbox can run
on identical facts.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Final

import yaml

from karpy.apis.labels import LABEL_ARCH, LABEL_OS
from karpy.errors import UsageError
from karpy.scheduling.catalog import Catalog, CatalogError, parse_catalog
from karpy.scheduling.instancetypes import Offering, new_instance_type

__all__ = [
    "FAMILY_LABEL",
    "KWOK_WELL_KNOWN_LABELS",
    "ZONES",
    "embedded_catalog",
    "load_catalog",
    "on_demand_price",
]

GROUP: Final = "karpenter.kwok.sh"
FAMILY_LABEL: Final = f"{GROUP}/instance-family"
SIZE_LABEL: Final = f"{GROUP}/instance-size"
CPU_LABEL: Final = f"{GROUP}/instance-cpu"
MEMORY_LABEL: Final = f"{GROUP}/instance-memory"
KWOK_WELL_KNOWN_LABELS: Final = frozenset({FAMILY_LABEL, SIZE_LABEL, CPU_LABEL, MEMORY_LABEL})

ZONES: Final = ("test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d")
CAPACITY_TYPES: Final = ("spot", "on-demand")
SIZES: Final = (1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256)
FAMILIES: Final = (("c", 2), ("s", 4), ("m", 8))  # family, GiB of memory per vCPU
ARCHITECTURES: Final = ("amd64", "arm64")
SPOT_DISCOUNT: Final = 0.7
MAX_PODS: Final = 1024
GIB: Final = 1 << 30
MILLI: Final = 1000
OVERHEAD: Final = {"cpu": 100, "memory": 10 * (1 << 20) * MILLI}  # milli-units


def on_demand_price(vcpus: int, memory_bytes: int) -> float:
    """KWOK's price model, dollars per hour."""
    return 0.025 * vcpus + 0.001 * memory_bytes / 1e9


@functools.cache
def embedded_catalog() -> Catalog:
    """The default catalog (built once; the same object every call)."""
    types = []
    for vcpus in SIZES:
        for family, gib_per_cpu in FAMILIES:
            for arch in ARCHITECTURES:
                memory = vcpus * gib_per_cpu * GIB
                price = on_demand_price(vcpus, memory)
                offerings = [
                    Offering(zone=zone, capacity_type=capacity_type,
                             price=price * SPOT_DISCOUNT if capacity_type == "spot" else price)
                    for zone in ZONES
                    for capacity_type in CAPACITY_TYPES
                ]  # fmt: skip
                types.append(new_instance_type(
                    f"{family}-{vcpus}x-{arch}-linux",
                    capacity={
                        "cpu": vcpus * MILLI,
                        "memory": memory * MILLI,
                        "pods": min(16 * vcpus, MAX_PODS) * MILLI,
                        "ephemeral-storage": 20 * GIB * MILLI,
                    },
                    overhead=OVERHEAD,
                    labels={
                        LABEL_ARCH: arch,
                        LABEL_OS: "linux",
                        FAMILY_LABEL: family,
                        SIZE_LABEL: str(vcpus),
                        CPU_LABEL: str(vcpus),
                        MEMORY_LABEL: f"{vcpus * gib_per_cpu}Gi",
                    },
                    offerings=offerings,
                ))  # fmt: skip
    return Catalog(instance_types=tuple(types), well_known_labels=KWOK_WELL_KNOWN_LABELS)


def load_catalog(path: str) -> Catalog:
    """The catalog in ``path`` (YAML or JSON); `UsageError` naming the file and the field."""
    where = f"FAKE_INSTANCE_TYPES: instance-type catalog {path}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{where}: is a directory, not a file") from None
    except UnicodeDecodeError:
        raise UsageError(f"{where}: not UTF-8 text") from None
    except OSError as exc:
        raise UsageError(f"{where}: {exc.strerror or exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise UsageError(f"{where}: not valid YAML or JSON{line}") from None
    if data is None:
        raise UsageError(f"{where}: empty")
    try:
        catalog = parse_catalog(data)
    except CatalogError as exc:
        raise UsageError(f"{where}: {exc}") from None
    if not catalog.instance_types:
        raise UsageError(f"{where}: lists no instance types")
    return catalog
