"""Multi-node consolidation, the third method (Karpenter's
``multinodeconsolidation.go``): Consolidatable candidates of ``WhenEmptyOrUnderutilized``
and ``Balanced`` pools, in consolidation's order, within the ``Underutilized`` budget (at
most 100): a binary search for the longest prefix whose pods fit on the rest of the
cluster plus at most one new node cheaper than them all, and which every Balanced pool
among its nodes finds worth it (`karpy.disruption.balanced`; a refused prefix shrinks the
search like one that does not fit).

The search keeps no per-node reasons: a prefix that fails says nothing about any one
node, so refusals are left to single-node consolidation. Of the moves it scored it
reports one: the one it takes, or when it takes none, the last one refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.disruption.methods.command import NOTHING, Command, ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import ConsolidationMethod, consolidate, scorer_for

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from karpy.disruption.balanced import Judgement, Scorer
    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import Simulation, WhatIf

__all__ = ["MAX_MULTI_NODE_CANDIDATES", "MultiNodeConsolidation", "multi_node_command"]

MAX_MULTI_NODE_CANDIDATES: Final = 100


def multi_node_command(
    chosen: Sequence[Candidate],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    spot_to_spot: bool,
    emptying: Mapping[str, float] | None = None,
    scorer: Scorer | None = None,
) -> Outcome:
    """The longest prefix (at least two) of ``chosen`` that one command can remove (and
    that ``scorer`` approves)."""
    chosen = list(chosen[:MAX_MULTI_NODE_CANDIDATES])
    if len(chosen) < 2:
        return NOTHING
    low, high = 1, len(chosen) - 1
    best: Command | None = None
    taken: Judgement | None = None
    refused: Judgement | None = None
    while low <= high:
        mid = (low + high) // 2
        command, _ = consolidate(chosen[: mid + 1], simulate, spot_to_spot=spot_to_spot,
                                 consolidation_type=ConsolidationType.MULTI,
                                 emptying=emptying)  # fmt: skip
        if command is not None and scorer is not None:
            judgement = scorer.judge(command.candidates, command.replacements)
            if judgement.approved:
                taken = judgement
            else:
                refused, command = judgement, None
        if command is not None:
            best, low = command, mid + 1
        else:
            high = mid - 1
    reported = taken if best is not None else refused
    return Outcome(best, judged=(reported,) if reported is not None else ())


class MultiNodeConsolidation(ConsolidationMethod):
    consolidation_type = ConsolidationType.MULTI
    refusal_event = ""

    def command_for(
        self, chosen: Sequence[Candidate], budgets: Mapping[str, int], what_if: WhatIf
    ) -> Outcome:
        return multi_node_command(chosen, what_if, spot_to_spot=self.spot_to_spot,
                                  emptying=what_if.emptying,
                                  scorer=scorer_for(what_if))  # fmt: skip
