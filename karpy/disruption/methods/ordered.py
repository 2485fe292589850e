"""The methods in the order a disruption pass tries them (Karpenter's ``NewMethods``):
the cheapest and least disruptive answers first. Emptiness deletes without a what-if;
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
from karpy.disruption.methods.singlenode import SingleNodeConsolidation
from karpy.disruption.methods.staticdrift import StaticDrift

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.disruption.methods.method import Method

__all__ = ["methods_in_order"]


def methods_in_order(
    *, clock: Clock, spot_to_spot: bool, terminate_first_drift: bool = True
) -> tuple[Method, ...]:
    """Fresh methods for one controller; the two consolidations share their memory of
    having found nothing. ``spot_to_spot``: the ``SpotToSpotConsolidation`` gate;
    ``terminate_first_drift``: the ``TerminateFirstDrift`` gate."""
    consolidated = Consolidated(clock)
    return (
        Emptiness(),
        StaticDrift(terminate_first=terminate_first_drift),
        Drift(),
        MultiNodeConsolidation(consolidated, spot_to_spot=spot_to_spot),
        SingleNodeConsolidation(consolidated, spot_to_spot=spot_to_spot),
    )
