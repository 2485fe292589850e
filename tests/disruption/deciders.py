"""A `Disruption` controller over a list of objects, for tests that run its passes: the
world's compiled context, a synced state, a recorder that keeps every Event, and a fake
clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from karpy.disruption.controller import Disruption
from karpy.disruption.explain import state_from_objects
from karpy.kube.events import Event
from karpy.observability.karpenter_metrics import KarpenterMetrics
from karpy.rounds.buffers import BufferPods
from karpy.rounds.contextcache import CompiledContext
from karpy.settings import Settings
from karpy.state.snapshot import StateSnapshot
from tests.disruption.world import NOW, World
from tests.kube.fakeclock import FakeClock


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def publish(self, event: Event) -> bool:
        self.events.append(event)
        return True


class Contexts:
    def __init__(self, compiled: CompiledContext) -> None:
        self.compiled = compiled

    async def get(self, snapshot: object) -> CompiledContext:
        return self.compiled


@attrs.frozen
class Decider:
    disruption: Disruption
    recorder: Recorder
    clock: FakeClock

    def events_of_a_pass(self) -> int:
        """Run one pass; how many Events it recorded."""
        before = len(self.recorder.events)
        asyncio.run(self.disruption.reconcile())
        return len(self.recorder.events) - before


def decider(
    objects: list[dict[str, Any]],
    nominations: Callable[[StateSnapshot], Mapping[str, str]] = lambda _: {},
    metrics: KarpenterMetrics | None = None,
    buffers: BufferPods | None = None,
) -> Decider:
    world = World(objects)
    state = state_from_objects(objects)
    for kind in state.watched:
        state.set_synced(kind)
    recorder, clock = Recorder(), FakeClock(NOW)
    disruption = Disruption(state, None, recorder, Settings(),  # type: ignore[arg-type]
                            contexts=Contexts(world.compiled),  # type: ignore[arg-type]
                            nominations=nominations, clock=clock,
                            metrics=metrics, buffers=buffers)  # fmt: skip
    return Decider(disruption, recorder, clock)
