"""The instance-type catalog Karpenter's scheduling suites run against, in karpy's format.

Karpenter's scheduling tests use a fake cloud provider whose instance types follow a few
fixed rules; these builders reproduce them as ``karpy simulate`` catalog entries so the
parity tests see the same choices Karpenter's tests saw:

- capacity defaults to 4 cpu, 4Gi memory and 5 pods for any resource not given;
- every type reserves 100m cpu and 10Mi memory (its overhead);
- the default offerings are spot in test-zone-1/2 and on-demand in test-zone-1/2/3, all
  at one price: 0.1 per cpu, 0.1 per 10^9 bytes of memory, plus 1.0 if the type has a
  ``fake.com/vendor-a`` or ``fake.com/vendor-b`` GPU;
- the provider adds three well-known labels: ``integer`` (the cpu count, rounded up),
  ``size`` (``large`` when cpu > 4 and memory > 8Gi, else ``small``) and ``special``
  (``optional`` on large types; absent on small ones, which a ``DoesNotExist``
  requirement states explicitly);
- architecture defaults to amd64 and operating systems to darwin, linux and windows.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any, Final

from karpy.base.quantity import format_resource, parse_quantity

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

ZONES: Final = ("test-zone-1", "test-zone-2", "test-zone-3")
SIZE: Final = "size"
SPECIAL: Final = "special"
INTEGER: Final = "integer"
GPU_VENDOR_A: Final = "fake.com/vendor-a"
GPU_VENDOR_B: Final = "fake.com/vendor-b"
WELL_KNOWN_LABELS: Final = (SIZE, SPECIAL, INTEGER)
OVERHEAD: Final = {"cpu": "100m", "memory": "10Mi"}
DEFAULT_OSES: Final = ("darwin", "linux", "windows")

Entry = dict[str, Any]

_DEFAULT_CAPACITY: Final = {"cpu": "4", "memory": "4Gi", "pods": "5"}
_DEFAULT_OFFERINGS: Final = (
    ("test-zone-1", "spot"),
    ("test-zone-2", "spot"),
    ("test-zone-1", "on-demand"),
    ("test-zone-2", "on-demand"),
    ("test-zone-3", "on-demand"),
)
_GIB: Final = 2**30


def price_from_resources(resources: Mapping[str, str]) -> float:
    """The fake provider's price for a type with these resources."""
    price = 0.0
    for name, value in resources.items():
        if name == "cpu":
            price += 0.1 * parse_quantity(value) / 1000
        elif name == "memory":
            price += 0.1 * parse_quantity(value) / 1000 / 1e9
        elif name in (GPU_VENDOR_A, GPU_VENDOR_B):
            price += 1.0
    return price


def offering(zone: str, capacity_type: str, price: float, *, available: bool = True) -> Entry:
    """One offering of a catalog entry."""
    return {"zone": zone, "capacityType": capacity_type, "price": price, "available": available}


def instance_type(
    name: str,
    *,
    resources: Mapping[str, str] | None = None,
    offerings: Sequence[Entry] | None = None,
    arch: str = "amd64",
    oses: Iterable[str] = DEFAULT_OSES,
    volume_attachment_limits: Mapping[str, int] | None = None,
) -> Entry:
    """A catalog entry built as the fake provider builds an instance type
    (``volume_attachment_limits`` is its ``WithVolumeAttachmentLimits``)."""
    capacity = dict(_DEFAULT_CAPACITY)
    capacity.update({k: v for k, v in (resources or {}).items() if parse_quantity(v) != 0})
    price = price_from_resources(capacity)
    if offerings is None:
        offerings = [offering(zone, ct, price) for zone, ct in _DEFAULT_OFFERINGS]
    cpu_milli = parse_quantity(capacity["cpu"])
    large = cpu_milli > 4000 and parse_quantity(capacity["memory"]) > 8 * _GIB * 1000
    labels = {
        "kubernetes.io/arch": arch,
        INTEGER: str(-(-cpu_milli // 1000)),
        SIZE: "large" if large else "small",
    }
    requirements: list[Entry] = [
        {"key": "kubernetes.io/os", "operator": "In", "values": sorted(oses)},
    ]
    if large:
        labels[SPECIAL] = "optional"
    else:
        requirements.append({"key": SPECIAL, "operator": "DoesNotExist"})
    entry: Entry = {
        "name": name,
        "capacity": capacity,
        "overhead": dict(OVERHEAD),
        "labels": labels,
        "requirements": requirements,
        "offerings": [dict(o) for o in offerings],
    }
    if volume_attachment_limits is not None:
        entry["volumeAttachmentLimits"] = dict(volume_attachment_limits)
    return entry


def catalog(instance_types: Iterable[Entry]) -> dict[str, Any]:
    """A catalog document declaring the provider's well-known labels."""
    return {
        "wellKnownLabels": list(WELL_KNOWN_LABELS),
        "instanceTypes": [dict(it) for it in instance_types],
    }


def default_instance_types() -> list[Entry]:
    """The fake provider's six default types, in its order.

    ``default-instance-type`` (4 cpu, 4Gi), ``small-instance-type`` (2 cpu, 2Gi), two GPU
    types with 2 GPUs of vendor A or B, ``arm-instance-type`` (arm64, 16 cpu, 128Gi, also
    ``ios``) and ``single-pod-instance-type`` (1 pod).
    """
    return [
        instance_type("default-instance-type"),
        instance_type("small-instance-type", resources={"cpu": "2", "memory": "2Gi"}),
        instance_type("gpu-vendor-instance-type", resources={GPU_VENDOR_A: "2"}),
        instance_type("gpu-vendor-b-instance-type", resources={GPU_VENDOR_B: "2"}),
        instance_type(
            "arm-instance-type",
            resources={"cpu": "16", "memory": "128Gi"},
            arch="arm64",
            oses=("ios", "linux", "windows", "darwin"),
        ),
        instance_type("single-pod-instance-type", resources={"pods": "1"}),
    ]


def instance_types(total: int) -> list[Entry]:
    """``fake-it-0`` .. ``fake-it-{total-1}``: type i has i+1 cpu, 2(i+1)Gi and 10(i+1) pods."""
    return [
        instance_type(
            f"fake-it-{i}",
            resources={"cpu": str(i + 1), "memory": f"{(i + 1) * 2}Gi", "pods": str((i + 1) * 10)},
        )
        for i in range(total)
    ]


def instance_types_assorted() -> list[Entry]:
    """One type per (cpu, memory, zone, capacity type, os, arch), each with one offering."""
    combinations = itertools.product(
        (1, 2, 4, 8, 16, 32, 64),
        (1, 2, 4, 8, 16, 32, 64, 128),
        ZONES,
        ("spot", "on-demand"),
        ("linux", "windows"),
        ("amd64", "arm64"),
    )
    result = []
    for cpu, mem, zone, capacity_type, os, arch in combinations:
        resources = {"cpu": str(cpu), "memory": f"{mem}Gi"}
        price = price_from_resources(resources)
        result.append(
            instance_type(
                f"{cpu}-cpu-{mem}-mem-{arch}-{os}-{zone}-{capacity_type}",
                resources=resources,
                offerings=[offering(zone, capacity_type, price)],
                arch=arch,
                oses=(os,),
            )
        )
    return result


def allocatable(entry: Mapping[str, Any]) -> dict[str, str]:
    """An entry's capacity minus its overhead, as quantity strings."""
    overhead = entry.get("overhead", {})
    return {
        name: format_resource(name, parse_quantity(value) - parse_quantity(overhead.get(name, "0")))
        for name, value in entry["capacity"].items()
    }


def find(entries: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any]:
    """The entry called ``name``."""
    for entry in entries:
        if entry["name"] == name:
            return entry
    raise KeyError(name)
