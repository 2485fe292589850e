"""`Controller`: a reconciler driven by state changes, resyncs, requeues and backoff."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from karpy.kube.errors import Conflict
from karpy.observability.controller_metrics import ControllerMetrics
from karpy.reconcile import DONE, Controller, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import ClusterState
from karpy.state.records import NamespaceInfo
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable

    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot


def namespace(name: str, rv: str = "1") -> NamespaceInfo:
    return NamespaceInfo(name=name, resource_version=rv, labels={})


class Recording:
    """Reconciles namespaces; records calls; scripted results and failures."""

    name = "test.namespaces"
    watches = frozenset({kinds.NAMESPACE})

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.results: dict[str, list[Result]] = {}
        self.failures: dict[str, list[Exception]] = {}
        self.running: set[str] = set()
        self.overlapped = False
        self.gate: asyncio.Event | None = None

    def keys_for(self, change: StateChange[Any]) -> Iterable[str]:
        return [change.key]

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        return list(snapshot.namespaces)

    async def reconcile(self, key: str) -> Result:
        if key in self.running:
            self.overlapped = True
        self.running.add(key)
        try:
            self.calls.append(key)
            if self.gate is not None:
                await self.gate.wait()
            failures = self.failures.get(key)
            if failures:
                raise failures.pop(0)
            results = self.results.get(key)
            return results.pop(0) if results else DONE
        finally:
            self.running.discard(key)


def synced_state(*names: str) -> ClusterState:
    state = ClusterState(watched=[kinds.NAMESPACE])
    state.apply(kinds.NAMESPACE, [(n, namespace(n)) for n in names], [])
    state.set_synced(kinds.NAMESPACE)
    return state


@contextlib.asynccontextmanager
async def running(controller: Controller[str]) -> AsyncIterator[asyncio.Event]:
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def test_every_existing_key_is_reconciled_once_state_has_synced():
    state = ClusterState(watched=[kinds.NAMESPACE])
    state.apply(kinds.NAMESPACE, [("a", namespace("a")), ("b", namespace("b"))], [])
    reconciler = Recording()
    clock = FakeClock()
    controller = Controller(reconciler, state, clock=clock)
    async with running(controller):
        await clock.advance(1)
        assert reconciler.calls == [], "nothing happens before the state is synced"
        state.set_synced(kinds.NAMESPACE)
        await clock.advance(1)
        await controller.started.wait()
        await settle()
        assert sorted(reconciler.calls) == ["a", "b"]


async def test_a_state_change_reconciles_the_key_it_concerns():
    state = synced_state()
    reconciler = Recording()
    controller = Controller(reconciler, state, clock=FakeClock())
    async with running(controller):
        await controller.started.wait()
        state.apply(kinds.NAMESPACE, [("new", namespace("new"))], [])
        state.apply(kinds.NODE, [], [])  # a kind it does not watch
        await settle()
        assert reconciler.calls == ["new"]


async def test_a_failed_reconcile_is_retried_with_growing_backoff():
    state = synced_state("a")
    reconciler = Recording()
    reconciler.failures["a"] = [
        RuntimeError("boom"),
        Conflict(409, "Conflict", "the object has been modified"),
    ]
    clock = FakeClock()
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    controller = Controller(reconciler, state, clock=clock, metrics=metrics, base_delay=1.0,
                            resync=None)  # fmt: skip
    async with running(controller):
        await controller.started.wait()
        await settle()
        assert reconciler.calls == ["a"]
        await clock.advance(0.9)
        assert reconciler.calls == ["a"]
        await clock.advance(0.2)
        await settle()
        assert reconciler.calls == ["a", "a"]
        await clock.advance(1.5)
        assert reconciler.calls == ["a", "a"], "the second retry waits twice as long"
        await clock.advance(0.6)
        await settle()
        assert reconciler.calls == ["a", "a", "a"]
    labels = {"controller": "test.namespaces"}
    assert registry.get_sample_value("controller_runtime_reconcile_errors_total", labels) == 2
    assert (
        registry.get_sample_value(
            "controller_runtime_reconcile_total", {**labels, "result": "success"}
        )
        == 1
    )


async def test_requeue_after_looks_again_later():
    state = synced_state("a")
    reconciler = Recording()
    reconciler.results["a"] = [requeue_after(30)]
    clock = FakeClock()
    controller = Controller(reconciler, state, clock=clock, resync=None)
    async with running(controller):
        await controller.started.wait()
        await settle()
        await clock.advance(29)
        assert reconciler.calls == ["a"]
        await clock.advance(2)
        await settle()
        assert reconciler.calls == ["a", "a"]


async def test_the_periodic_resync_reconciles_every_key_again():
    state = synced_state("a", "b")
    reconciler = Recording()
    clock = FakeClock()
    controller = Controller(reconciler, state, clock=clock, resync=60)
    async with running(controller):
        await controller.started.wait()
        await settle()
        await clock.advance(70)
        await settle()
        assert sorted(reconciler.calls) == ["a", "a", "b", "b"]


async def test_one_key_is_never_reconciled_twice_at_once():
    state = synced_state("a")
    reconciler = Recording()
    reconciler.gate = asyncio.Event()
    controller = Controller(reconciler, state, clock=FakeClock(), workers=4)
    async with running(controller):
        await controller.started.wait()
        await settle()
        for rv in range(2, 6):
            state.apply(kinds.NAMESPACE, [("a", namespace("a", str(rv)))], [])
        await settle()
        assert reconciler.calls == ["a"]
        reconciler.gate.set()
        await settle(50)
    assert reconciler.calls == ["a", "a"], "changes during a reconcile cost one more"
    assert not reconciler.overlapped


async def test_a_clean_stop_lets_the_reconcile_in_flight_finish():
    state = synced_state("a")
    reconciler = Recording()
    reconciler.gate = asyncio.Event()
    controller = Controller(reconciler, state, clock=FakeClock())
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    await controller.started.wait()
    await settle()
    stop.set()
    await settle()
    assert not task.done(), "waits for the reconcile in flight"
    reconciler.gate.set()
    await asyncio.wait_for(task, 5)


async def test_cancellation_stops_at_once_and_unsubscribes():
    state = synced_state("a")
    reconciler = Recording()
    reconciler.gate = asyncio.Event()
    controller = Controller(reconciler, state, clock=FakeClock())
    task = asyncio.create_task(controller.run(asyncio.Event()))
    await controller.started.wait()
    await settle()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    state.apply(kinds.NAMESPACE, [("b", namespace("b"))], [])
    assert reconciler.calls == ["a"]
    assert len(controller.queue) == 0


class Busy(Recording):
    """Reconciles without ever suspending, 2 ms of computation a key."""

    async def reconcile(self, key: str) -> Result:
        self.calls.append(key)
        end = time.perf_counter() + 0.002
        while time.perf_counter() < end:
            pass
        return DONE


async def test_a_worker_with_many_keys_that_never_suspend_lets_the_loop_run():
    state = ClusterState(watched=[kinds.NAMESPACE])
    names = [f"ns-{i}" for i in range(200)]  # 0.4 s of work, none of it suspending
    state.apply(kinds.NAMESPACE, [(n, namespace(n)) for n in names], [])
    state.set_synced(kinds.NAMESPACE)
    reconciler = Busy()
    controller = Controller(reconciler, state, clock=FakeClock())
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while len(reconciler.calls) < len(names):
            await asyncio.sleep(0)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    async with running(controller):
        await asyncio.wait_for(ticker(), 30)
    assert len(reconciler.calls) == len(names)
    # Another task ran at least every time slice (and a key), not once at the end.
    assert max(gaps) < 0.2
