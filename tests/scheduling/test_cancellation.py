"""A solve stops soon after its cancel flag is set, between groups of pods, and then has
no result at all: `SolveCancelled`, never a partial `Results`."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.pods import Pod
from karpy.scheduling.solver import CANCEL_CHECK_PODS, Scheduler, SolveCancelled
from tests.scheduling.builders import context, instance_type, pod

CONTEXT = context([instance_type("m", cpu="64", memory="256Gi")])


def many_shapes(count: int) -> list[Pod]:
    """Pods of ``count`` different CPU requests: each is a group of its own."""
    return [pod(f"p{i}", requests={"cpu": f"{100 + i}m"}) for i in range(count)]


def one_shape(count: int) -> list[Pod]:
    return [pod(f"p{i}", requests={"cpu": "100m"}) for i in range(count)]


def cancelling_clock(cancel: threading.Event, tried: int) -> Callable[[], float]:
    """A clock that sets ``cancel`` once ``tried`` pods have been tried: the solve looks
    at it once as it starts and once before each pod, so this cancels mid-queue."""
    looks = 0

    def clock() -> float:
        nonlocal looks
        looks += 1
        if looks == tried + 2:
            cancel.set()
        return 0.0

    return clock


@pytest.mark.parametrize("pods", [many_shapes(500), one_shape(500)], ids=["shapes", "one"])
def test_a_cancelled_solve_raises_within_a_group_of_the_flag(pods) -> None:
    cancel = threading.Event()
    with pytest.raises(SolveCancelled) as caught:
        Scheduler(CONTEXT, ClusterSnapshot()).solve(
            pods, clock=cancelling_clock(cancel, tried=100), cancel=cancel
        )
    assert 100 <= caught.value.pods_tried <= 100 + CANCEL_CHECK_PODS


def test_a_flag_set_before_the_solve_places_nothing() -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(SolveCancelled) as caught:
        Scheduler(CONTEXT, ClusterSnapshot()).solve(many_shapes(10), cancel=cancel)
    assert caught.value.pods_tried == 0


def test_a_flag_never_set_changes_nothing() -> None:
    pods = many_shapes(50)
    plain = Scheduler(CONTEXT, ClusterSnapshot()).solve(pods)
    flagged = Scheduler(CONTEXT, ClusterSnapshot()).solve(pods, cancel=threading.Event())
    assert flagged.scheduled == plain.scheduled == 50
    assert [c.instance_type.name for c in flagged.new_nodeclaims] == [
        c.instance_type.name for c in plain.new_nodeclaims
    ]


def test_a_solve_in_a_thread_returns_when_another_thread_sets_the_flag() -> None:
    pods = many_shapes(20_000)
    cancel, running = threading.Event(), threading.Event()
    looks = 0

    def clock() -> float:  # tells the test the queue is being worked through
        nonlocal looks
        looks += 1
        if looks == 50:
            running.set()
        return 0.0

    outcome: list[BaseException] = []

    def solve() -> None:
        try:
            Scheduler(CONTEXT, ClusterSnapshot()).solve(pods, clock=clock, cancel=cancel)
        except SolveCancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=solve)
    thread.start()
    running.wait()
    cancel.set()
    thread.join()
    (cancelled,) = outcome
    assert isinstance(cancelled, SolveCancelled)
    assert cancelled.pods_tried < len(pods)
