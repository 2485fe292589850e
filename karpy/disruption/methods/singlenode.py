"""Single-node consolidation, the last method (Karpenter's
``singlenodeconsolidation.go``): the candidates multi-node consolidation takes, one by
one: delete one whose pods fit elsewhere, or replace it with one strictly cheaper node.

A candidate that fails a cheap necessary condition (`karpy.disruption.prefilter`) is
refused without a what-if, and the search stops after ``SINGLE_NODE_TIMEOUT`` seconds.
Every candidate it could not act on is reported (``Unconsolidatable``, with why); when
none could be, consolidation is marked as having found nothing on these inputs.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from karpy.disruption.methods.command import ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import ConsolidationMethod, consolidate

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

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
) -> Outcome:
    """The first candidate that can be deleted or replaced by a cheaper node.

    ``why_not`` is a cheap necessary condition (`karpy.disruption.prefilter`): a
    candidate it refuses is refused with its reason, without a what-if."""
    refused: list[tuple[Candidate, str]] = []
    for candidate in chosen:
        if out_of_time():
            break
        hopeless = why_not(candidate)
        if hopeless:
            refused.append((candidate, hopeless))
            continue
        command, why = consolidate([candidate], simulate, spot_to_spot=spot_to_spot,
                                   consolidation_type=ConsolidationType.SINGLE,
                                   emptying=emptying)  # fmt: skip
        if command is not None:
            return Outcome(command, tuple(refused))
        refused.append((candidate, why))
    return Outcome(None, tuple(refused))


class SingleNodeConsolidation(ConsolidationMethod):
    consolidation_type = ConsolidationType.SINGLE
    refusal_event = "Unconsolidatable"

    def command_for(
        self, chosen: Sequence[Candidate], budgets: Mapping[str, int], what_if: WhatIf
    ) -> Outcome:
        deadline = time.monotonic() + SINGLE_NODE_TIMEOUT
        spot_to_spot = self.spot_to_spot
        outcome = single_node_command(
            chosen, what_if, spot_to_spot=spot_to_spot,
            out_of_time=lambda: time.monotonic() > deadline,
            why_not=lambda c: what_if.why_not(c, spot_to_spot=spot_to_spot),
            emptying=what_if.emptying,
        )  # fmt: skip
        if outcome.command is None:
            self.consolidated.mark_consolidated(what_if, budgets)
        return outcome
