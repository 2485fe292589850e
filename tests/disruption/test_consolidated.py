"""When consolidation found nothing, it is not searched again while nothing it depends
on changed: not after Karpenter's 5 minutes, only after 30."""

from __future__ import annotations

import asyncio

from karpy.disruption.controller import CONSOLIDATED_FOR
from tests.disruption.deciders import decider
from tests.disruption.test_prefilter import POOL, full_cheap_nodes


def test_nothing_to_consolidate_is_trusted_while_nothing_changes():
    passes = decider([POOL, *full_cheap_nodes("a", "b")])
    clock = passes.clock

    def searched() -> int:
        """Unconsolidatable events one pass records (for each node it looked at)."""
        before = len(passes.recorder.events)
        asyncio.run(passes.disruption.reconcile("pass"))
        return len(passes.recorder.events) - before

    first = searched()
    assert first > 0
    asyncio.run(clock.advance(6 * 60))  # past Karpenter's 5 minutes
    assert searched() == 0
    asyncio.run(clock.advance(CONSOLIDATED_FOR))
    assert searched() == first
