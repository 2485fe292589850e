"""Consolidation waits while capacity is arriving (NodeClaims not initialized, pods
nominated), and never longer than its bound in one stretch."""

from __future__ import annotations

import asyncio
from typing import Any

from karpy.apis.nodeclaim import NodeClaim
from karpy.disruption.controller import POLL, VALIDATION_DELAY
from karpy.disruption.settling import Settling
from karpy.reconcile import DONE, requeue_after
from karpy.state import kinds
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.disruption.deciders import decider
from tests.disruption.test_prefilter import POOL, full_cheap_nodes
from tests.disruption.world import managed_node
from tests.kube.fakeclock import FakeClock


def claim(name: str, *, initialized: bool) -> NodeClaim:
    obj = f.nodeclaim(name, nodepool="default")
    if initialized:
        ready = {"type": "Initialized", "status": "True", "reason": "Initialized",
                 "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
        obj["status"].setdefault("conditions", []).append(ready)
    return NodeClaim.from_dict(obj)


def state_with(*claims: NodeClaim) -> ClusterState:
    state = ClusterState()
    state.apply(kinds.NODECLAIM, [(c.name, c) for c in claims], [])
    return state


def test_consolidation_may_run_once_everything_has_arrived():
    settling = Settling(FakeClock())
    snapshot = state_with(claim("a", initialized=True)).snapshot()
    assert settling.wait_reason(snapshot, {}) == ""


def test_it_waits_for_nodeclaims_on_their_way_and_for_nominated_pods():
    settling = Settling(FakeClock())
    arriving = state_with(claim("a", initialized=True), claim("b", initialized=False))
    assert "1 NodeClaim(s) on their way" in settling.wait_reason(arriving.snapshot(), {})
    settled = state_with(claim("a", initialized=True)).snapshot()
    assert "2 pod(s) nominated" in settling.wait_reason(settled, {"ns/p": "a", "ns/q": "a"})
    assert settling.wait_reason(settled, {}) == ""


def test_a_deleted_nodeclaim_is_not_on_its_way():
    obj = f.nodeclaim("b", nodepool="default")
    obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    obj["metadata"]["finalizers"] = ["karpenter.sh/termination"]
    settling = Settling(FakeClock())
    assert settling.wait_reason(state_with(NodeClaim.from_dict(obj)).snapshot(), {}) == ""


def test_it_never_waits_longer_than_its_bound_in_one_stretch():
    clock = FakeClock()
    settling = Settling(clock, max_wait=300.0)
    busy = state_with(claim("b", initialized=False)).snapshot()
    assert settling.wait_reason(busy, {}) != ""
    asyncio.run(clock.advance(299.0))
    assert settling.wait_reason(busy, {}) != ""
    asyncio.run(clock.advance(1.0))
    assert settling.wait_reason(busy, {}) == ""  # runs once...
    asyncio.run(clock.advance(1.0))
    assert settling.wait_reason(busy, {}) != ""  # ...and the next stretch begins


def _unconsolidatable(objects: list[dict[str, Any]], nominated: dict[str, str]) -> set[str]:
    """The nodes one disruption pass over ``objects`` reports Unconsolidatable."""
    passes = decider(objects, lambda _: nominated)
    asyncio.run(passes.disruption.reconcile())
    return {e.involved.name for e in passes.recorder.events if e.reason == "Unconsolidatable"}


def test_a_disruption_pass_leaves_consolidation_until_capacity_has_arrived():
    settled = [POOL, *full_cheap_nodes("a", "b")]
    assert _unconsolidatable(settled, {}) == {"a", "b"}  # consolidation looked at them
    launching = f.nodeclaim("default-new", nodepool="default")
    assert _unconsolidatable([*settled, launching], {}) == set()
    assert _unconsolidatable(settled, {"default/p": "b"}) == set()


def test_a_pass_that_found_nothing_is_not_followed_by_another_within_the_poll():
    """Thousands of NodeClaims turn Consolidatable in a scale-up, each asking for a pass;
    after a pass that found nothing the next waits for the poll period."""
    passes = decider([POOL, *full_cheap_nodes("a", "b")])
    recorder, clock, disruption = passes.recorder, passes.clock, passes.disruption
    assert asyncio.run(disruption.reconcile()) == DONE
    looked = len(recorder.events)
    assert looked > 0
    asyncio.run(clock.advance(3.0))
    assert asyncio.run(disruption.reconcile()) == requeue_after(POLL - 3.0)
    assert len(recorder.events) == looked
    asyncio.run(clock.advance(POLL))
    assert asyncio.run(disruption.reconcile()) == DONE  # a pass again


def _first_pass(objects: list[dict[str, Any]]) -> Any:
    return asyncio.run(decider(objects).disruption.reconcile())


def test_an_empty_node_is_left_while_capacity_is_arriving():
    """Pods still coming may be planned onto it; once the capacity has arrived it goes."""
    empty = [POOL, *managed_node("idle", "c-4x-amd64-linux")]
    assert _first_pass(empty) == requeue_after(VALIDATION_DELAY)  # a command to validate
    launching = f.nodeclaim("default-new", nodepool="default")
    assert _first_pass([*empty, launching]) == DONE
