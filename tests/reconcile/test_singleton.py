"""`Singleton`: one keyless unit of work, run by the same `Controller` as keyed
reconcilers (coalescing, backoff, metrics, stopping), on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib

from prometheus_client import CollectorRegistry

from karpy.observability.controller_metrics import ControllerMetrics
from karpy.reconcile import requeue_after
from karpy.state import kinds
from tests.kube.fakeclock import FakeClock
from tests.reconcile.singletons import (
    Scripted,
    namespace,
    running,
    settle,
    singleton_controller,
    step,
    synced_state,
)


def wake(name: str) -> list[tuple[str, object]]:
    return [(name, namespace(name, labels={"wake": "yes"}))]


async def test_a_due_singleton_runs_once_state_has_synced():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    async with running(singleton_controller(reconciler, state, clock)):
        assert reconciler.runs == [0.0]


async def test_a_singleton_with_nothing_due_waits_for_a_change_it_wants():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    reconciler.pending = False
    async with running(singleton_controller(reconciler, state, clock)):
        assert reconciler.runs == []
        state.apply(kinds.NAMESPACE, [("quiet", namespace("quiet"))], [])
        await settle()
        assert reconciler.runs == [], "a change it does not want runs nothing"
        state.apply(kinds.NAMESPACE, wake("a"), [])
        await settle()
        assert reconciler.runs == [0.0]


async def test_triggers_during_a_run_coalesce_into_one_more_run():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    reconciler.gate = asyncio.Event()
    async with running(singleton_controller(reconciler, state, clock)):
        for name in ("a", "b", "c"):
            state.apply(kinds.NAMESPACE, wake(name), [])
        await settle()
        assert reconciler.runs == [0.0], "still in the first run"
        reconciler.gate.set()
        await settle(50)
        assert reconciler.runs == [0.0, 0.0], "three triggers, one more run"
    assert not reconciler.overlapped


async def test_a_failing_run_is_retried_with_growing_backoff_and_counted():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    reconciler.failures = [RuntimeError("boom"), RuntimeError("boom again")]
    registry = CollectorRegistry()
    controller = singleton_controller(reconciler, state, clock, base_delay=1.0,
                                      metrics=ControllerMetrics(registry))  # fmt: skip
    async with running(controller):
        await step(clock, 0.9)
        assert reconciler.runs == [0.0]
        await step(clock, 0.2)
        assert reconciler.runs == [0.0, 1.0]
        await step(clock, 1.8)
        assert reconciler.runs == [0.0, 1.0], "the second retry waits twice as long"
        await step(clock, 0.3)
        assert reconciler.runs == [0.0, 1.0, 3.0]
        await step(clock, 60)
        assert len(reconciler.runs) == 3, "a success ends the retries"
    labels = {"controller": "test.singleton"}
    assert registry.get_sample_value("controller_runtime_reconcile_errors_total", labels) == 2
    success = {**labels, "result": "success"}
    assert registry.get_sample_value("controller_runtime_reconcile_total", success) == 1


async def test_requeue_after_schedules_the_next_run():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    reconciler.results = [requeue_after(10)]
    async with running(singleton_controller(reconciler, state, clock)):
        await step(clock, 9.9)
        assert reconciler.runs == [0.0]
        await step(clock, 0.2)
        assert reconciler.runs == [0.0, 10.0]


async def test_the_resync_runs_it_again_only_while_due():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    async with running(singleton_controller(reconciler, state, clock, resync=10)):
        await step(clock, 11.1)
        assert len(reconciler.runs) == 2
        reconciler.pending = False
        await step(clock, 30)
        assert len(reconciler.runs) == 2


async def test_a_clean_stop_lets_the_run_in_flight_finish():
    clock = FakeClock()
    reconciler = Scripted(clock)
    reconciler.gate = asyncio.Event()
    controller = singleton_controller(reconciler, synced_state(), clock)
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    await controller.started.wait()
    await settle()
    stop.set()
    await settle()
    assert not task.done(), "waits for the run in flight"
    reconciler.gate.set()
    await asyncio.wait_for(task, 5)


async def test_losing_the_lease_stops_the_run_at_once_and_drops_its_triggers():
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    reconciler.gate = asyncio.Event()
    controller = singleton_controller(reconciler, state, clock)
    task = asyncio.create_task(controller.run(asyncio.Event()))
    await controller.started.wait()
    await settle()
    task.cancel()  # what the leader elector does to its writers on losing the lease
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert reconciler.running == 0, "the run in flight was cancelled"
    state.apply(kinds.NAMESPACE, wake("late"), [])
    await settle()
    assert reconciler.runs == [0.0]
