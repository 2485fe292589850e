"""EC2NodeClass status conditions: one per resolution step, and ``Ready`` over them.

Each step of a resolution ends in an `Outcome` (True, or False/Unknown with a reason and
a message saying what matched nothing). `apply_outcomes` writes them into the class's
conditions as operatorpkg does for Karpenter:

* every condition carries the class's ``metadata.generation`` as ``observedGeneration``,
  so a reader can tell a verdict on the current spec from one on an older spec (the
  cloud provider launches only from a class whose ``Ready`` observed its generation);
* the transition time moves only when the status does;
* ``Ready`` is True when every condition of the ready set is True for this generation;
  otherwise False (``UnhealthyDependents``) if one is False, else Unknown
  (``ReconcilingDependents``), its message listing the others (``AMIsReady=False``);
* conditions other writers set are kept; the list is sorted by type.

Nothing changes — the very same tuple comes back — when every outcome is what the
conditions already say, which is how the controller knows not to write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.core import Condition

if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import datetime

__all__ = [
    "AMIS_READY",
    "CAPACITY_RESERVATIONS_READY",
    "INSTANCE_PROFILE_READY",
    "PLACEMENT_GROUP_READY",
    "READY",
    "SECURITY_GROUPS_READY",
    "SUBNETS_READY",
    "VALIDATION_SUCCEEDED",
    "Outcome",
    "Unresolved",
    "apply_outcomes",
    "ready_set",
]

READY: Final = "Ready"
AMIS_READY: Final = "AMIsReady"
SUBNETS_READY: Final = "SubnetsReady"
SECURITY_GROUPS_READY: Final = "SecurityGroupsReady"
INSTANCE_PROFILE_READY: Final = "InstanceProfileReady"
CAPACITY_RESERVATIONS_READY: Final = "CapacityReservationsReady"
PLACEMENT_GROUP_READY: Final = "PlacementGroupReady"
VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"


def ready_set(*, reserved_capacity: bool) -> tuple[str, ...]:
    """The conditions ``Ready`` stands on (CapacityReservationsReady only with the
    ReservedCapacity gate)."""
    base = (AMIS_READY, SUBNETS_READY, SECURITY_GROUPS_READY, INSTANCE_PROFILE_READY,
            VALIDATION_SUCCEEDED, PLACEMENT_GROUP_READY)  # fmt: skip
    return (*base, CAPACITY_RESERVATIONS_READY) if reserved_capacity else base


class Unresolved(Exception):
    """A step's False verdict, raised from deep inside it: ``reason`` and ``message`` are
    its condition's."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@attrs.frozen(slots=True)
class Outcome:
    """One step's verdict."""

    type: str
    status: str  # True | False | Unknown
    reason: str = ""
    message: str = ""

    @classmethod
    def true(cls, type_: str) -> Outcome:
        return cls(type_, "True", type_, "")

    @classmethod
    def false(cls, type_: str, reason: str, message: str) -> Outcome:
        return cls(type_, "False", reason, message)

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def _set(by_type: dict[str, Condition], outcome: Outcome, generation: int, now: datetime) -> bool:
    old = by_type.get(outcome.type)
    reason = outcome.reason or outcome.type
    if old is not None and (old.status, old.reason, old.message, old.observed_generation) == (
        outcome.status, reason, outcome.message, generation
    ):  # fmt: skip
        return False
    since = old.last_transition_time if old is not None and old.status == outcome.status else now
    by_type[outcome.type] = Condition(outcome.type, outcome.status, reason, outcome.message,
                                      since or now, generation)  # fmt: skip
    return True


def _root(by_type: dict[str, Condition], dependents: Iterable[str], generation: int) -> Outcome:
    def healthy(type_: str) -> bool:
        found = by_type.get(type_)
        return found is not None and found.is_true and found.observed_generation == generation

    unhealthy = [by_type.get(t) or Condition(t, "Unknown") for t in dependents if not healthy(t)]
    if not unhealthy:
        return Outcome.true(READY)
    failed = any(c.status == "False" and c.observed_generation == generation for c in unhealthy)
    message = ", ".join(f"{c.type}={c.status}" for c in unhealthy)
    if failed:
        return Outcome(READY, "False", "UnhealthyDependents", message)
    return Outcome(READY, "Unknown", "ReconcilingDependents", message)


def apply_outcomes(
    conditions: tuple[Condition, ...],
    outcomes: Iterable[Outcome],
    *,
    generation: int,
    now: datetime,
    dependents: tuple[str, ...],
) -> tuple[Condition, ...]:
    """``conditions`` with ``outcomes`` and the root ``Ready`` applied (see the module
    docstring); the same tuple when nothing changed."""
    by_type = {c.type: c for c in conditions}
    changed = False
    for outcome in outcomes:
        changed |= _set(by_type, outcome, generation, now)
    changed |= _set(by_type, _root(by_type, dependents, generation), generation, now)
    if not changed:
        return conditions
    return tuple(sorted(by_type.values(), key=lambda c: c.type))
