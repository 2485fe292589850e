"""When a pass found nothing, the next passes on the same inputs are skipped for a
minute; when consolidation found nothing, it is not searched again while nothing it
depends on changed: not after Karpenter's 5 minutes, only after 30."""

from __future__ import annotations

import asyncio

from karpy.disruption.controller import POLL, QUIET_RECHECK
from karpy.disruption.methods.consolidation import CONSOLIDATED_FOR
from tests.disruption.deciders import decider
from tests.disruption.test_prefilter import POOL, full_cheap_nodes
from tests.disruption.world import managed_node, pod_on


def test_nothing_to_consolidate_is_trusted_while_nothing_changes():
    passes = decider([POOL, *full_cheap_nodes("a", "b")])
    clock, searched = passes.clock, passes.events_of_a_pass  # one per node looked at
    first = searched()
    assert first > 0
    asyncio.run(clock.advance(6 * 60))  # past Karpenter's 5 minutes
    assert searched() == 0
    asyncio.run(clock.advance(CONSOLIDATED_FOR))
    assert searched() == first


def test_a_pass_on_the_same_inputs_as_a_quiet_one_is_skipped_for_a_minute():
    """At 10,000 nodes finding the candidates every 10 s was most of an idle
    controller's CPU; a pass that found nothing stands for a minute while nothing
    changes (here a node blocked by a do-not-disrupt pod is reported on each full pass)."""
    blocked = pod_on("a", "keep", annotations={"karpenter.sh/do-not-disrupt": "true"})
    passes = decider([POOL, *managed_node("a", "c-4x-amd64-linux"), blocked])
    reported = passes.events_of_a_pass
    first = reported()
    assert first > 0
    asyncio.run(passes.clock.advance(POLL))
    assert reported() == 0
    asyncio.run(passes.clock.advance(QUIET_RECHECK))
    assert reported() == first
