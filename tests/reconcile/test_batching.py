"""`BatchingSource`: Karpenter's batching windows, feeding a singleton run by a real
`Controller`, on a fake clock."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from karpy.reconcile import UNIT, BatchingSource
from karpy.state import kinds
from tests.kube.fakeclock import FakeClock
from tests.reconcile.singletons import (
    Scripted,
    namespace,
    running,
    singleton_controller,
    step,
    synced_state,
    wake_item,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from karpy.reconcile import Unit
    from karpy.state.cluster import ClusterState


class Batching:
    def __init__(self, state: ClusterState, clock: FakeClock, source: BatchingSource[Unit],
                 reconciler: Scripted) -> None:  # fmt: skip
        self.state = state
        self.clock = clock
        self.source = source
        self.reconciler = reconciler
        self._rv = 1

    def change(self, name: str) -> None:
        """A change of the namespace ``name``: its name is the window's item."""
        self._rv += 1
        self.state.apply(kinds.NAMESPACE, [(name, namespace(name, str(self._rv)))], [])

    @property
    def closed_at(self) -> list[float]:
        return self.reconciler.runs


@contextlib.asynccontextmanager
async def batching(idle: float = 1.0, maximum: float = 10.0) -> AsyncIterator[Batching]:
    clock = FakeClock()
    state = synced_state()
    reconciler = Scripted(clock)
    reconciler.pending = False  # runs only when a window closes
    source = BatchingSource(UNIT, state, frozenset({kinds.NAMESPACE}), wake_item, idle=idle,
                            maximum=maximum, clock=clock)  # fmt: skip
    async with running(singleton_controller(reconciler, state, clock, sources=(source,))):
        yield Batching(state, clock, source, reconciler)


async def test_a_single_trigger_closes_its_window_after_the_idle_duration():
    async with batching(idle=1.0) as b:
        b.change("pod-a")
        await step(b.clock, 0.9)
        assert b.closed_at == []
        await step(b.clock, 0.2)
        assert b.closed_at == [1.0]


async def test_a_burst_extends_the_window_until_it_goes_quiet():
    async with batching(idle=1.0, maximum=10.0) as b:
        for i in range(5):
            b.change(f"pod-{i}")
            await step(b.clock, 0.5)
        assert b.closed_at == [], "each new pod pushed the close back"
        await step(b.clock, 0.6)
        assert b.closed_at == [3.0], "closed one idle duration after the last pod"


async def test_a_steady_trickle_cannot_hold_the_window_open_past_the_maximum():
    async with batching(idle=1.0, maximum=3.0) as b:
        for i in range(10):
            b.change(f"pod-{i}")
            await step(b.clock, 0.5)
        assert b.closed_at == [3.0], "closed at the maximum, though pods kept coming"
        await step(b.clock, 1.0)
        assert b.closed_at == [3.0, 5.5], "the rest of the trickle made a second window"


async def test_an_item_triggers_once_per_window():
    async with batching(idle=1.0, maximum=10.0) as b:
        assert b.source.trigger("pod-a") is True
        await step(b.clock, 0.8)
        b.change("pod-a")
        assert b.source.trigger("pod-a") is False, "the same pod again does not count"
        await step(b.clock, 0.3)
        assert b.closed_at == [1.0], "nor did it extend the window"
        assert b.source.trigger("pod-a") is True, "a new window takes it again"


async def test_changes_of_kinds_it_does_not_watch_open_no_window():
    async with batching() as b:
        b.state.apply(kinds.NODE, [], [])
        await step(b.clock, 60)
        assert b.closed_at == []
        assert not b.source.open


async def test_a_zero_idle_duration_closes_at_once():
    async with batching(idle=0.0, maximum=10.0) as b:
        b.change("pod-a")
        await step(b.clock, 0)
        assert b.closed_at == [0.0]


async def test_a_window_closing_during_a_run_makes_one_more_run():
    async with batching(idle=1.0, maximum=10.0) as b:
        b.reconciler.gate = asyncio.Event()
        b.change("pod-a")
        await step(b.clock, 1.0)
        assert b.closed_at == [1.0]
        b.change("pod-b")
        await step(b.clock, 1.0)
        b.change("pod-c")
        await step(b.clock, 1.0)
        assert b.source.windows == 3
        assert b.closed_at == [1.0], "the first run is still going"
        b.reconciler.gate.set()
        await step(b.clock, 0)
        assert b.closed_at == [1.0, 3.0], "two windows closed meanwhile: one more run"
