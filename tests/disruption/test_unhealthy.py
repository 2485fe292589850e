"""Which nodes node repair may act on, in which order, and how long their drain may take
(`karpy.disruption.unhealthy`): reason-aware policy matching, the RFC's aging order and
the grace-period composition."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpy.cloud.provider import RepairPolicy
from karpy.disruption.unhealthy import (
    AGING_STEP,
    diagnose,
    priority_ranks,
    repair_grace,
    repair_score,
)
from karpy.state.records import NodeInfo, node_info
from tests import factories as f
from tests.disruption.world import NOW

MIN = timedelta(minutes=1)


def sick_node(type_: str = "Ready", status: str = "False", reason: str = "KubeletNotReady",
              since: timedelta = timedelta(0)) -> NodeInfo:  # fmt: skip
    """A node whose ``type_`` condition took ``status`` (with ``reason``) ``since`` ago."""
    stamp = (NOW - since).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {"type": type_, "status": status, "reason": reason, "message": "",
                 "lastTransitionTime": stamp}  # fmt: skip
    data = f.node("n", ready="True")
    others = [c for c in data["status"]["conditions"] if c["type"] != type_]
    data["status"]["conditions"] = [*others, condition]
    return node_info(data)


def test_a_condition_counts_once_it_has_held_for_the_toleration() -> None:
    policy = RepairPolicy("Ready", "False", 30 * MIN)
    early = diagnose(sick_node(since=10 * MIN), [policy], NOW)
    assert not early.unhealthy and early.next_in == pytest.approx((20 * MIN).total_seconds())
    late = diagnose(sick_node(since=31 * MIN), [policy], NOW)
    assert late.policy is policy and late.eligible_since == NOW - MIN


def test_a_reason_regex_narrows_a_policy_and_none_matches_any_reason() -> None:
    xid = RepairPolicy("AcceleratedHardwareReady", "False", 10 * MIN, reason_regex="Xid(79|48)")
    node = sick_node("AcceleratedHardwareReady", reason="NvidiaXid48Error", since=11 * MIN)
    assert diagnose(node, [xid], NOW).unhealthy, "searched anywhere in the reason"
    other = sick_node("AcceleratedHardwareReady", reason="NvidiaXid13Error", since=11 * MIN)
    assert not diagnose(other, [xid], NOW).unhealthy
    anything = RepairPolicy("AcceleratedHardwareReady", "False", 10 * MIN)
    assert diagnose(other, [anything], NOW).unhealthy


def test_of_several_matching_policies_the_one_eligible_first_decides() -> None:
    slow = RepairPolicy("Ready", "False", 30 * MIN, priority=90)
    fast = RepairPolicy("Ready", "False", 10 * MIN, reason_regex="Kubelet", priority=10)
    node = sick_node(since=40 * MIN)
    assert diagnose(node, [slow, fast], NOW).policy is fast


def test_priority_is_compressed_to_a_dense_rank() -> None:
    policies = [RepairPolicy("A", "False", MIN, priority=p) for p in (100, 5, 5, 40)]
    assert priority_ranks(policies) == {5: 0, 40: 1, 100: 2}


def test_waiting_one_aging_step_is_worth_one_rank() -> None:
    low = RepairPolicy("Ready", "False", MIN, priority=0)
    high = RepairPolicy("KernelReady", "False", MIN, priority=50)
    ranks = priority_ranks([low, high])
    fresh_high = diagnose(sick_node("KernelReady", since=MIN), [low, high], NOW)
    old_low = diagnose(sick_node(since=MIN + AGING_STEP * 2), [low, high], NOW)
    assert repair_score(fresh_high, ranks, NOW) == 1
    assert repair_score(old_low, ranks, NOW) == 2, "aged two steps: past one rank"


@pytest.mark.parametrize(
    ("policy", "nodeclaim", "grace"),
    [
        (timedelta(0), timedelta(hours=1), timedelta(0)),  # forceful wins
        (None, timedelta(hours=1), timedelta(hours=1)),  # inherit
        (None, None, None),  # inherit: unbounded
        (timedelta(minutes=5), None, timedelta(minutes=5)),  # its own bound
        (timedelta(minutes=5), timedelta(minutes=2), timedelta(minutes=2)),  # never looser
        (timedelta(minutes=5), timedelta(hours=1), timedelta(minutes=5)),  # tighter
    ],
)
def test_the_drain_bound_is_the_minimum_of_policy_and_nodeclaim(
    policy: timedelta | None, nodeclaim: timedelta | None, grace: timedelta | None
) -> None:
    assert repair_grace(policy, nodeclaim) == grace
