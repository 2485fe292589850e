"""Disruption budget arithmetic (Karpenter's semantics), with properties over random
budgets, schedules and times."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from croniter import croniter
from hypothesis import given, settings
from hypothesis import strategies as st

from karpy.apis.disruption import DisruptionReason
from karpy.apis.nodepool import Budget, NodePool
from karpy.disruption.budgets import (
    UNLIMITED,
    allowed_by_budgets,
    budget_is_active,
    scaled_nodes,
)
from tests import factories as f

T0 = datetime(2026, 3, 4, 9, 30, tzinfo=UTC)
SCHEDULES = ["0 9 * * *", "*/15 * * * *", "30 9 * * 1-5", "@daily", "@hourly", "0 0 1 * *"]


def pool_with(*budgets: dict[str, object]) -> NodePool:
    doc = f.nodepool("default")
    doc["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                 "consolidateAfter": "0s", "budgets": list(budgets)}  # fmt: skip
    return NodePool.from_dict(doc)


@given(st.integers(0, 2000), st.integers(0, 100))
def test_a_percentage_rounds_up_like_max_unavailable(total: int, percent: int) -> None:
    assert scaled_nodes(f"{percent}%", total) == math.ceil(total * percent / 100)


def test_a_count_is_a_count_and_ten_percent_of_ten_is_one() -> None:
    assert scaled_nodes("3", 100) == 3
    assert scaled_nodes("10%", 10) == 1
    assert scaled_nodes("5%", 10) == 1, "rounded up: 0.5 node allows one"
    assert scaled_nodes("0%", 10) == 0


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(SCHEDULES),
    st.integers(0, 60 * 24 * 40),  # minutes after T0
    st.integers(1, 60 * 30),  # duration in minutes
)
def test_a_scheduled_budget_is_active_from_each_cron_hit_for_its_duration(
    schedule: str, offset: int, minutes: int
) -> None:
    now = T0 + timedelta(minutes=offset)
    budget = Budget(nodes="0", schedule=schedule, duration=timedelta(minutes=minutes))
    # By brute force: a hit in (now - duration, now].
    start = now - timedelta(minutes=minutes)
    hit = croniter(schedule, start).get_next(datetime)
    assert budget_is_active(budget, now) == (hit <= now)
    # and checked minute by minute for short windows
    if minutes <= 120:
        hits = [
            start + timedelta(minutes=m)
            for m in range(1, minutes + 1)
            if croniter.match(schedule, start + timedelta(minutes=m))
        ]
        assert budget_is_active(budget, now) == bool(hits)


def test_a_window_ends_exactly_duration_after_its_hit() -> None:
    budget = Budget(nodes="0", schedule="0 9 * * *", duration=timedelta(hours=1))
    day = datetime(2026, 3, 4, tzinfo=UTC)
    assert not budget_is_active(budget, day.replace(hour=8, minute=59))
    assert budget_is_active(budget, day.replace(hour=9))
    assert budget_is_active(budget, day.replace(hour=9, minute=59))
    assert not budget_is_active(budget, day.replace(hour=10))


@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(0, 50).map(str), st.integers(0, 100).map(lambda p: f"{p}%")),
            st.sets(st.sampled_from(list(DisruptionReason))),
            st.booleans(),  # scheduled (and closed now)
        ),
        max_size=5,
    ),
    st.sampled_from(list(DisruptionReason)),
    st.integers(0, 300),
    st.integers(0, 50),
)
def test_the_most_restrictive_active_applying_budget_wins(
    specs: list[tuple[str, set[DisruptionReason], bool]],
    reason: DisruptionReason,
    total: int,
    disrupting: int,
) -> None:
    budgets: list[dict[str, object]] = []
    for nodes, reasons, scheduled in specs:
        budget: dict[str, object] = {"nodes": nodes}
        if reasons:
            budget["reasons"] = sorted(reasons)
        if scheduled:  # a window that opened a year ago for an hour: closed now
            budget |= {"schedule": "0 0 1 1 *", "duration": "1h"}
        budgets.append(budget)
    verdict = allowed_by_budgets(pool_with(*budgets), reason, total=total,
                                 disrupting=disrupting, now=T0)  # fmt: skip
    applying = [
        scaled_nodes(nodes, total)
        for nodes, reasons, scheduled in specs
        if not scheduled and (not reasons or reason in reasons)
    ]
    expected = min(applying, default=UNLIMITED)
    assert verdict.allowed == expected
    assert verdict.remaining == max(0, expected - disrupting)


def test_no_budget_for_a_reason_means_unlimited_and_the_default_is_ten_percent() -> None:
    drift_only = pool_with({"nodes": "0", "reasons": ["Drifted"]})
    assert allowed_by_budgets(drift_only, DisruptionReason.EMPTY, total=10, disrupting=0,
                              now=T0).allowed == UNLIMITED  # fmt: skip
    default = NodePool.from_dict(f.nodepool("default"))
    verdict = allowed_by_budgets(default, DisruptionReason.UNDERUTILIZED, total=25,
                                 disrupting=1, now=T0)  # fmt: skip
    assert (verdict.allowed, verdict.remaining) == (3, 2)
    assert "allows 3 of 25" in verdict.describe()
