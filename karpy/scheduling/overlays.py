"""NodeOverlays: user adjustments to instance-type prices and capacity, per NodePool.

An overlay selects instance types (and their offerings) with node-selector requirements,
which may also name the NodePool (``karpenter.sh/nodepool``) or its template labels, and
either sets or adjusts the price of the selected offerings or adds extended resources to
their capacity. Overlays apply in precedence order (weight descending, then name
descending): the first overlay to touch an offering's price or a capacity resource wins.
Two overlays of equal weight touching the same offering price or the same capacity
resource conflict; the later one is ignored as a whole, as Karpenter marks it
``ValidationSucceeded=False``.

The result is a new tuple of instance types for the pool; untouched types are shared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import attrs

from karpy.apis.labels import LABEL_NODEPOOL
from karpy.scheduling.instancetypes import InstanceType, Offering, compute_allocatable
from karpy.scheduling.requirements import Requirement, Requirements

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.core import NodeSelectorRequirement

__all__ = ["NodeOverlayLike", "adjusted_price", "apply_overlays"]


class _Meta(Protocol):
    @property
    def name(self) -> str: ...


class _Spec(Protocol):
    @property
    def requirements(self) -> Sequence[NodeSelectorRequirement]: ...
    @property
    def price(self) -> str | None: ...
    @property
    def price_adjustment(self) -> str | None: ...
    @property
    def capacity(self) -> Mapping[str, int]: ...
    @property
    def weight(self) -> int | None: ...


class NodeOverlayLike(Protocol):
    @property
    def metadata(self) -> _Meta: ...
    @property
    def spec(self) -> _Spec: ...


def adjusted_price(price: float, change: str | None) -> float:
    """Apply a NodeOverlay ``price`` (absolute) or ``priceAdjustment`` (+/-x or +/-x%)."""
    if not change:
        return price
    if change[0] not in "+-":
        return float(change)
    if change.endswith("%"):
        result = price * (1 + float(change[:-1]) / 100)
    else:
        result = price + float(change)
    return max(result, 0.0)


@attrs.define
class _Update:
    price_by_offering: dict[int, tuple[str, int]] = attrs.field(
        factory=dict
    )  # idx -> (change, weight)
    capacity: dict[str, tuple[int, int]] = attrs.field(factory=dict)  # resource -> (value, weight)


def _selected_offerings(
    base: Requirements, it: InstanceType, overlay_reqs: Requirements
) -> list[int]:
    scope = base.merge(it.requirements)
    if not scope.is_compatible(overlay_reqs):
        return []
    return [
        i for i, o in enumerate(it.offerings) if overlay_reqs.intersects(o.requirements) is None
    ]


def apply_overlays(
    nodepool: str,
    template_labels: Mapping[str, str],
    instance_types: Sequence[InstanceType],
    overlays: Iterable[NodeOverlayLike],
) -> tuple[InstanceType, ...]:
    """The pool's instance types with every applicable overlay applied."""
    ordered = sorted(overlays, key=lambda o: o.metadata.name, reverse=True)
    ordered.sort(key=lambda o: -(o.spec.weight or 0))
    base = Requirements.from_labels({**template_labels, LABEL_NODEPOOL: nodepool})
    updates: dict[str, _Update] = {}
    for overlay in ordered:
        reqs = Requirements(
            Requirement.new(r.key, r.operator, r.values) for r in overlay.spec.requirements
        )
        weight = overlay.spec.weight or 0
        change = (
            overlay.spec.price if overlay.spec.price is not None else overlay.spec.price_adjustment
        )
        selected = [(it, _selected_offerings(base, it, reqs)) for it in instance_types]
        selected = [(it, offs) for it, offs in selected if offs]
        if _conflicts(updates, selected, change, overlay.spec.capacity, weight):
            continue
        for it, offs in selected:
            update = updates.setdefault(it.name, _Update())
            if change is not None:
                for i in offs:
                    if i not in update.price_by_offering:
                        update.price_by_offering[i] = (change, weight)
            for name, value in overlay.spec.capacity.items():
                if name not in update.capacity:
                    update.capacity[name] = (value, weight)
    return tuple(_apply(it, updates.get(it.name)) for it in instance_types)


def _conflicts(
    updates: Mapping[str, _Update],
    selected: Sequence[tuple[InstanceType, list[int]]],
    change: str | None,
    capacity: Mapping[str, int],
    weight: int,
) -> bool:
    for it, offs in selected:
        update = updates.get(it.name)
        if update is None:
            continue
        if change is not None and any(
            i in update.price_by_offering and update.price_by_offering[i][1] == weight for i in offs
        ):
            return True
        if any(name in update.capacity and update.capacity[name][1] == weight for name in capacity):
            return True
    return False


def _apply(it: InstanceType, update: _Update | None) -> InstanceType:
    if update is None or (not update.price_by_offering and not update.capacity):
        return it
    offerings: list[Offering] = list(it.offerings)
    for i, (change, _) in update.price_by_offering.items():
        o = offerings[i]
        offerings[i] = attrs.evolve(o, price=adjusted_price(o.price, change), price_overlaid=True)
    capacity = dict(it.capacity)
    overlaid = False
    for name, (value, _) in update.capacity.items():
        capacity[name] = value
        overlaid = True
    return attrs.evolve(
        it,
        offerings=tuple(offerings),
        capacity=capacity,
        allocatable=compute_allocatable(capacity, it.overhead) if overlaid else it.allocatable,
        capacity_overlaid=overlaid or it.capacity_overlaid,
    )
