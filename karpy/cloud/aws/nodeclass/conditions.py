"""EC2NodeClass status conditions: one per resolution step, and ``Ready`` over them.

Each step of a resolution ends in a `ConditionUpdate` (True, or False/Unknown with a
reason and a message saying what matched nothing). `apply_outcomes` writes them into the
class's conditions by the rules of `karpy.apis.conditions`, as operatorpkg does for
Karpenter: ``observedGeneration`` is the class's generation (the cloud provider launches
only from a class whose ``Ready`` observed its generation), the transition time moves only
when the status does, and ``Ready`` is True when every condition of the ready set is True
for this generation, otherwise False (``UnhealthyDependents``) if one is False, else
Unknown (``ReconcilingDependents``), its message listing the others
(``AMIsReady=False``). The list is sorted by type, as Karpenter's was.

Nothing changes, the very same tuple comes back, when every outcome is what the
conditions already say, which is how the controller knows not to write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.conditions import READY, ConditionTypes

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

    from karpy.apis.conditions import Condition, ConditionUpdate

__all__ = [
    "AMIS_READY",
    "CAPACITY_RESERVATIONS_READY",
    "INSTANCE_PROFILE_READY",
    "PLACEMENT_GROUP_READY",
    "READY",
    "SECURITY_GROUPS_READY",
    "SUBNETS_READY",
    "VALIDATION_SUCCEEDED",
    "Unresolved",
    "apply_outcomes",
    "nodeclass_conditions",
]

AMIS_READY: Final = "AMIsReady"
SUBNETS_READY: Final = "SubnetsReady"
SECURITY_GROUPS_READY: Final = "SecurityGroupsReady"
INSTANCE_PROFILE_READY: Final = "InstanceProfileReady"
CAPACITY_RESERVATIONS_READY: Final = "CapacityReservationsReady"
PLACEMENT_GROUP_READY: Final = "PlacementGroupReady"
VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"


def nodeclass_conditions(*, reserved_capacity: bool) -> ConditionTypes:
    """The EC2NodeClass's conditions: ``Ready`` over the steps' (CapacityReservationsReady
    only with the ReservedCapacity gate)."""
    base = (AMIS_READY, SUBNETS_READY, SECURITY_GROUPS_READY, INSTANCE_PROFILE_READY,
            VALIDATION_SUCCEEDED, PLACEMENT_GROUP_READY)  # fmt: skip
    return ConditionTypes((*base, CAPACITY_RESERVATIONS_READY) if reserved_capacity else base)


class Unresolved(Exception):
    """A step's False verdict, raised from deep inside it: ``reason`` and ``message`` are
    its condition's."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def apply_outcomes(
    conditions: tuple[Condition, ...],
    outcomes: Iterable[ConditionUpdate],
    *,
    types: ConditionTypes,
    generation: int,
    now: datetime,
) -> tuple[Condition, ...]:
    """``conditions`` with ``outcomes`` and the root ``Ready`` applied, sorted by type
    (see the module docstring); the same tuple when nothing changed."""
    updated = types.of(conditions, generation=generation).apply(*outcomes, now=now)
    if updated.conditions is conditions:
        return conditions
    return tuple(sorted(updated.conditions, key=lambda c: c.type))
