"""Node repair, the first method (Karpenter 1.15, RFC core#3192 "Making node repair
voluntary"): unhealthy nodes, replaced one at a time within the ``Unhealthy`` budget.

A candidate is a node the cloud provider's repair policies call unhealthy (a condition
held past its toleration, `karpy.disruption.unhealthy`), unless the Node or its NodeClaim
carries ``karpenter.sh/do-not-repair: "true"``. ``karpenter.sh/do-not-disrupt`` is no veto
(as with the older, forceful repair), nor are PodDisruptionBudgets or nominations
(`karpy.disruption.candidates.REPAIR_IGNORES`): the drain honours PDBs and do-not-disrupt
pods, bounded by the repair's grace period.

Candidates are tried highest score first (policy priority rank plus aging past the
toleration, then the cheaper to disrupt, then the name). Like drift, a node's pods are
given a what-if and its replacements are made (*pre-spun*) before it is drained and
deleted (`karpy.disruption.orchestration`); a node whose pods would find no place is
reported (``DisruptionBlocked``) and the next is tried. A static pool's node is replaced
one for one from the template, or, at ``limits.nodes`` with gate ``TerminateFirstRepair``,
deleted first (`karpy.disruption.methods.staticdrift.static_replacement`); a node on a
full capacity reservation its pods need, which no what-if can replace first, is deleted
first too with that gate (`karpy.disruption.reservedfirst`).

The policy's termination grace period travels with the decision as an annotation on the
NodeClaim (`karpy.apis.labels.ANNOTATION_REPAIR_GRACE`), so a restarted karpy drains the
node as decided.

A ``RebootNode`` policy (the cloud provider offers one only when it can reboot: on AWS,
gate ``RebootForRepair``) reboots the node in place instead, within the same budget, no
replacement made (`karpy.disruption.reboot`). A node is rebooted once: if a reboot policy
still calls it unhealthy a toleration after its reboot, it is replaced.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.disruption import DisruptionReason
from karpy.apis.labels import (
    ANNOTATION_DO_NOT_REPAIR,
    ANNOTATION_REBOOT_GRACE,
    ANNOTATION_REPAIR_GRACE,
    ANNOTATION_REPAIR_REBOOT,
)
from karpy.cloud.provider import RepairAction
from karpy.disruption.methods.command import Command, ConsolidationType, Outcome
from karpy.disruption.methods.drift import terminated_first
from karpy.disruption.methods.method import DisruptionClass
from karpy.disruption.methods.staticdrift import static_replacement
from karpy.disruption.reboot import rebooted_at
from karpy.disruption.reservedfirst import reserved_terminate_first
from karpy.disruption.unhealthy import diagnose, priority_ranks, repair_score
from karpy.durations import format_duration, from_timedelta

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    from karpy.base.clock import Clock
    from karpy.cloud.provider import RepairPolicy
    from karpy.disruption.candidates import Candidate
    from karpy.disruption.methods.drift import TerminateFirst
    from karpy.disruption.simulation import Simulation, WhatIf
    from karpy.state.snapshot import StateSnapshot

__all__ = ["Repair", "repair_command", "vetoed"]


def vetoed(candidate: Candidate) -> bool:
    """Does the Node or its NodeClaim say ``karpenter.sh/do-not-repair: "true"``?"""
    annotations = candidate.claim.metadata.annotations
    return "true" in (candidate.node.do_not_repair, annotations.get(ANNOTATION_DO_NOT_REPAIR))


def repair_order(
    candidates: Sequence[Candidate], policies: Sequence[RepairPolicy], now: datetime
) -> list[tuple[Candidate, RepairPolicy]]:
    """The unhealthy ``candidates`` with the policy that makes each so, in repair's order
    (`karpy.disruption.unhealthy`)."""
    ranks = priority_ranks(policies)
    scored = []
    for candidate in candidates:
        diagnosis = diagnose(candidate.node, policies, now)
        if diagnosis.policy is None:
            continue
        score = repair_score(diagnosis, ranks, now)
        scored.append((-score, candidate.disruption_cost, candidate.name, candidate,
                       diagnosis.policy))  # fmt: skip
    scored.sort(key=lambda item: item[:3])
    return [(candidate, policy) for *_, candidate, policy in scored]


def repair_command(  # noqa: PLR0917 - one repair decision's inputs
    candidates: Sequence[Candidate],
    budgets: dict[str, int],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    snapshot: StateSnapshot,
    policies: Sequence[RepairPolicy],
    now: datetime,
    *,
    terminate_first: bool = False,
    reserved_first: TerminateFirst | None = None,
) -> Outcome:
    """The first unhealthy candidate in repair's order whose pool's ``Unhealthy`` budget
    allows one more disruption and whose replacement can be made (see the module
    docstring), with its replacements; ``reserved_first`` is asked about one whose pods
    would find no place (`karpy.disruption.methods.drift.terminated_first`)."""
    blocked: list[tuple[Candidate, str]] = []
    for candidate, policy in repair_order(candidates, policies, now):
        if vetoed(candidate) or budgets.get(candidate.nodepool, 0) <= 0:
            continue
        grace = policy.termination_grace_period
        text = format_duration(from_timedelta(grace)) if grace is not None else None
        if policy.action is RepairAction.REBOOT:
            rebooted = rebooted_at(candidate.claim)
            if rebooted is None:
                marks = [(ANNOTATION_REPAIR_REBOOT, "true")]
                if text is not None:
                    marks.append((ANNOTATION_REBOOT_GRACE, text))
                return Outcome(Command(DisruptionReason.UNHEALTHY, ConsolidationType.DRIFT,
                                       (candidate,), annotations=tuple(marks), reboot=True),
                               tuple(blocked))  # fmt: skip
            if now < rebooted + policy.toleration:
                continue  # rebooted: give it a toleration to recover before replacing it
        annotations: tuple[tuple[str, str], ...] = ()
        if text is not None:
            annotations = ((ANNOTATION_REPAIR_GRACE, text),)
        if candidate.pool.is_static:
            command = static_replacement(candidate, snapshot, DisruptionReason.UNHEALTHY,
                                         terminate_first=terminate_first)  # fmt: skip
            if command is None:
                continue
            return Outcome(_with(command, annotations), tuple(blocked))
        simulation = simulate([candidate])
        if not simulation.ok:
            why = "; ".join(simulation.failures[:3])
            first = terminated_first(candidate, DisruptionReason.UNHEALTHY, why, reserved_first)
            if isinstance(first, Command):
                return Outcome(_with(first, annotations), tuple(blocked))
            blocked.append((candidate, first))
            continue
        command = Command(DisruptionReason.UNHEALTHY, ConsolidationType.DRIFT, (candidate,),
                          simulation.new_nodeclaims, annotations=annotations)  # fmt: skip
        return Outcome(command, tuple(blocked))
    return Outcome(None, tuple(blocked))


def _with(command: Command, annotations: tuple[tuple[str, str], ...]) -> Command:
    return attrs.evolve(command, annotations=annotations)


class Repair:
    reason = DisruptionReason.UNHEALTHY
    consolidation_type = ConsolidationType.DRIFT  # "": not consolidation
    disruption_class = DisruptionClass.REPAIR
    simulates = True
    refusal_event = "DisruptionBlocked"

    def __init__(
        self, policies: Sequence[RepairPolicy], *, clock: Clock, terminate_first: bool = True
    ) -> None:
        """``policies``: the cloud provider's; ``terminate_first``: the
        ``TerminateFirstRepair`` gate."""
        self.policies = tuple(policies)
        self.clock = clock
        self.terminate_first = terminate_first

    def should_disrupt(self, candidate: Candidate) -> bool:
        # A NodeClaim already marked is no candidate at all (`candidates.is_marked`).
        if vetoed(candidate):
            return False
        return diagnose(candidate.node, self.policies, self.clock.now()).unhealthy

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return bool(self.policies)

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        now = what_if.now if what_if.now is not None else self.clock.now()
        reserved_first = None
        if self.terminate_first:
            reserved_first = lambda c: reserved_terminate_first(c, what_if)  # noqa: E731
        return repair_command(candidates, budgets, what_if, what_if.snapshot, self.policies,
                              now, terminate_first=self.terminate_first,
                              reserved_first=reserved_first)  # fmt: skip
