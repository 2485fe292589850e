"""What multi- and single-node consolidation share (Karpenter's ``consolidation.go``):
which candidates consolidation takes, `consolidate` (delete some nodes, or replace them
with one cheaper node), and `Consolidated`, the memory that nothing was found.

A replacement is only ever cheaper: its instance-type options are cut to those priced
below the nodes it replaces (and, when several nodes are replaced and one of their types
is among the options, below that type), so a node is never replaced by its twin. When
the candidates are all spot and the replacement could be spot, it takes the
``SpotToSpotConsolidation`` gate, a single candidate, and at least 15 cheaper spot types
(fewer would have the replacement chase the cheapest type and churn); an on-demand node
replaced by something that could be spot is pinned to spot, so a spot shortage fails the
launch instead of buying a dearer on-demand node.

A move never fills a node that emptiness is about to remove when that node costs more
than the move saves. An empty node becomes a candidate only once Consolidatable; a pass
that runs in between may find the cheap node beside it underused and move its pods onto
the dear empty one, leaving the dearer node of the two (Karpenter does: a c6g.4xlarge
holding three pods was deleted onto an empty c6g.8xlarge). Such a move is refused with
why; once the empty node is Consolidatable, emptiness removes it, and the end state is
the cheaper one. Filling an empty node that is cheaper than what the move saves is
still taken: that end state is cheaper than removing the empty node.

Under the ``Balanced`` policy a move must also be worth what it disrupts
(`karpy.disruption.balanced`); each method asks the pass's `Scorer` (`scorer_for`).

When consolidation found nothing to do, it is not searched again until pods, nodes,
NodeClaims, NodePools, PDBs, the instance types and prices, or the budgets change, or 30
minutes pass (Karpenter looks again every 5 minutes regardless: at 10,000 nodes that
search cost two minutes of a core every five in an idle cluster).
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.disruption import ConsolidationPolicy, DisruptionReason
from karpy.apis.labels import CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT, LABEL_CAPACITY_TYPE
from karpy.disruption.balanced import Scorer, balanced_pools, savings_ratio
from karpy.disruption.conditions import CONSOLIDATABLE
from karpy.disruption.methods.command import NOTHING, Command, ConsolidationType, Outcome
from karpy.disruption.methods.method import DisruptionClass
from karpy.lifecycle.conditions import is_true
from karpy.scheduling.requirements import Requirement
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence

    from karpy.base.clock import Clock
    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import Simulation, WhatIf
    from karpy.scheduling.results import NodeClaimPlan

__all__ = [
    "CONSOLIDATED_FOR",
    "CONSOLIDATION_INPUTS",
    "MIN_SPOT_TO_SPOT_OPTIONS",
    "UNDERUTILIZED_POLICIES",
    "Consolidated",
    "ConsolidationMethod",
    "can_consolidate",
    "cheaper_replacement",
    "consolidate",
    "consolidation_candidates",
    "emptying_nodes",
    "scorer_for",
    "should_consolidate",
    "take_budget",
]

MIN_SPOT_TO_SPOT_OPTIONS: Final = 15
# Prices per hour closer than this are equal: a move that saves no more than the empty
# nodes it fills gains nothing over emptiness and still disrupts its pods.
PRICE_EPSILON: Final = 1e-9
# Seconds a "nothing to consolidate" answer is trusted while nothing it depends on changed.
CONSOLIDATED_FOR: Final = 1800.0
# The kinds of objects a consolidation answer depends on.
CONSOLIDATION_INPUTS: Final = (kinds.POD, kinds.NODE, kinds.NODECLAIM, kinds.NODEPOOL,
                               kinds.PDB)  # fmt: skip


def can_consolidate(candidate: Candidate) -> bool:
    """Does its pool consolidate at all, and has the node been quiet long enough? A
    static pool's nodes never are: the pool keeps ``replicas`` nodes, empty or not."""
    if candidate.pool.is_static:
        return False
    return candidate.pool.spec.disruption.consolidate_after is not None and is_true(
        candidate.claim, CONSOLIDATABLE
    )


def take_budget(budgets: dict[str, int], candidate: Candidate) -> bool:
    """Reserve one of the pool's remaining disruptions, if any is left."""
    left = budgets.get(candidate.nodepool, 0)
    if left <= 0:
        return False
    budgets[candidate.nodepool] = left - 1
    return True


# The policies under which consolidation takes nodes that are not empty (Balanced then
# scores each move, `karpy.disruption.balanced`).
UNDERUTILIZED_POLICIES: Final = frozenset({ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED,
                                           ConsolidationPolicy.BALANCED})  # fmt: skip


def should_consolidate(candidate: Candidate) -> bool:
    """Is ``candidate`` one consolidation may take (budgets aside): its pool consolidates
    underused nodes (``WhenEmptyOrUnderutilized`` or ``Balanced``), it is Consolidatable,
    and its price is known?"""
    return (
        candidate.pool.spec.disruption.policy in UNDERUTILIZED_POLICIES
        and can_consolidate(candidate)
        and candidate.price is not None
    )


class Consolidated:
    """When consolidation last found nothing, on which inputs: both consolidation
    methods look here first (see the module docstring)."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        # the maps consolidation last found nothing in (held, not their ids: a freed
        # map's id can be reused), and when
        self._seen: tuple[tuple[object, ...], float] | None = None

    def is_consolidated(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        """Did consolidation find nothing less than CONSOLIDATED_FOR seconds ago, on the
        very same inputs?"""
        if self._seen is None:
            return False
        seen, at = self._seen
        unchanged = all(
            a is b or (isinstance(a, tuple) and a == b)
            for a, b in zip(seen, _inputs(what_if, budgets), strict=True)
        )
        return unchanged and self.clock.monotonic() - at < CONSOLIDATED_FOR

    def mark_consolidated(self, what_if: WhatIf, budgets: Mapping[str, int]) -> None:
        self._seen = (_inputs(what_if, budgets), self.clock.monotonic())


def _inputs(what_if: WhatIf, budgets: Mapping[str, int]) -> tuple[object, ...]:
    """Everything an answer depends on: the objects, the compiled instance types and
    prices (the same object while nothing in them changed), the budgets now."""
    snapshot = what_if.snapshot
    return (*(snapshot.of(kind) for kind in CONSOLIDATION_INPUTS), what_if.compiled,
            tuple(sorted(budgets.items())))  # fmt: skip


def consolidation_candidates(
    candidates: Sequence[Candidate], budgets: Mapping[str, int]
) -> list[Candidate]:
    """Candidates of pools that consolidate underused nodes, cheapest to disrupt first,
    as many per pool as its budget allows. When a ``Balanced`` pool is among them, they
    are taken by price per unit of reschedule cost instead, best first (Karpenter's
    order for every pool since Balanced): the score of a growing multi-node prefix then
    only falls, which its binary search relies on."""
    eligible = [c for c in candidates if should_consolidate(c)]
    if balanced_pools(eligible):
        eligible.sort(key=lambda c: (-savings_ratio(c), c.name))
    else:
        eligible.sort(key=lambda c: (c.disruption_cost, c.name))
    left = dict(budgets)
    return [c for c in eligible if take_budget(left, c)]


def emptying_nodes(
    candidates: Iterable[Candidate], empty_allowed: Mapping[str, int] | None = None
) -> dict[str, float]:
    """The empty candidates emptiness removes once they are Consolidatable (their pool
    consolidates at all, their price is known), with their prices per hour.
    ``empty_allowed``: per pool, how many nodes its budgets allow for ``Empty`` now
    (before in-flight disruptions); a pool whose budgets allow none keeps its empty nodes,
    so they are not about to go."""
    return {
        c.name: c.price
        for c in candidates
        if c.empty
        and c.price is not None
        and c.pool.spec.disruption.consolidate_after is not None
        and (empty_allowed is None or empty_allowed.get(c.pool.name, 1) > 0)
    }


def consolidate(
    chosen: Sequence[Candidate],
    simulate: Callable[[Sequence[Candidate]], Simulation],
    *,
    spot_to_spot: bool,
    consolidation_type: ConsolidationType,
    emptying: Mapping[str, float] | None = None,
) -> tuple[Command | None, str]:
    """Karpenter's ``computeConsolidation``: delete ``chosen`` if their pods fit
    elsewhere, replace them with one cheaper node if that is what it takes; else None
    and why not. ``emptying``: `emptying_nodes`, which the move must not fill when they
    cost more than it saves (module docstring)."""
    simulation = simulate(chosen)
    if not simulation.ok:
        return None, "; ".join(simulation.failures[:3])
    reason = DisruptionReason.UNDERUTILIZED
    plans = simulation.new_nodeclaims
    if len(plans) > 1:
        return None, f"can't remove without creating {len(plans)} nodes"
    replacements: tuple[NodeClaimPlan, ...] = ()
    if plans:
        plan, why = cheaper_replacement(plans[0], chosen, spot_to_spot=spot_to_spot)
        if plan is None:
            return None, why
        replacements = (plan,)
    why = _dearer_than_emptiness(simulation, chosen, replacements, emptying or {})
    if why:
        return None, why
    return Command(reason, consolidation_type, tuple(chosen), replacements), ""


def _dearer_than_emptiness(
    simulation: Simulation, chosen: Sequence[Candidate],
    replacements: Sequence[NodeClaimPlan], emptying: Mapping[str, float],
) -> str:  # fmt: skip
    """Why the move ends dearer than letting emptiness remove the empty nodes ("" when
    it does not). Removing an empty node saves nothing emptiness would not save anyway,
    so only the other nodes removed count as savings; the empty nodes the pods would land
    on count against them, since they then stay."""
    if not emptying:
        return ""
    names = {c.name for c in chosen}
    moving = {pod.key for c in chosen for pod in c.reschedulable}
    filled = sorted(
        placement.name
        for placement in simulation.results.existing_nodes
        if placement.name in emptying
        and placement.name not in names
        and any(pod.key in moving for pod in placement.pods)
    )
    if not filled and not names & emptying.keys():
        return ""
    saves = sum(c.price or 0.0 for c in chosen if c.name not in emptying) - sum(
        p.offering.price for p in replacements
    )
    cost = sum(emptying[name] for name in filled)
    if saves > cost + PRICE_EPSILON:
        return ""
    if not filled:
        return (
            f"it saves ${saves:.4f}/h beyond removing the empty nodes among it: "
            "removing only those is cheaper"
        )
    verdict = "dearer than" if cost > saves + PRICE_EPSILON else "as dear as"
    return (
        f"its pods would fill empty node{'s' if len(filled) > 1 else ''} "
        f"{', '.join(filled)} (${cost:.4f}/h), {verdict} the ${saves:.4f}/h this saves: "
        "removing the empty node is cheaper"
    )


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


def scorer_for(what_if: WhatIf) -> Scorer:
    """The Balanced judge of this pass: the pool totals the controller found for it."""
    return Scorer(what_if.pool_totals)


class ConsolidationMethod(abc.ABC):
    """What the two consolidation methods share (Karpenter embeds one ``consolidation`` in
    both): the candidates they take, skipping inputs already found to hold nothing, and
    marking them so when no candidate is left within the budgets. A subclass says how to
    find a command among the chosen candidates (`command_for`)."""

    reason = DisruptionReason.UNDERUTILIZED
    disruption_class = DisruptionClass.GRACEFUL
    simulates = True

    def __init__(self, consolidated: Consolidated, *, spot_to_spot: bool) -> None:
        self.consolidated = consolidated
        self.spot_to_spot = spot_to_spot

    def should_disrupt(self, candidate: Candidate) -> bool:
        return should_consolidate(candidate)

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return not self.consolidated.is_consolidated(what_if, budgets)

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        chosen = consolidation_candidates(candidates, budgets)
        if not chosen:
            self.consolidated.mark_consolidated(what_if, budgets)
            return NOTHING
        return self.command_for(chosen, budgets, what_if)

    @abc.abstractmethod
    def command_for(
        self, chosen: Sequence[Candidate], budgets: Mapping[str, int], what_if: WhatIf
    ) -> Outcome:
        """The command for ``chosen`` (candidates within the budgets), or none."""
