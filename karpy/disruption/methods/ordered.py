"""The methods in the order a disruption pass tries them (Karpenter's ``NewMethods``):
node repair first when it is on and not in its legacy form (Karpenter 1.15: fixing a
broken node outranks any discretionary change), then the cheapest and least disruptive
answers first. Emptiness deletes without a what-if;
static drift (a static pool's drifted node, replaced one for one) needs none either;
drift comes before consolidation because a drifted node must go whatever it costs;
multi-node consolidation before single-node because removing several nodes at once saves
more than removing them one by one, and its binary search runs few what-ifs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.disruption.methods.consolidation import Consolidated
from karpy.disruption.methods.drift import Drift
from karpy.disruption.methods.emptiness import Emptiness
from karpy.disruption.methods.multinode import MultiNodeConsolidation
from karpy.disruption.methods.repair import Repair
from karpy.disruption.methods.singlenode import SingleNodeConsolidation
from karpy.disruption.methods.staticdrift import StaticDrift

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.base.clock import Clock
    from karpy.cloud.provider import RepairPolicy
    from karpy.disruption.methods.method import Method

__all__ = ["methods_in_order"]


def methods_in_order(
    *,
    clock: Clock,
    spot_to_spot: bool,
    terminate_first_drift: bool = True,
    repair_policies: Sequence[RepairPolicy] | None = None,
    terminate_first_repair: bool = True,
) -> tuple[Method, ...]:
    """Fresh methods for one controller; the two consolidations share their memory of
    having found nothing. ``spot_to_spot``: the ``SpotToSpotConsolidation`` gate;
    ``terminate_first_drift``: the ``TerminateFirstDrift`` gate; ``repair_policies``: the
    cloud provider's, when node repair is a method (gate ``NodeRepair`` on,
    ``LEGACY_NODE_REPAIR`` off), else None; ``terminate_first_repair``: the
    ``TerminateFirstRepair`` gate."""
    consolidated = Consolidated(clock)
    repair: tuple[Method, ...] = ()
    if repair_policies is not None:
        repair = (Repair(repair_policies, clock=clock, terminate_first=terminate_first_repair),)
    return (
        *repair,
        Emptiness(),
        StaticDrift(terminate_first=terminate_first_drift),
        Drift(terminate_first=terminate_first_drift),
        MultiNodeConsolidation(consolidated, spot_to_spot=spot_to_spot),
        SingleNodeConsolidation(consolidated, spot_to_spot=spot_to_spot),
    )
