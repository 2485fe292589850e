"""Multi-node consolidation, the third method (Karpenter's
``multinodeconsolidation.go``): Consolidatable candidates of ``WhenEmptyOrUnderutilized``
pools, cheapest to disrupt first, within the ``Underutilized`` budget (at most 100): a
binary search for the longest prefix whose pods fit on the rest of the cluster plus at
most one new node cheaper than them all.

The search keeps no per-node reasons: a prefix that fails says nothing about any one
node, so refusals are left to single-node consolidation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.disruption.methods.command import NOTHING, Command, ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import ConsolidationMethod, consolidate

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

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
) -> Outcome:
    """The longest prefix (at least two) of ``chosen`` that one command can remove."""
    chosen = list(chosen[:MAX_MULTI_NODE_CANDIDATES])
    if len(chosen) < 2:
        return NOTHING
    low, high = 1, len(chosen) - 1
    best: Command | None = None
    while low <= high:
        mid = (low + high) // 2
        command, _ = consolidate(chosen[: mid + 1], simulate, spot_to_spot=spot_to_spot,
                                 consolidation_type=ConsolidationType.MULTI,
                                 emptying=emptying)  # fmt: skip
        if command is not None:
            best, low = command, mid + 1
        else:
            high = mid - 1
    return Outcome(best)


class MultiNodeConsolidation(ConsolidationMethod):
    consolidation_type = ConsolidationType.MULTI
    refusal_event = ""

    def command_for(
        self, chosen: Sequence[Candidate], budgets: Mapping[str, int], what_if: WhatIf
    ) -> Outcome:
        return multi_node_command(chosen, what_if, spot_to_spot=self.spot_to_spot,
                                  emptying=what_if.emptying)  # fmt: skip
