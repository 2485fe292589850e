"""What a disruption method answers with: a `Command` (the nodes to disrupt, why, and
what replaces them), wrapped in an `Outcome` that also says, per node it looked at and
could not act on, why not (the controller turns those into Events), and the consolidation
moves it scored (`karpy.disruption.balanced`; the controller counts them and reports the
ones it approved).

A command is a value: deciding it touches nothing, and the controller validates,
records and starts it in separate steps.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from karpy.apis.disruption import DisruptionReason
    from karpy.disruption.balanced import Judgement
    from karpy.disruption.candidates import Candidate
    from karpy.scheduling.results import NodeClaimPlan

__all__ = ["NOTHING", "Command", "ConsolidationType", "Decision", "Outcome"]


class ConsolidationType(enum.StrEnum):
    """The ``consolidation_type`` label of Karpenter's decision metrics."""

    EMPTY = "empty"
    DRIFT = ""  # drift is not consolidation, and nor is node repair
    MULTI = "multi"
    SINGLE = "single"


class Decision(enum.StrEnum):
    DELETE = "delete"
    REPLACE = "replace"
    REBOOT = "reboot"  # node repair's RebootNode: the node stays


@attrs.frozen(slots=True)
class Command:
    reason: DisruptionReason
    consolidation_type: ConsolidationType
    candidates: tuple[Candidate, ...]
    replacements: tuple[NodeClaimPlan, ...] = ()
    # NodePools whose template alone makes one replacement each (a static pool's drifted
    # node): no scheduling decision, the cloud provider picks the instance type.
    template_replacements: tuple[str, ...] = ()
    # Deleted before its successor exists, as there is no room to make it first (a static
    # pool at its node limit, or a full capacity reservation); the successor comes from
    # the pool's own controller or, for a reservation, from provisioning.
    terminate_first: bool = False
    # With terminate_first: the full capacity reservation that leaves no room
    # (`karpy.disruption.reservedfirst`); "" for a static pool at its node limit.
    full_reservation: str = ""
    # Written on each candidate NodeClaim with its replacements' names (node repair's
    # drain bound, `karpy.apis.labels.ANNOTATION_REPAIR_GRACE`).
    annotations: tuple[tuple[str, str], ...] = ()
    # Rebooted in place rather than deleted (node repair's RebootNode action).
    reboot: bool = False

    @property
    def decision(self) -> Decision:
        if self.reboot:
            return Decision.REBOOT
        replaces = self.replacements or self.template_replacements
        return Decision.REPLACE if replaces else Decision.DELETE

    def describe(self) -> str:
        names = ", ".join(c.name for c in self.candidates[:5])
        if len(self.candidates) > 5:
            names += f" and {len(self.candidates) - 5} more"
        what = f"{self.decision} {len(self.candidates)} node(s) ({names})"
        if self.replacements:
            types = ", ".join(sorted({r.instance_type.name for r in self.replacements}))
            what += f" with {len(self.replacements)} new node(s) ({types})"
        if self.template_replacements:
            pools = ", ".join(sorted(set(self.template_replacements)))
            what += (f" with {len(self.template_replacements)} new node(s) from the "
                     f"template of NodePool {pools}")  # fmt: skip
        if self.terminate_first and self.full_reservation:
            what += (f" first, its successor after (capacity reservation "
                     f"{self.full_reservation} is full)")  # fmt: skip
        elif self.terminate_first:
            what += " first, its successor after (no room to make it before)"
        return f"{what}: {self.reason}"


@attrs.frozen(slots=True)
class Outcome:
    """A method's answer: a command, or none with the per-node reasons why not, and
    the moves it judged on the way."""

    command: Command | None = None
    unconsolidatable: tuple[tuple[Candidate, str], ...] = ()
    judged: tuple[Judgement, ...] = ()
    timed_out: bool = False  # the search stopped at its time bound, candidates left
    untried: tuple[str, ...] = ()  # then, the candidates it did not reach (NodeClaim names)


NOTHING: Final = Outcome()
