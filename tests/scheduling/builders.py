"""Small builders for scheduler unit tests: instance types, pools, contexts, pods."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from karpy.apis.nodepool import NodePool
from karpy.base.quantity import parse_quantity
from karpy.scheduling.context import SchedulingContext, build_context
from karpy.scheduling.instancetypes import InstanceType, Offering, new_instance_type
from karpy.scheduling.pods import Pod, pod_from_dict
from karpy.scheduling.requirements import Requirement
from tests import factories as f

ZONES = ("zone-a", "zone-b", "zone-c")


def offerings(
    price: float,
    zones: Iterable[str] = ZONES,
    capacity_types: Iterable[str] = ("on-demand",),
    available: bool = True,
) -> list[Offering]:
    return [
        Offering(zone=z, capacity_type=ct, price=price, available=available)
        for ct in capacity_types
        for z in zones
    ]


def instance_type(
    name: str,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    *,
    price: float | None = None,
    offers: Sequence[Offering] | None = None,
    labels: Mapping[str, str] | None = None,
    requirements: Iterable[Requirement] = (),
    overhead: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> InstanceType:
    capacity = {"cpu": cpu, "memory": memory, "pods": pods, **(extra or {})}
    if price is None:
        price = parse_quantity(cpu) / 1000 * 0.05 + parse_quantity(memory) / 1000 / 2**30 * 0.005
    return new_instance_type(
        name,
        capacity={k: parse_quantity(v) for k, v in capacity.items()},
        overhead={k: parse_quantity(v) for k, v in (overhead or {}).items()},
        labels={"kubernetes.io/arch": "amd64", **(labels or {})},
        requirements=requirements,
        offerings=offers if offers is not None else offerings(price),
    )


def nodepool(name: str = "default", **options: Any) -> NodePool:
    return NodePool.from_dict(f.nodepool(name, **options))


def context(
    types: Sequence[InstanceType],
    pools: Sequence[NodePool] | None = None,
    **options: Any,
) -> SchedulingContext:
    return build_context(pools if pools is not None else [nodepool()], types, **options)


def pod(name: str | None = None, **options: Any) -> Pod:
    return pod_from_dict(f.pod(name, **options))
