"""When consolidation found nothing, it is not searched again while nothing it depends
on changed: not after Karpenter's 5 minutes, only after 30."""

from __future__ import annotations

import asyncio

from karpy.disruption.controller import CONSOLIDATED_FOR, Disruption
from karpy.disruption.explain import state_from_objects
from karpy.settings import Settings
from tests.disruption.test_prefilter import POOL, Contexts, Recorder, full_cheap_nodes
from tests.disruption.world import NOW, World
from tests.kube.fakeclock import FakeClock


def test_nothing_to_consolidate_is_trusted_while_nothing_changes():
    objects = [POOL, *full_cheap_nodes("a", "b")]
    world = World(objects)
    state = state_from_objects(objects)
    for kind in state.watched:
        state.set_synced(kind)
    recorder = Recorder()
    clock = FakeClock(NOW)
    decider = Disruption(state, None, recorder, Settings(),  # type: ignore[arg-type]
                         contexts=Contexts(world.compiled),  # type: ignore[arg-type]
                         nominations=lambda s: {}, clock=clock)  # fmt: skip

    def searched() -> int:
        """Unconsolidatable events one pass records (for each node it looked at)."""
        before = len(recorder.events)
        asyncio.run(decider.reconcile("pass"))
        return len(recorder.events) - before

    first = searched()
    assert first > 0
    asyncio.run(clock.advance(6 * 60))  # past Karpenter's 5 minutes
    assert searched() == 0
    asyncio.run(clock.advance(CONSOLIDATED_FOR))
    assert searched() == first
