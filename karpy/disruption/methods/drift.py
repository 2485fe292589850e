"""Drift, the second method (Karpenter's ``drift.go``): Drifted candidates, oldest drift
first and empty ones before the others, one at a time within the ``Drifted`` budget:
replaced by what the scheduler says their pods need (nothing, for an empty one), then
deleted.

Drift is *eventual* (`DisruptionClass.EVENTUAL`): it does not wait for arriving capacity,
and a node blocked only by its pods is still its candidate when its NodeClaim has a
``terminationGracePeriod``. A drifted node whose pods would find no place is reported
(``DisruptionBlocked``) and the next one is tried, unless it is on a full capacity
reservation its pods need: then, with gate ``TerminateFirstDrift``, it is deleted first
(`karpy.disruption.reservedfirst`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.conditions import DRIFTED
from karpy.disruption.methods.command import Command, ConsolidationType, Outcome
from karpy.disruption.methods.method import DisruptionClass
from karpy.disruption.reservedfirst import reserved_terminate_first
from karpy.lifecycle.conditions import is_true

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from karpy.disruption.candidates import Candidate
    from karpy.disruption.reservedfirst import ReservedTerminateFirst
    from karpy.disruption.simulation import Simulation, WhatIf

    TerminateFirst = Callable[[Candidate], ReservedTerminateFirst]

__all__ = ["Drift", "drift_command", "terminated_first"]


def drift_command(
    candidates: Sequence[Candidate],
    budgets: dict[str, int],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    terminate_first: TerminateFirst | None = None,
) -> Outcome:
    """The first Drifted candidate (see the module docstring) whose pool's budget allows
    one more disruption and whose pods would find a place, with its replacements; or,
    asked of ``terminate_first`` when they would not, its deletion alone."""
    drifted = [c for c in candidates if is_true(c.claim, DRIFTED) and not c.pool.is_static]

    def since(c: Candidate) -> tuple[bool, str, str]:
        condition = c.claim.status.condition(DRIFTED)
        stamp = condition.last_transition_time if condition is not None else None
        return (not c.empty, stamp.isoformat() if stamp else "", c.name)

    blocked: list[tuple[Candidate, str]] = []
    for candidate in sorted(drifted, key=since):
        if budgets.get(candidate.nodepool, 0) <= 0:
            continue
        simulation = simulate([candidate])
        if not simulation.ok:
            why = "; ".join(simulation.failures[:3])
            first = terminated_first(candidate, DisruptionReason.DRIFTED, why, terminate_first)
            if isinstance(first, Command):
                return Outcome(first, tuple(blocked))
            blocked.append((candidate, first))
            continue
        replacements = simulation.new_nodeclaims
        command = Command(DisruptionReason.DRIFTED, ConsolidationType.DRIFT, (candidate,),
                          replacements)  # fmt: skip
        return Outcome(command, tuple(blocked))
    return Outcome(None, tuple(blocked))


def terminated_first(
    candidate: Candidate,
    reason: DisruptionReason,
    why: str,
    terminate_first: TerminateFirst | None,
) -> Command | str:
    """For ``candidate``, whose pods would find no place (``why``): its deletion alone
    when ``terminate_first`` says its full reservation allows it, else why it is blocked.
    Shared with node repair (`karpy.disruption.methods.repair`)."""
    if terminate_first is None:
        return why
    answer = terminate_first(candidate)
    if answer.reservation:
        return Command(reason, ConsolidationType.DRIFT, (candidate,), terminate_first=True,
                       full_reservation=answer.reservation)  # fmt: skip
    return f"{why}; {answer.why_not}" if answer.why_not else why


class Drift:
    reason = DisruptionReason.DRIFTED
    consolidation_type = ConsolidationType.DRIFT
    disruption_class = DisruptionClass.EVENTUAL
    simulates = True
    refusal_event = "DisruptionBlocked"

    def __init__(self, *, terminate_first: bool = True) -> None:
        """``terminate_first``: the ``TerminateFirstDrift`` gate."""
        self.terminate_first = terminate_first

    def should_disrupt(self, candidate: Candidate) -> bool:
        # A static pool's drifted nodes are replaced one for one (`StaticDrift`).
        return is_true(candidate.claim, DRIFTED) and not candidate.pool.is_static

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return True

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        first = None
        if self.terminate_first:
            first = lambda c: reserved_terminate_first(c, what_if)  # noqa: E731
        return drift_command(candidates, budgets, what_if, terminate_first=first)
