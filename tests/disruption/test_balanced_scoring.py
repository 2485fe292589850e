"""The arithmetic of the Balanced score, on the RFC's pool (designs/balanced-consolidation.md
in Karpenter): ten nodes, eight at $4.84/day and two at $9.68/day ($58.08/day), 80 pods
of cost 1 on them (reschedule cost 90: one per node, one per pod)."""

from __future__ import annotations

import math

import pytest

from karpy.disruption.balanced import BALANCED_K, PoolTotals, Score, score_move

POOL = PoolTotals(cost=58.08, disruption=90.0)
UNIFORM = PoolTotals(cost=48.40, disruption=90.0)  # ten nodes at $4.84/day


@pytest.mark.parametrize(
    ("savings", "disruption", "totals", "expected", "approved"),
    [
        # a $9.68 node with 3 pods replaced by a $2.42 one
        (7.26, 4.0, POOL, (7.26 / 58.08) / (4 / 90), True),
        # a $4.84 node with 4 pods whose pods fit elsewhere: deleted
        (4.84, 5.0, POOL, (4.84 / 58.08) / (5 / 90), True),
        # a $4.84 node with 8 pods replaced by a $2.42 one: too little for the disruption
        (2.42, 9.0, POOL, (2.42 / 58.08) / (9 / 90), False),
        # in a pool of equal nodes, a replacement at half the price is the boundary
        (2.42, 9.0, UNIFORM, 0.5, True),
        # a well-packed node replaced by its twin saves nothing
        (0.0, 11.0, POOL, 0.0, False),
        # a replacement dearer than the node
        (-1.0, 2.0, POOL, 0.0, False),
    ],
)
def test_a_move_is_taken_when_its_savings_share_is_at_least_half_its_disruption_share(
    savings: float, disruption: float, totals: PoolTotals, expected: float, approved: bool
) -> None:
    score = score_move(savings, disruption, totals)
    assert score.value == pytest.approx(expected)
    assert score.threshold == 1 / BALANCED_K == 0.5
    assert score.approved is approved


def test_the_same_savings_are_refused_on_the_node_whose_pods_are_dear_to_disrupt() -> None:
    # node A's 4 pods cost 1 each; node B runs 3 pods with the maximum deletion cost (10)
    # and one plain pod: 31; the pool's 76 other pods cost 1 each, plus 10 nodes
    totals = PoolTotals(58.08, 117.0)
    cheap, dear = score_move(4.84, 5.0, totals), score_move(4.84, 32.0, totals)
    assert cheap.approved and cheap.value == pytest.approx(1.95, abs=0.01)
    assert not dear.approved and dear.value == pytest.approx(0.30, abs=0.01)


def test_the_score_does_not_depend_on_the_size_of_the_pool() -> None:
    ten = score_move(7.26, 4.0, POOL)
    hundred = score_move(7.26, 4.0, PoolTotals(580.80, 900.0))
    assert ten.value == pytest.approx(hundred.value)


@pytest.mark.parametrize(("k", "approved"), [(1, False), (2, False), (3, True)])
def test_k_sets_the_threshold(k: int, approved: bool) -> None:
    score = score_move(2.42, 9.0, POOL, k)  # scores 0.42
    assert score.threshold == pytest.approx(1 / k)
    assert score.approved is approved


def test_edge_cases() -> None:
    free = score_move(4.84, 0.0, POOL)
    assert math.isinf(free.value) and free.approved, "positive savings, no disruption"
    assert not score_move(0.0, 0.0, POOL).approved
    assert score_move(4.84, 5.0, PoolTotals(0.0, 90.0)).value == 0, "nothing to measure against"
    assert score_move(4.84, 5.0, PoolTotals(58.08, 0.0)).value == 0
    single = score_move(4.84, 2.0, PoolTotals(4.84, 2.0))
    assert single.value == 1.0 and single.approved, "deleting the only node of a pool"


def test_a_score_is_told_in_karpenters_words() -> None:
    assert Score(0.05, 0.10).describe() == (
        "score 0.50 >= threshold 0.50 (k: 2, savings 5.0%, disruption 10.0%)"
    )
    assert Score(2.42 / 58.08, 0.1).describe() == (
        "score 0.42 < threshold 0.50 (k: 2, savings 4.2%, disruption 10.0%)"
    )
