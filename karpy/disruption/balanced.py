"""The ``Balanced`` consolidation policy (Karpenter's ``balanced.go``): a consolidation
move is taken only when what it saves is worth what it disrupts, both measured against
the whole NodePool.

``WhenEmptyOrUnderutilized`` takes any move that saves anything; a move saving a cent an
hour by evicting ten pods is as good as one saving a dollar by evicting one. Balanced
scores each move:

    savings fraction    = (price of the nodes removed - price of the replacement)
                          / price of every node of the pool
    disruption fraction = reschedule cost of the nodes removed
                          / reschedule cost of every node of the pool
    score               = savings fraction / disruption fraction

and takes it when ``score >= 1/k``, with ``k = 2`` (`BALANCED_K`). A node's reschedule
cost is 1 (the node itself) plus its pods' eviction costs, negatives counted as 0
(`karpy.disruption.candidates.reschedule_cost`); a pod with neither a deletion cost nor a
priority costs 1, so by default the score weighs savings against pods moved. Both sides
are shares of the pool, so the score does not change with the pool's size; k = 2 is the
smallest k at which replacing a node by one half its price passes in a pool of equal
nodes (at k = 1 no replacement ever does).

The totals (`PoolTotals`) are taken once per pass over every NodeClaim of the pool, not
only the candidates: a node that is not Consolidatable yet, or blocked by a PDB, still
makes the rest of the pool a smaller share of it. A move across pools is scored by each
Balanced pool it takes nodes from, with the move's net savings shared in proportion to the
price of each pool's nodes, and every one must approve; pools of other policies are not
scored (a move of theirs is judged only so that it is counted). An empty node is
emptiness's (reason ``Empty``) and is never scored.

Single-node consolidation does not try a node whose best move, deleting it outright,
scores below the threshold (`Scorer.worth_trying`): a replacement saves less than a
delete. Multi-node consolidation's binary search treats a refused prefix as a prefix that
does not fit, and shrinks; ordering Balanced candidates by price per unit of reschedule
cost, best first, keeps the prefix's score falling as it grows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.disruption import ConsolidationPolicy
from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE, LABEL_NODEPOOL, LABEL_ZONE
from karpy.disruption.candidates import node_price, reschedule_cost

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.disruption.candidates import Candidate
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.results import NodeClaimPlan
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "BALANCED_K",
    "Judgement",
    "PoolScore",
    "PoolTotals",
    "Score",
    "Scorer",
    "balanced_pools",
    "pool_totals",
    "savings_ratio",
    "score_move",
]

BALANCED_K: Final = 2


@attrs.frozen(slots=True)
class PoolTotals:
    """What a pool's moves are measured against."""

    cost: float  # per hour, every NodeClaim of the pool at its offering's price
    disruption: float  # the reschedule cost of every node of the pool


@attrs.frozen(slots=True)
class Score:
    savings_fraction: float
    disruption_fraction: float
    k: int = BALANCED_K

    @property
    def value(self) -> float:
        """Savings over disruption; 0 when the move saves nothing."""
        if self.savings_fraction <= 0:
            return 0.0
        if self.disruption_fraction == 0:
            return math.inf
        return self.savings_fraction / self.disruption_fraction

    @property
    def threshold(self) -> float:
        return 1.0 / self.k

    @property
    def approved(self) -> bool:
        return self.value >= self.threshold

    def describe(self) -> str:
        """Karpenter's wording, as its ``ConsolidationApproved`` Event has it."""
        relation = ">=" if self.approved else "<"
        return (
            f"score {self.value:.2f} {relation} threshold {self.threshold:.2f} (k: {self.k}, "
            f"savings {self.savings_fraction * 100:.1f}%, "
            f"disruption {self.disruption_fraction * 100:.1f}%)"
        )


def score_move(savings: float, disruption: float, totals: PoolTotals, k: int = BALANCED_K) -> Score:
    """The score of a move saving ``savings`` per hour at reschedule cost ``disruption`` in
    a pool of ``totals``; a pool with nothing to measure against scores every move 0."""
    if totals.cost <= 0 or totals.disruption <= 0:
        return Score(0.0, 0.0, k)
    return Score(savings / totals.cost, disruption / totals.disruption, k)


def savings_ratio(candidate: Candidate) -> float:
    """Price per unit of reschedule cost: the order Balanced tries candidates in, best
    first (an unpriced node last)."""
    return (candidate.price or 0.0) / candidate.reschedule_cost


def balanced_pools(candidates: Iterable[Candidate]) -> set[str]:
    return {
        c.nodepool
        for c in candidates
        if c.pool.spec.disruption.policy is ConsolidationPolicy.BALANCED
    }


def pool_totals(
    snapshot: StateSnapshot,
    candidates: Sequence[Candidate],
    types_by_name: Mapping[str, InstanceType],
    pools: Iterable[str],
    *,
    deletion_cost_managed: bool = False,
) -> dict[str, PoolTotals]:
    """The totals of ``pools``, from every NodeClaim labelled with one of them. A
    candidate counts its reschedule cost as found; any other node, its pods that are
    not DaemonSet pods and have not finished (as Karpenter's cluster state counts them);
    a NodeClaim with no Node yet, the node alone. ``deletion_cost_managed``: as for
    `find_candidates`."""
    wanted = set(pools)
    if not wanted:
        return {}
    by_name = {c.claim.name: c for c in candidates}
    cost = dict.fromkeys(wanted, 0.0)
    disruption = dict.fromkeys(wanted, 0.0)
    for claim in snapshot.nodeclaims.values():
        node = snapshot.node_for_claim(claim.name)
        labels = node.node.labels if node is not None else claim.metadata.labels
        pool = labels.get(LABEL_NODEPOOL) or claim.metadata.labels.get(LABEL_NODEPOOL, "")
        if pool not in wanted:
            continue
        instance_type = types_by_name.get(labels.get(LABEL_INSTANCE_TYPE, ""))
        price = node_price(instance_type, labels.get(LABEL_ZONE, ""),
                           labels.get(LABEL_CAPACITY_TYPE, ""))  # fmt: skip
        cost[pool] += price or 0.0
        candidate = by_name.get(claim.name)
        if candidate is not None:
            disruption[pool] += candidate.reschedule_cost
        elif node is not None:
            pods = snapshot.pods_on(node.name)
            disruption[pool] += reschedule_cost(
                (p for p in pods if not p.pod.is_daemonset_pod and not p.pod.is_terminal),
                deletion_cost_managed=deletion_cost_managed,
            )
        else:
            disruption[pool] += reschedule_cost(())
    return {name: PoolTotals(cost[name], disruption[name]) for name in wanted}


@attrs.frozen(slots=True)
class PoolScore:
    """How one source pool judged a move; ``score`` is None for a pool that is not
    Balanced (its moves are not scored)."""

    nodepool: str
    policy: str  # as the pool spells it: the ``policy`` label
    score: Score | None

    @property
    def approved(self) -> bool:
        return self.score is None or self.score.approved


@attrs.frozen(slots=True)
class Judgement:
    """A consolidation move and each of its source pools' verdict on it."""

    candidates: tuple[Candidate, ...]
    replacements: tuple[NodeClaimPlan, ...]
    pools: tuple[PoolScore, ...]

    @property
    def approved(self) -> bool:
        return all(p.approved for p in self.pools)

    @property
    def scored(self) -> bool:
        return any(p.score is not None for p in self.pools)

    def refusal(self) -> str:
        """Why the move is refused ("" when it is not)."""
        return "; ".join(
            f'nodepool "{p.nodepool}" (Balanced): {p.score.describe()}'
            for p in self.pools
            if p.score is not None and not p.score.approved
        )


class Scorer:
    """Balanced's judge for one pass: the totals of the Balanced pools (`pool_totals`).
    A pool missing from them scores every move 0, as Karpenter's does."""

    def __init__(self, totals: Mapping[str, PoolTotals]) -> None:
        self.totals = totals

    def delete_score(self, candidate: Candidate) -> Score | None:
        """The score of deleting ``candidate`` outright, the best any move of it can do;
        None when its pool is not Balanced or has no totals."""
        totals = self.totals.get(candidate.nodepool)
        if candidate.pool.spec.disruption.policy is not ConsolidationPolicy.BALANCED:
            return None
        if totals is None or totals.cost <= 0:
            return None
        return score_move(candidate.price or 0.0, candidate.reschedule_cost, totals)

    def worth_trying(self, candidate: Candidate) -> bool:
        """Could any move of ``candidate`` alone pass (is deleting it enough)?"""
        score = self.delete_score(candidate)
        return score is None or score.approved

    def judge(
        self, candidates: Sequence[Candidate], replacements: Sequence[NodeClaimPlan]
    ) -> Judgement:
        """Every source pool's verdict on removing ``candidates`` for ``replacements``."""
        source = sum(c.price or 0.0 for c in candidates)
        savings = source - sum(plan.offering.price for plan in replacements)
        by_pool: dict[str, list[Candidate]] = {}
        for c in candidates:
            by_pool.setdefault(c.nodepool, []).append(c)
        pools = []
        for name, mine in sorted(by_pool.items()):
            disruption_spec = mine[0].pool.spec.disruption
            policy = disruption_spec.consolidation_policy
            if disruption_spec.policy is not ConsolidationPolicy.BALANCED:
                pools.append(PoolScore(name, policy, None))
                continue
            share = savings
            if len(by_pool) > 1 and source > 0:
                share = savings * sum(c.price or 0.0 for c in mine) / source
            totals = self.totals.get(name, PoolTotals(0.0, 0.0))
            disruption = sum(c.reschedule_cost for c in mine)
            pools.append(PoolScore(name, policy, score_move(share, disruption, totals)))
        return Judgement(tuple(candidates), tuple(replacements), tuple(pools))
