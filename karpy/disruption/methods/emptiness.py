"""Emptiness, the first method (Karpenter's ``emptiness.go``): empty, Consolidatable
candidates of pools that consolidate at all (``WhenEmpty``,
``WhenEmptyOrUnderutilized`` and ``Balanced``; an empty node is never scored), as many as
each pool's ``Empty`` budget allows, deleted together.

Emptiness is computed from the pods on each node every pass (a candidate is empty when
none of its pods would need a new home), so an empty node is never stranded by a missed
event. It needs no what-if: an empty node's pods need no place.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.methods.command import NOTHING, Command, ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import can_consolidate, take_budget
from karpy.disruption.methods.method import DisruptionClass

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import WhatIf

__all__ = ["Emptiness", "empty_command"]


def empty_command(candidates: Sequence[Candidate], budgets: dict[str, int]) -> Outcome:
    """The empty, Consolidatable ``candidates``, cheapest to disrupt first, as many per
    pool as ``budgets`` allows (spent from it)."""
    chosen = [
        c
        for c in sorted(candidates, key=lambda c: (c.disruption_cost, c.name))
        if c.empty and can_consolidate(c) and take_budget(budgets, c)
    ]
    if not chosen:
        return NOTHING
    return Outcome(Command(DisruptionReason.EMPTY, ConsolidationType.EMPTY, tuple(chosen)))


class Emptiness:
    reason = DisruptionReason.EMPTY
    consolidation_type = ConsolidationType.EMPTY
    disruption_class = DisruptionClass.GRACEFUL
    simulates = False
    refusal_event = ""

    def should_disrupt(self, candidate: Candidate) -> bool:
        return candidate.empty

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return True

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        return empty_command(candidates, budgets)
