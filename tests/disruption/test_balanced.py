"""The Balanced consolidation policy on small clusters, decided through the controller's
own functions (candidates, pool totals, what-if rounds, the methods) and whole passes:
a move is taken only when its share of the pool's cost saved is at least half its share
of the pool's disruption."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from karpy.disruption.balanced import Scorer, balanced_pools, pool_totals, savings_ratio
from karpy.disruption.explain import explain_node
from karpy.disruption.methods.command import Decision, Outcome
from karpy.disruption.methods.consolidation import consolidation_candidates
from karpy.disruption.methods.multinode import multi_node_command
from karpy.disruption.methods.singlenode import single_node_command
from karpy.observability.karpenter_metrics import KarpenterMetrics
from tests import factories as f
from tests.disruption.deciders import decider
from tests.disruption.world import NOW, TYPES, World, managed_node, nodepool, pod_on

Obj = dict[str, Any]
BALANCED = nodepool(consolidationPolicy="Balanced")
UNDERUTILIZED = nodepool()
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def on_demand(instance_type: str) -> float:
    return min(o.price for o in TYPES[instance_type].offerings
               if o.capacity_type == "on-demand" and o.zone == "test-zone-a")  # fmt: skip


def scorer(world: World) -> Scorer:
    candidates = world.candidates()
    return Scorer(pool_totals(world.snapshot, candidates, TYPES, balanced_pools(candidates)))


def single(world: World) -> Outcome:
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    return single_node_command(chosen, world.simulate, spot_to_spot=False, scorer=scorer(world))


def multi(world: World) -> Outcome:
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    return multi_node_command(chosen, world.simulate, spot_to_spot=False, scorer=scorer(world))


def two_full_nodes(pool: Obj) -> list[Obj]:
    """Two on-demand c-2x nodes, each running one pod too big to share a node with the
    other: each can only be replaced by a spot c-2x, saving 30% of its price (15% of the
    pool's) for half the pool's disruption: a score of 0.3."""
    return [pool, *managed_node("a", "c-2x-amd64-linux"), pod_on("a", "big-a", cpu="1200m"),
            *managed_node("b", "c-2x-amd64-linux"), pod_on("b", "big-b", cpu="1200m")]  # fmt: skip


def lone_big_node(pool: Obj) -> list[Obj]:
    """One on-demand c-8x running one small pod: replaced by a spot c-1x it saves 91% of
    the pool's cost for all of its disruption."""
    return [pool, *managed_node("big", "c-8x-amd64-linux"), pod_on("big", "web-1")]


# --- candidates and their costs -------------------------------------------------------------


def test_a_candidates_reschedule_cost_counts_its_pods_from_1_unscaled_by_lifetime() -> None:
    world = World([
        BALANCED, *managed_node("a", "c-4x-amd64-linux"),
        pod_on("a", "plain"),
        pod_on("a", "precious", annotations={DELETION_COST: str(2**30)}),  # 1 + 8
        pod_on("a", "priceless", annotations={DELETION_COST: str(2**31 - 1)}),  # capped: 10
        pod_on("a", "expendable", annotations={DELETION_COST: str(-(2**30))}),  # 1 - 8: 0
        f.pod("agent-a", node_name="a", requests={"cpu": "100m"},
              owner_references=[f.owner_reference("DaemonSet", "agent", api_version="apps/v1")]),
    ])  # fmt: skip
    (candidate,) = world.candidates()
    assert candidate.reschedule_cost == pytest.approx(1 + 1 + 9 + 10 + 0)
    # the order consolidation tries candidates in is scaled by the lifetime left (the
    # NodeClaim is 12 of its 720 hours old) and counts negative costs
    assert candidate.disruption_cost < 1 + 9 + 10 - 7 + 1


def test_pool_totals_count_every_node_of_the_pool_not_only_the_candidates() -> None:
    world = World([
        *two_full_nodes(BALANCED),
        # blocked: not a candidate, but a node of the pool
        *managed_node("kept", "c-4x-amd64-linux"),
        pod_on("kept", "pinned", annotations={"karpenter.sh/do-not-disrupt": "true"}),
        pod_on("kept", "done", phase="Succeeded"),  # finished: not counted
    ])  # fmt: skip
    assert [c.name for c in world.candidates()] == ["a", "b"]
    totals = pool_totals(world.snapshot, world.candidates(), TYPES, {"default"})
    c2x, c4x = (on_demand(t) for t in ("c-2x-amd64-linux", "c-4x-amd64-linux"))
    assert totals["default"].cost == pytest.approx(2 * c2x + c4x)
    assert totals["default"].disruption == pytest.approx(2 + 2 + 2)
    assert pool_totals(world.snapshot, world.candidates(), TYPES, ()) == {}


# --- single node ----------------------------------------------------------------------------


def test_a_replacement_that_saves_enough_for_its_disruption_is_taken() -> None:
    outcome = single(World(lone_big_node(BALANCED)))
    assert outcome.command is not None
    assert outcome.command.decision is Decision.REPLACE
    (judgement,) = outcome.judged
    (verdict,) = judgement.pools
    assert verdict.score is not None and verdict.score.approved
    assert verdict.score.disruption_fraction == 1.0
    assert verdict.score.value == pytest.approx(verdict.score.savings_fraction)
    assert verdict.score.value > 0.9


def test_a_replacement_scoring_below_one_half_is_refused_and_said_so_by_explain() -> None:
    world = World(two_full_nodes(BALANCED))
    outcome = single(world)
    assert outcome.command is None
    assert outcome.unconsolidatable == (), "a refused score is no Unconsolidatable Event"
    assert [j.approved for j in outcome.judged] == [False, False]
    score = outcome.judged[0].pools[0].score
    assert score is not None and score.value == pytest.approx(0.3, abs=0.01)
    lines = explain_node(world.snapshot, world.compiled, "a", now=NOW, settings=world.settings)
    (said,) = [line for line in lines if "consolidation:" in line]
    assert "Balanced" in said and "replace it with c-2x-amd64-linux spot" in said
    assert "score 0.30 < threshold 0.50 (k: 2" in said


def test_the_same_move_is_taken_in_a_whenemptyorunderutilized_pool() -> None:
    outcome = single(World(two_full_nodes(UNDERUTILIZED)))
    assert outcome.command is not None and outcome.command.decision is Decision.REPLACE
    (judgement,) = outcome.judged
    assert judgement.approved and not judgement.scored, "judged to be counted, not scored"


def test_a_node_whose_pods_fit_elsewhere_is_deleted() -> None:
    world = World([BALANCED, *managed_node("a", "c-2x-amd64-linux"), pod_on("a", "web-1"),
                   *managed_node("b", "c-2x-amd64-linux"), pod_on("b", "web-2")])  # fmt: skip
    outcome = single(world)
    assert outcome.command is not None and outcome.command.decision is Decision.DELETE
    score = outcome.judged[-1].pools[0].score
    assert score is not None and score.value == pytest.approx(1.0), "half the cost, half the pods"


def test_a_node_not_worth_deleting_is_not_tried_and_explain_says_why() -> None:
    # "small" holds six of the pool's seven pods; the big node beside it is blocked
    pinned = pod_on("big", "pinned", annotations={"karpenter.sh/do-not-disrupt": "true"})
    objects = [BALANCED, *managed_node("small", "c-1x-amd64-linux"),
               *[pod_on("small", f"web-{i}", cpu="100m") for i in range(6)],
               *managed_node("big", "c-8x-amd64-linux"), pinned]  # fmt: skip
    world = World(objects)
    outcome = single(world)
    assert outcome.command is None and outcome.judged == () and outcome.unconsolidatable == ()
    lines = explain_node(world.snapshot, world.compiled, "small", now=NOW,
                         settings=world.settings)  # fmt: skip
    (said,) = [line for line in lines if "consolidation:" in line]
    assert "even deleting it would score 0.14 < threshold 0.50" in said
    # under WhenEmptyOrUnderutilized the pods move onto the big node
    underused = World([UNDERUTILIZED, *objects[1:]])
    chosen = consolidation_candidates(underused.candidates(), {"default": 10})
    taken = single_node_command(chosen, underused.simulate, spot_to_spot=False)
    assert taken.command is not None and taken.command.decision is Decision.DELETE


def test_balanced_candidates_are_tried_best_savings_per_disruption_first() -> None:
    world = World([
        BALANCED,
        *managed_node("busy", "c-8x-amd64-linux"), *[pod_on("busy", f"b-{i}") for i in range(9)],
        *managed_node("idle", "c-4x-amd64-linux"), pod_on("idle", "i-0"),
        *managed_node("cheap", "c-1x-amd64-linux"), pod_on("cheap", "c-0"),
    ])  # fmt: skip
    # $/h per unit of reschedule cost: idle 0.109/2, busy 0.217/10, cheap 0.027/2
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    assert [c.name for c in chosen] == ["idle", "busy", "cheap"]
    ratios = [savings_ratio(c) for c in chosen]
    assert ratios == sorted(ratios, reverse=True)
    # a pool without Balanced keeps the cheapest-to-disrupt-first order
    plain = World([UNDERUTILIZED, *world.objects[1:]])
    order = [c.name for c in consolidation_candidates(plain.candidates(), {"default": 10})]
    assert order == ["cheap", "idle", "busy"]


# --- multi node -----------------------------------------------------------------------------


def test_several_nodes_are_removed_at_once_when_the_move_is_worth_it() -> None:
    objects = [BALANCED]
    for i in range(4):
        objects += [*managed_node(f"n{i}", "c-2x-amd64-linux"), pod_on(f"n{i}", f"web-{i}")]
    outcome = multi(World(objects))
    assert outcome.command is not None and len(outcome.command.candidates) >= 3
    (judgement,) = outcome.judged
    assert judgement.approved and judgement.scored


def test_a_multi_node_move_refused_by_the_score_is_not_taken() -> None:
    # both candidates' pods fit on a big node that is blocked (do-not-disrupt) and empty:
    # deleting both saves a third of the pool's cost for four fifths of its disruption
    objects = [BALANCED,
               *managed_node("a", "c-4x-amd64-linux"), pod_on("a", "web-a", cpu="1500m"),
               *managed_node("b", "c-4x-amd64-linux"), pod_on("b", "web-b", cpu="1500m"),
               *managed_node("big", "c-16x-amd64-linux")]  # fmt: skip
    objects[-1]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    outcome = multi(World(objects))
    assert outcome.command is None
    (judgement,) = outcome.judged
    assert not judgement.approved
    assert "score 0.42 < threshold 0.50" in judgement.refusal()
    underused = World([UNDERUTILIZED, *objects[1:]])
    chosen = consolidation_candidates(underused.candidates(), {"default": 10})
    taken = multi_node_command(chosen, underused.simulate, spot_to_spot=False)
    assert taken.command is not None and len(taken.command.candidates) == 2


# --- a whole pass: Events and metrics ----------------------------------------------------


def karpenter_metrics() -> tuple[KarpenterMetrics, CollectorRegistry]:
    registry = CollectorRegistry()
    metrics = KarpenterMetrics(registry)
    return metrics, registry


def test_a_pass_reports_an_approved_move_on_the_node_and_counts_it() -> None:
    metrics, registry = karpenter_metrics()
    deciding = decider(lone_big_node(BALANCED), metrics=metrics)
    deciding.events_of_a_pass()
    approved = [e for e in deciding.recorder.events if e.reason == "ConsolidationApproved"]
    assert sorted(e.involved.kind for e in approved) == ["Node", "NodeClaim"]
    assert approved[0].message.startswith("score 0.91 >= threshold 0.50 (k: 2, savings 91.")
    labels = {"decision": "approved", "nodepool": "default", "policy": "Balanced"}
    assert registry.get_sample_value("karpenter_consolidation_moves_total", labels) == 1
    assert registry.get_sample_value("karpenter_consolidation_score_count", labels) == 1
    assert registry.get_sample_value(
        "karpenter_consolidation_score_bucket", {**labels, "le": "0.5"}
    ) == 0  # fmt: skip


def test_a_pass_counts_refused_moves_without_events() -> None:
    metrics, registry = karpenter_metrics()
    deciding = decider(two_full_nodes(BALANCED), metrics=metrics)
    deciding.events_of_a_pass()
    reasons = {e.reason for e in deciding.recorder.events}
    assert "ConsolidationApproved" not in reasons and "Unconsolidatable" not in reasons
    # multi-node's one move (both nodes onto one spot c-4x) and single-node's two
    labels = {"decision": "rejected", "nodepool": "default", "policy": "Balanced"}
    assert registry.get_sample_value("karpenter_consolidation_moves_total", labels) == 3
    assert registry.get_sample_value(
        "karpenter_consolidation_score_bucket", {**labels, "le": "0.33"}
    ) == 3  # fmt: skip


def test_a_pass_counts_whenemptyorunderutilized_moves_as_approved_and_scores_none() -> None:
    metrics, registry = karpenter_metrics()
    deciding = decider(two_full_nodes(UNDERUTILIZED), metrics=metrics)
    deciding.events_of_a_pass()
    labels = {"decision": "approved", "nodepool": "default",
              "policy": "WhenEmptyOrUnderutilized"}  # fmt: skip
    assert registry.get_sample_value("karpenter_consolidation_moves_total", labels) == 1
    assert registry.get_sample_value("karpenter_consolidation_score_count", labels) is None
    assert not [e for e in deciding.recorder.events if e.reason == "ConsolidationApproved"]


def test_a_multi_node_move_is_reported_on_the_nodepool() -> None:
    objects = [BALANCED]
    for i in range(4):
        objects += [*managed_node(f"n{i}", "c-2x-amd64-linux"), pod_on(f"n{i}", f"web-{i}")]
    deciding = decider(objects)
    deciding.events_of_a_pass()
    approved = [e for e in deciding.recorder.events if e.reason == "ConsolidationApproved"]
    assert [(e.involved.kind, e.involved.name) for e in approved] == [("NodePool", "default")]
    assert approved[0].involved.uid == "pool-uid"


def test_a_move_across_pools_is_scored_by_its_balanced_pool_on_its_share_of_the_savings() -> None:
    other = nodepool()
    other["metadata"] = {**other["metadata"], "name": "other", "uid": "other-uid"}
    elsewhere = managed_node("o", "c-4x-amd64-linux")
    for obj in elsewhere:
        obj["metadata"]["labels"]["karpenter.sh/nodepool"] = "other"
    world = World([*two_full_nodes(BALANCED), other, *elsewhere, pod_on("o", "web-o")])
    a, _, o = world.candidates()
    judgement = scorer(world).judge([a, o], ())
    by_pool = {p.nodepool: p for p in judgement.pools}
    assert by_pool["other"].score is None, "a WhenEmptyOrUnderutilized pool is not scored"
    score = by_pool["default"].score
    assert score is not None and a.price is not None
    # the delete saves both nodes' prices; "default" is credited with its own node's
    assert score.savings_fraction == pytest.approx(a.price / (2 * a.price))
    assert score.disruption_fraction == pytest.approx(2 / 4)
    assert judgement.approved
