"""Resource lists: ``{resource name: milli-units}`` dicts and the arithmetic on them.

A resource list is a plain ``dict[str, int]`` holding exact milli-units (see
`karpy.base.quantity`), treated as immutable once built: functions here return new
dicts unless their name says ``_into``. The semantics follow Kubernetes and Karpenter:

* a resource absent from a list is zero;
* `fits` fails outright if the capacity side has any negative value (a node already
  over-committed fits nothing), then compares every requested resource;
* `subtract` keeps the keys of its left operand only (what is left of a capacity);
* `min_resources` keeps only keys present in every list (Karpenter's ``MinResources``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.base.quantity import format_resource

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = [
    "CPU",
    "EPHEMERAL_STORAGE",
    "MEMORY",
    "NODES",
    "PODS",
    "ResourceList",
    "add_into",
    "fits",
    "format_resources",
    "max_resources",
    "merge",
    "min_resources",
    "smallest_requests",
    "subtract",
]

ResourceList = dict[str, int]

CPU: Final = "cpu"
MEMORY: Final = "memory"
PODS: Final = "pods"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
# NodePool limits may cap the number of nodes; every node counts as one.
NODES: Final = "nodes"
ONE: Final = 1000  # one unit in milli-units


def merge(*lists: Mapping[str, int]) -> ResourceList:
    """The sum of ``lists``."""
    out: ResourceList = {}
    for lst in lists:
        for name, value in lst.items():
            out[name] = out.get(name, 0) + value
    return out


def add_into(dest: ResourceList, src: Mapping[str, int]) -> ResourceList:
    for name, value in src.items():
        dest[name] = dest.get(name, 0) + value
    return dest


def subtract(lhs: Mapping[str, int], rhs: Mapping[str, int]) -> ResourceList:
    """``lhs - rhs`` over the keys of ``lhs``."""
    return {name: value - rhs.get(name, 0) for name, value in lhs.items()}


def fits(candidate: Mapping[str, int], total: Mapping[str, int]) -> bool:
    for value in total.values():
        if value < 0:
            return False
    for name, value in candidate.items():  # noqa: SIM110 - hot path
        if value > total.get(name, 0):
            return False
    return True


def max_resources(lists: Iterable[Mapping[str, int]]) -> ResourceList:
    out: ResourceList = {}
    for lst in lists:
        for name, value in lst.items():
            current = out.get(name)
            if current is None or value > current:
                out[name] = value
    return out


def min_resources(lists: Iterable[Mapping[str, int]]) -> ResourceList:
    """Per-resource minimum over the resources present in every list."""
    it = iter(lists)
    first = next(it, None)
    if first is None:
        return {}
    out: ResourceList = dict(first)
    for lst in it:
        for name in list(out):
            other = lst.get(name)
            if other is None:
                del out[name]
            elif other < out[name]:
                out[name] = other
    return out


def clamp_negative(lst: Mapping[str, int]) -> ResourceList:
    return {name: max(value, 0) for name, value in lst.items()}


def format_resources(lst: Mapping[str, int]) -> dict[str, str]:
    """Quantity strings in sorted key order, for output documents."""
    return {name: format_resource(name, lst[name]) for name in sorted(lst)}


def render_resources(lst: Mapping[str, int]) -> str:
    """``{"cpu":"1500m","memory":"3Gi"}`` in one short line for messages."""
    if not lst:
        return "{}"
    inner = ", ".join(f"{k}: {v}" for k, v in format_resources(lst).items())
    return "{" + inner + "}"


def smallest_requests(requests: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Per resource, the smallest of ``requests`` (only resources every one requests)."""
    smallest: dict[str, int] | None = None
    for lst in requests:
        if smallest is None:
            smallest = {k: v for k, v in lst.items() if v > 0}
            continue
        for name in list(smallest):
            value = lst.get(name, 0)
            if value <= 0:
                del smallest[name]
            elif value < smallest[name]:
                smallest[name] = value
    return smallest or {}
