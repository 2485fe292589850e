"""A scripted singleton reconciler and the plumbing to run it in a real `Controller` on a
fake clock, shared by the singleton, batching and polling tests."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from karpy.reconcile import DONE, Controller, Result, Singleton
from karpy.state import kinds
from karpy.state.cluster import ClusterState
from karpy.state.records import NamespaceInfo

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Hashable

    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.reconcile import Source, Unit
    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot
    from tests.kube.fakeclock import FakeClock


def namespace(name: str, rv: str = "1", labels: dict[str, str] | None = None) -> NamespaceInfo:
    return NamespaceInfo(name=name, resource_version=rv, labels=labels or {})


def synced_state(*names: str) -> ClusterState:
    state = ClusterState(watched=[kinds.NAMESPACE])
    state.apply(kinds.NAMESPACE, [(n, namespace(n)) for n in names], [])
    state.set_synced(kinds.NAMESPACE)
    return state


class Scripted:
    """Runs when a namespace labelled ``wake`` appears; due at resyncs while ``pending``.
    Records the fake time of each run; scripted results and failures; ``gate`` holds a
    run until set."""

    name = "test.singleton"
    watches = frozenset({kinds.NAMESPACE})

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.runs: list[float] = []
        self.results: list[Result] = []
        self.failures: list[Exception] = []
        self.pending = True
        self.gate: asyncio.Event | None = None
        self.running = 0
        self.overlapped = False

    def wants(self, change: StateChange[Any]) -> bool:
        return change.new is not None and "wake" in change.new.labels

    def due(self, snapshot: StateSnapshot) -> bool:
        return self.pending

    async def reconcile(self) -> Result:
        self.overlapped |= self.running > 0
        self.running += 1
        try:
            self.runs.append(self.clock.monotonic() - 1000.0)
            if self.gate is not None:
                await self.gate.wait()
            if self.failures:
                raise self.failures.pop(0)
            return self.results.pop(0) if self.results else DONE
        finally:
            self.running -= 1


def wake_item(change: StateChange[Any]) -> tuple[Hashable, ...]:
    """Batch items: a namespace's name (what `BatchingSource` tests trigger with)."""
    return (change.key,) if change.new is not None else ()


async def settle(rounds: int = 20) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def step(clock: FakeClock, seconds: float) -> None:
    await clock.advance(seconds)
    await settle()


@contextlib.asynccontextmanager
async def running(controller: Controller[Unit]) -> AsyncIterator[asyncio.Event]:
    """Run ``controller`` until the block ends, then stop it cleanly."""
    stop = asyncio.Event()
    task = asyncio.create_task(controller.run(stop))
    await controller.started.wait()
    await settle()
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


def singleton_controller(
    reconciler: Scripted,
    state: ClusterState,
    clock: FakeClock,
    *,
    sources: tuple[Source[Unit], ...] = (),
    resync: float | None = None,
    metrics: ControllerMetrics | None = None,
    base_delay: float = 0.05,
    max_delay: float = 300.0,
) -> Controller[Unit]:
    return Controller(Singleton(reconciler), state, clock=clock, sources=sources,
                      resync=resync, metrics=metrics, base_delay=base_delay,
                      max_delay=max_delay)  # fmt: skip
