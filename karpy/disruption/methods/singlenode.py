"""Single-node consolidation, the last method (Karpenter's
``singlenodeconsolidation.go``): the candidates multi-node consolidation takes, one by
one: delete one whose pods fit elsewhere, or replace it with one strictly cheaper node.

A candidate that fails a cheap necessary condition (`karpy.disruption.prefilter`) is
refused without a what-if, and the search stops after ``SINGLE_NODE_TIMEOUT`` seconds.
Every candidate it could not act on is reported (``Unconsolidatable``, with why); when
none could be, consolidation is marked as having found nothing on these inputs.

A candidate of a ``Balanced`` pool is not tried when even deleting it would score below
the threshold, and its move is passed over when it scores below it
(`karpy.disruption.balanced`). Neither is an ``Unconsolidatable`` Event: under Balanced
most moves are refused, and Events for them would bury the rest (Karpenter counts them
in ``karpenter_consolidation_moves_total`` only; ``karpy explain node`` says why).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from karpy.disruption.methods.command import ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import ConsolidationMethod, consolidate, scorer_for

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from karpy.disruption.balanced import Judgement, Scorer
    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import Simulation, WhatIf

__all__ = ["SINGLE_NODE_TIMEOUT", "SingleNodeConsolidation", "single_node_command"]

SINGLE_NODE_TIMEOUT: Final = 180.0  # seconds


def single_node_command(
    chosen: Sequence[Candidate],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    spot_to_spot: bool,
    out_of_time: Callable[[], bool] = lambda: False,
    why_not: Callable[[Candidate], str] = lambda _: "",
    emptying: Mapping[str, float] | None = None,
    scorer: Scorer | None = None,
) -> Outcome:
    """The first candidate that can be deleted or replaced by a cheaper node (and, in a
    Balanced pool, is worth it to ``scorer``).

    ``why_not`` is a cheap necessary condition (`karpy.disruption.prefilter`): a
    candidate it refuses is refused with its reason, without a what-if."""
    refused: list[tuple[Candidate, str]] = []
    judged: list[Judgement] = []
    for index, candidate in enumerate(chosen):
        if out_of_time():
            untried = tuple(c.name for c in chosen[index:])
            return Outcome(None, tuple(refused), tuple(judged), timed_out=True, untried=untried)
        if scorer is not None and not scorer.worth_trying(candidate):
            continue
        hopeless = why_not(candidate)
        if hopeless:
            refused.append((candidate, hopeless))
            continue
        command, why = consolidate([candidate], simulate, spot_to_spot=spot_to_spot,
                                   consolidation_type=ConsolidationType.SINGLE,
                                   emptying=emptying)  # fmt: skip
        if command is None:
            refused.append((candidate, why))
            continue
        if scorer is not None:
            judgement = scorer.judge(command.candidates, command.replacements)
            judged.append(judgement)
            if not judgement.approved:
                continue
        return Outcome(command, tuple(refused), tuple(judged))
    return Outcome(None, tuple(refused), tuple(judged))


class SingleNodeConsolidation(ConsolidationMethod):
    consolidation_type = ConsolidationType.SINGLE
    refusal_event = "Unconsolidatable"
    untried: frozenset[str] = frozenset()  # candidates the last, cut-short search missed

    def command_for(
        self, chosen: Sequence[Candidate], budgets: Mapping[str, int], what_if: WhatIf
    ) -> Outcome:
        deadline = time.monotonic() + SINGLE_NODE_TIMEOUT
        spot_to_spot = self.spot_to_spot
        if self.untried:  # a search cut short last time starts where it stopped
            chosen = sorted(chosen, key=lambda c: c.name not in self.untried)
        outcome = single_node_command(
            chosen, what_if, spot_to_spot=spot_to_spot,
            out_of_time=lambda: time.monotonic() > deadline,
            why_not=lambda c: what_if.why_not(c, spot_to_spot=spot_to_spot),
            emptying=what_if.emptying, scorer=scorer_for(what_if),
        )  # fmt: skip
        # Cut short, it has not looked at every candidate: the next pass searches again,
        # those it did not reach first (Karpenter favours the pools a timeout left unseen).
        self.untried = frozenset(outcome.untried)
        if outcome.command is None and not outcome.timed_out:
            self.consolidated.mark_consolidated(what_if, budgets)
        return outcome
