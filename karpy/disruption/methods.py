"""The disruption methods, in Karpenter's order, each turning candidates into at most one
`Command` per pass (or none, with the reasons why not).

1. **Emptiness** (`empty_command`): empty, Consolidatable candidates of pools that
   consolidate at all (``WhenEmpty`` and ``WhenEmptyOrUnderutilized``), as many as each
   pool's ``Empty`` budget allows, deleted together.
2. **Drift** (`drift_command`): Drifted candidates, oldest drift first and empty ones
   before the others, one at a time within the ``Drifted`` budget: replaced by what the
   scheduler says their pods need (nothing, for an empty one), then deleted.
3. **Multi-node consolidation** (`multi_node_command`): Consolidatable candidates of
   ``WhenEmptyOrUnderutilized`` pools, cheapest to disrupt first, within the
   ``Underutilized`` budget (at most 100): a binary search for the longest prefix whose
   pods fit on the rest of the cluster plus at most one new node cheaper than them all.
4. **Single-node consolidation** (`single_node_command`): the same candidates one by one:
   delete one whose pods fit elsewhere, or replace it with one strictly cheaper node;
   a candidate that fails a cheap necessary condition (`karpy.disruption.prefilter`)
   is refused without a what-if.

A replacement is only ever cheaper: its instance-type options are cut to those priced
below the nodes it replaces (and, when several nodes are replaced and one of their types
is among the options, below that type), so a node is never replaced by its twin. When
the candidates are all spot and the replacement could be spot, it takes the
``SpotToSpotConsolidation`` gate, a single candidate, and at least 15 cheaper spot types
(fewer would have the replacement chase the cheapest type and churn); an on-demand node
replaced by something that could be spot is pinned to spot, so a spot shortage fails the
launch instead of buying a dearer on-demand node.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, LABEL_CAPACITY_TYPE
from karpy.disruption.budgets import DisruptionReason
from karpy.disruption.conditions import CONSOLIDATABLE, DRIFTED
from karpy.lifecycle.conditions import is_true
from karpy.scheduling.requirements import Requirement

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import Simulation
    from karpy.scheduling.results import NodeClaimPlan

__all__ = [
    "MAX_MULTI_NODE_CANDIDATES",
    "MIN_SPOT_TO_SPOT_OPTIONS",
    "Command",
    "ConsolidationType",
    "Decision",
    "cheaper_replacement",
    "drift_command",
    "empty_command",
    "multi_node_command",
    "single_node_command",
]

MAX_MULTI_NODE_CANDIDATES: Final = 100
MIN_SPOT_TO_SPOT_OPTIONS: Final = 15
WHEN_EMPTY_OR_UNDERUTILIZED: Final = "WhenEmptyOrUnderutilized"


class ConsolidationType(enum.StrEnum):
    """The ``consolidation_type`` label of Karpenter's decision metrics."""

    EMPTY = "empty"
    DRIFT = ""  # drift is not consolidation
    MULTI = "multi"
    SINGLE = "single"


class Decision(enum.StrEnum):
    DELETE = "delete"
    REPLACE = "replace"


@attrs.frozen(slots=True)
class Command:
    reason: DisruptionReason
    consolidation_type: ConsolidationType
    candidates: tuple[Candidate, ...]
    replacements: tuple[NodeClaimPlan, ...] = ()

    @property
    def decision(self) -> Decision:
        return Decision.REPLACE if self.replacements else Decision.DELETE

    def describe(self) -> str:
        names = ", ".join(c.name for c in self.candidates[:5])
        if len(self.candidates) > 5:
            names += f" and {len(self.candidates) - 5} more"
        what = f"{self.decision} {len(self.candidates)} node(s) ({names})"
        if self.replacements:
            types = ", ".join(sorted({r.instance_type.name for r in self.replacements}))
            what += f" with {len(self.replacements)} new node(s) ({types})"
        return f"{what}: {self.reason}"


@attrs.frozen(slots=True)
class Outcome:
    """A method's answer: a command, or none with the per-node reasons why not."""

    command: Command | None = None
    unconsolidatable: tuple[tuple[Candidate, str], ...] = ()


NOTHING: Final = Outcome()


def _can_consolidate(candidate: Candidate) -> bool:
    return candidate.pool.spec.disruption.consolidate_after is not None and is_true(
        candidate.claim, CONSOLIDATABLE
    )


def _take(budgets: dict[str, int], candidate: Candidate) -> bool:
    """Reserve one of the pool's remaining disruptions, if any is left."""
    left = budgets.get(candidate.nodepool, 0)
    if left <= 0:
        return False
    budgets[candidate.nodepool] = left - 1
    return True


# --- 1. emptiness --------------------------------------------------------------------------


def empty_command(candidates: Sequence[Candidate], budgets: dict[str, int]) -> Outcome:
    chosen = [
        c
        for c in sorted(candidates, key=lambda c: (c.disruption_cost, c.name))
        if c.empty and _can_consolidate(c) and _take(budgets, c)
    ]
    if not chosen:
        return NOTHING
    return Outcome(Command(DisruptionReason.EMPTY, ConsolidationType.EMPTY, tuple(chosen)))


# --- 2. drift ------------------------------------------------------------------------------


def drift_command(
    candidates: Sequence[Candidate],
    budgets: dict[str, int],
    simulate: Callable[[Sequence[Candidate]], Simulation],
) -> Outcome:
    drifted = [c for c in candidates if is_true(c.claim, DRIFTED)]

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
            blocked.append((candidate, "; ".join(simulation.failures[:3])))
            continue
        replacements = simulation.new_nodeclaims
        command = Command(DisruptionReason.DRIFTED, ConsolidationType.DRIFT, (candidate,),
                          replacements)  # fmt: skip
        return Outcome(command, tuple(blocked))
    return Outcome(None, tuple(blocked))


# --- 3 and 4. consolidation -------------------------------------------------------------------


def consolidation_candidates(
    candidates: Sequence[Candidate], budgets: dict[str, int]
) -> list[Candidate]:
    """Candidates of pools that consolidate underused nodes, cheapest to disrupt first,
    as many per pool as its budget allows."""
    eligible = sorted(
        (
            c
            for c in candidates
            if c.pool.spec.disruption.consolidation_policy == WHEN_EMPTY_OR_UNDERUTILIZED
            and _can_consolidate(c)
            and c.price is not None
        ),
        key=lambda c: (c.disruption_cost, c.name),
    )
    left = dict(budgets)
    return [c for c in eligible if _take(left, c)]


def consolidate(
    chosen: Sequence[Candidate],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    spot_to_spot: bool,
    consolidation_type: ConsolidationType,
) -> tuple[Command | None, str]:
    """Karpenter's ``computeConsolidation``: delete ``chosen`` if their pods fit
    elsewhere, replace them with one cheaper node if that is what it takes; else None
    and why not."""
    simulation = simulate(chosen)
    if not simulation.ok:
        return None, "; ".join(simulation.failures[:3])
    reason = DisruptionReason.UNDERUTILIZED
    plans = simulation.new_nodeclaims
    if not plans:
        return Command(reason, consolidation_type, tuple(chosen)), ""
    if len(plans) > 1:
        return None, f"can't remove without creating {len(plans)} nodes"
    plan, why = cheaper_replacement(plans[0], chosen, spot_to_spot=spot_to_spot)
    if plan is None:
        return None, why
    return Command(reason, consolidation_type, tuple(chosen), (plan,)), ""


def cheaper_replacement(
    plan: NodeClaimPlan, replaced: Sequence[Candidate], *, spot_to_spot: bool
) -> tuple[NodeClaimPlan | None, str]:
    """``plan`` cut to instance types strictly cheaper than what it replaces (see the
    module docstring), or None and why no replacement is worth it."""
    total = sum(c.price or 0.0 for c in replaced)
    index, requirements = plan.index, plan.requirements
    ordered = index.order_by_price(plan.options, requirements)
    if len(replaced) > 1:
        own = {c.instance_type for c in replaced}
        same = [price for price, it in ordered if it.name in own]
        if same:
            total = min(total, *same)
    cheaper = [(price, it) for price, it in ordered if price < total]
    if not cheaper:
        return None, "can't replace with a cheaper node"
    capacity_types = requirements.get(LABEL_CAPACITY_TYPE)
    all_spot = all(c.capacity_type == CAPACITY_TYPE_SPOT for c in replaced)
    if all_spot and capacity_types.has(CAPACITY_TYPE_SPOT):
        if not spot_to_spot:
            return None, (
                "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"
            )
        if len(replaced) > 1:
            return None, "spot-to-spot consolidation replaces one node at a time"
        if len(cheaper) < MIN_SPOT_TO_SPOT_OPTIONS:
            return None, (
                f"SpotToSpotConsolidation requires {MIN_SPOT_TO_SPOT_OPTIONS} cheaper "
                f"instance type options than the current candidate to consolidate, got "
                f"{len(cheaper)}"
            )
    mask = 0
    for _, it in cheaper:
        mask |= 1 << index.position(it)
    if capacity_types.has(CAPACITY_TYPE_SPOT) and capacity_types.has(CAPACITY_TYPE_ON_DEMAND):
        requirements = requirements.replace(Requirement.in_values(LABEL_CAPACITY_TYPE,
                                                                  CAPACITY_TYPE_SPOT))  # fmt: skip
    cheapest = cheaper[0][1]
    offering = min(
        (o for o in cheapest.offerings if o.available and o.compatible(requirements)),
        key=lambda o: o.price,
        default=plan.offering,
    )
    return attrs.evolve(plan, options=mask, requirements=requirements,
                        instance_type=cheapest, offering=offering), ""  # fmt: skip


def multi_node_command(
    chosen: Sequence[Candidate],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    spot_to_spot: bool,
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
                                 consolidation_type=ConsolidationType.MULTI)  # fmt: skip
        if command is not None:
            best, low = command, mid + 1
        else:
            high = mid - 1
    return Outcome(best)


def single_node_command(
    chosen: Sequence[Candidate],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    spot_to_spot: bool,
    out_of_time: Callable[[], bool] = lambda: False,
    why_not: Callable[[Candidate], str] = lambda _: "",
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
                                   consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
        if command is not None:
            return Outcome(command, tuple(refused))
        refused.append((candidate, why))
    return Outcome(None, tuple(refused))
