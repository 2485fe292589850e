"""Status conditions, and the one set of rules every karpy kind writes them by.

A karpy object says how it is doing in ``status.conditions``: NodeClaims (``Launched``,
``Registered``, ``Initialized``), NodePools (``NodeClassReady``, ``ValidationSucceeded``)
and EC2NodeClasses (one condition per resolution step), each with a root ``Ready`` over
some of them. Karpenter writes all of these through operatorpkg's ``status.ConditionSet``;
this module is karpy's counterpart, so every controller sets conditions the same way:

* a condition made without a reason carries its type as the reason;
* every condition set records the object's ``metadata.generation`` as its
  ``observedGeneration``, so a reader can tell a verdict on the current spec from one on
  an older spec;
* ``lastTransitionTime`` moves only when the status does (the Kubernetes convention), and
  nothing at all changes, the very same tuple comes back, when a condition already says
  what is set, which is how a controller knows not to write;
* the root (``Ready``) is recomputed whenever one of its dependents is set: True when
  every dependent is True for the current generation; otherwise False if one is False
  for it, else Unknown. Kinds differ only in how a root that is not True explains
  itself (`RootExplanation`): Karpenter's summary (``UnhealthyDependents`` /
  ``ReconcilingDependents``, ``SubnetsReady=False, AMIsReady=Unknown``) or the failing
  dependent's own reason and message;
* conditions keep their place in the list, a new one goes at the end, and conditions
  other writers set are kept.

Each kind declares its condition types (`ConditionTypes`) next to the controllers that
set them; this module knows only the shape of a condition, nothing of any kind.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import format_time, parse_time

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

__all__ = [
    "READY",
    "Condition",
    "ConditionSet",
    "ConditionStatus",
    "ConditionTypes",
    "ConditionUpdate",
    "RootExplanation",
    "find_condition",
]

READY: Final = "Ready"
# operatorpkg's words for a root that is not True, and for a dependent never set.
UNHEALTHY_DEPENDENTS: Final = "UnhealthyDependents"
RECONCILING_DEPENDENTS: Final = "ReconcilingDependents"
AWAITING_RECONCILIATION: Final = "AwaitingReconciliation"


class ConditionStatus(enum.StrEnum):
    """A condition's status, as Kubernetes spells it."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@attrs.frozen(slots=True)
class Condition:
    """A status condition in Kubernetes' standard shape.

    Karpenter's CRDs require a non-empty ``reason`` and a ``message`` on every condition;
    like operatorpkg, a condition made without a reason carries its type as the reason.
    """

    type: str
    status: ConditionStatus = attrs.field(converter=ConditionStatus)
    reason: str = attrs.field(default=attrs.Factory(lambda self: self.type, takes_self=True))
    message: str = ""
    last_transition_time: datetime | None = None
    observed_generation: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Condition:
        return cls(
            type=data.get("type", ""),
            status=data.get("status", ConditionStatus.UNKNOWN),
            reason=data.get("reason") or data.get("type", ""),
            message=data.get("message", ""),
            last_transition_time=parse_time(data.get("lastTransitionTime")),
            observed_generation=int(data.get("observedGeneration", 0)),
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": self.type,
            "status": self.status.value,
            "reason": self.reason,
            "message": self.message,
        }
        if self.last_transition_time is not None:
            out["lastTransitionTime"] = format_time(self.last_transition_time)
        if self.observed_generation:
            out["observedGeneration"] = self.observed_generation
        return out

    @property
    def is_true(self) -> bool:
        return self.status is ConditionStatus.TRUE


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    """The condition of that type, if the object has one."""
    return next((c for c in conditions if c.type == type_), None)


@attrs.frozen(slots=True)
class ConditionUpdate:
    """What a controller concluded about one condition: the typed argument of
    `ConditionSet.apply` (the transition time and generation are the set's to fill in)."""

    type: str
    status: ConditionStatus = attrs.field(converter=ConditionStatus)
    reason: str = attrs.field(default=attrs.Factory(lambda self: self.type, takes_self=True))
    message: str = ""

    @classmethod
    def true(cls, type_: str, reason: str = "", message: str = "") -> ConditionUpdate:
        return cls(type_, ConditionStatus.TRUE, reason or type_, message)

    @classmethod
    def false(cls, type_: str, reason: str, message: str) -> ConditionUpdate:
        return cls(type_, ConditionStatus.FALSE, reason, message)

    @classmethod
    def unknown(cls, type_: str, reason: str, message: str) -> ConditionUpdate:
        return cls(type_, ConditionStatus.UNKNOWN, reason, message)

    @property
    def is_true(self) -> bool:
        return self.status is ConditionStatus.TRUE


class RootExplanation(enum.Enum):
    """How a root condition that is not True says why."""

    # operatorpkg's: UnhealthyDependents (one is False) or ReconcilingDependents, and the
    # message lists every dependent that is not True (``SubnetsReady=False, ...``).
    SUMMARY = enum.auto()
    # The reason and message of the dependent that holds it back: the first one False,
    # else the first one not True (declaration order), for a kind whose dependents
    # already explain themselves to users.
    DEPENDENT = enum.auto()


@attrs.frozen(slots=True)
class ConditionTypes:
    """One kind's conditions: its root and the dependents the root stands on."""

    dependents: tuple[str, ...]
    root: str = READY
    explanation: RootExplanation = RootExplanation.SUMMARY
    # Messages are cut to this many characters (None: kept whole).
    message_limit: int | None = None

    def of(self, conditions: tuple[Condition, ...], *, generation: int) -> ConditionSet:
        """The conditions of an object at ``generation``, to read and set."""
        return ConditionSet(self, conditions, generation)


@attrs.frozen(slots=True)
class ConditionSet:
    """An object's conditions under its kind's `ConditionTypes`; immutable: setting
    returns a new set (the same one when nothing changes)."""

    types: ConditionTypes
    conditions: tuple[Condition, ...]
    generation: int

    def get(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def apply(self, *updates: ConditionUpdate, now: datetime) -> ConditionSet:
        """These conditions with ``updates`` set in order, and the root recomputed when
        one of them is a dependent of it (see the module docstring)."""
        result = self
        for update in updates:
            result = result._set(update, now)
        if any(u.type in self.types.dependents for u in updates):
            result = result._set(result._root(), now)
        return result

    def clear(self, type_: str) -> ConditionSet:
        """These conditions without ``type_`` (for conditions that are only there while
        they hold, such as ``Drifted``)."""
        if self.get(type_) is None:
            return self
        kept = tuple(c for c in self.conditions if c.type != type_)
        return attrs.evolve(self, conditions=kept)

    def _set(self, update: ConditionUpdate, now: datetime) -> ConditionSet:
        reason = update.reason or update.type
        limit = self.types.message_limit
        message = update.message if limit is None else update.message[:limit]
        old = self.get(update.type)
        if old is not None and (old.status, old.reason, old.message, old.observed_generation) == (
            update.status, reason, message, self.generation
        ):  # fmt: skip
            return self
        kept = old.last_transition_time if old is not None and old.status == update.status else None
        new = Condition(update.type, update.status, reason, message, kept or now, self.generation)
        if old is None:
            return attrs.evolve(self, conditions=(*self.conditions, new))
        replaced = tuple(new if c.type == update.type else c for c in self.conditions)
        return attrs.evolve(self, conditions=replaced)

    def _root(self) -> ConditionUpdate:
        root = self.types.root
        unhealthy = self._unhealthy()
        if not unhealthy:
            return ConditionUpdate.true(root)
        failed = [
            c for c in unhealthy
            if c.status is ConditionStatus.FALSE and c.observed_generation == self.generation
        ]  # fmt: skip
        status = ConditionStatus.FALSE if failed else ConditionStatus.UNKNOWN
        if self.types.explanation is RootExplanation.DEPENDENT:
            cause = (failed or unhealthy)[0]
            return ConditionUpdate(root, status, cause.reason, cause.message)
        message = ", ".join(f"{c.type}={c.status.value}" for c in unhealthy)
        reason = UNHEALTHY_DEPENDENTS if failed else RECONCILING_DEPENDENTS
        return ConditionUpdate(root, status, reason, message)

    def _unhealthy(self) -> list[Condition]:
        """The dependents that are not True for this generation, in declaration order
        (one never set counts as Unknown)."""
        unhealthy = []
        for type_ in self.types.dependents:
            found = self.get(type_)
            if found is None:
                unhealthy.append(Condition(type_, ConditionStatus.UNKNOWN, AWAITING_RECONCILIATION))
            elif not (found.is_true and found.observed_generation == self.generation):
                unhealthy.append(found)
        return unhealthy
