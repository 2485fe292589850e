"""`RoundEnvironment`: what every question of one scheduling round is asked against.

A round fixes its inputs when it starts (the compiled context, the requirement algebra,
the topology it counts in, the policies it runs under), and every question (may this
pod join that node? why could it join none? what do the planned nodes become?) is asked
against the same record. One frozen value instead of the same seven keywords at every
call site, or the `Scheduler` itself handed to its helpers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from karpy.scheduling.algebra import RequirementAlgebra
    from karpy.scheduling.context import SchedulingContext
    from karpy.scheduling.index import InstanceTypeIndex
    from karpy.scheduling.kinds import PreferencePolicy
    from karpy.scheduling.reservations import ReservationManager
    from karpy.scheduling.topology import Topology

__all__ = ["RoundEnvironment"]


@attrs.frozen(slots=True)
class RoundEnvironment:
    context: SchedulingContext
    algebra: RequirementAlgebra
    topology: Topology  # mutable counts; the reference is fixed for the round
    policy: PreferencePolicy
    # Pools with PreferNoSchedule taints: relaxation may add a toleration for them.
    tolerate_prefer_no_schedule: bool
    # minValues BestEffort: a new node may relax minValues it cannot meet.
    relax_min_values: bool
    max_instance_types: int  # options kept per NodeClaim
    # Capacity-reservation tracking (None: the ReservedCapacity gate is off), and whether
    # pods that cannot get a held reservation may fall back to other capacity.
    reservations: ReservationManager | None
    reserved_fallback: bool
    # Node and NodeClaim names in use, which new NodeClaim names avoid.
    taken_names: frozenset[str]

    @property
    def index(self) -> InstanceTypeIndex:
        return self.context.index

    @property
    def well_known(self) -> frozenset[str]:
        return self.context.well_known_labels
