"""When kube-scheduler places pods where karpy did not plan them, the pods left over are
planned again onto the room left on NodeClaims already bought before any new one is
launched, and the disagreement shows in ``karpy_nominations_ended_total{outcome}`` and
``karpy_provisioning_nodeclaims_total{plan}``.

Every NodeClaim here holds one pod (`tests.provisioning.world`): a pod kube-scheduler puts
on another pod's node leaves that pod without room there.
"""

from __future__ import annotations

import pytest

from karpy.provisioning.nominations import Ended
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.provisioning.world import NODECLAIMS, Cluster, cluster


async def two_planned_nodeclaims(c: Cluster) -> tuple[str, str]:
    """x planned onto NodeClaim A, then y onto B (x's nomination fills A)."""
    c.pending_pod("x")
    await c.round()
    (a,) = c.claims()
    c.pending_pod("y")
    await c.round()
    (b,) = [name for name in c.claims() if name != a]
    assert (c.nominated_to("x"), c.nominated_to("y")) == (a, b)
    return a, b


@pytest.mark.parametrize("b_state", ["in_flight", "initialized"])
async def test_pods_displaced_from_their_node_go_to_room_left_on_another_before_a_new_one(
    apiserver, b_state
):
    async with cluster(apiserver) as c:
        a, b = await two_planned_nodeclaims(c)
        # A is ready first; kube-scheduler (LeastAllocated) puts y there, not x.
        node_a = c.initialize(a)
        if b_state == "initialized":
            c.initialize(b)
        c.bind("y", node_a)
        await c.round()

        assert c.claims() == sorted([a, b]), "no NodeClaim launched for x: B has room for it"
        assert c.nominated_to("x") == b
        assert c.ended(Ended.NO_ROOM) == 1  # x on A
        assert c.ended(Ended.BOUND_ELSEWHERE) == 1  # y, planned on B, bound on A
        assert (c.nodeclaims("first"), c.nodeclaims("replanned")) == (2, 0)


async def test_a_pod_with_no_room_left_anywhere_gets_a_nodeclaim_counted_as_replanned(apiserver):
    async with cluster(apiserver) as c:
        c.pending_pod("x")
        await c.round()
        (a,) = c.claims()
        node_a = c.initialize(a)
        # Something else took x's room on A before kube-scheduler got to x.
        c.store.create("pods", f.pod("intruder", requests={"cpu": "1200m"}, node_name=node_a))
        await c.round()

        (replacement,) = [name for name in c.claims() if name != a]
        assert c.nominated_to("x") == replacement
        assert c.ended(Ended.NO_ROOM) == 1
        assert (c.nodeclaims("first"), c.nodeclaims("replanned")) == (1, 1)

        node_r = c.initialize(replacement)
        c.bind("x", node_r)
        await c.round()
        assert c.ended(Ended.BOUND_TO_TARGET) == 1

        # A pod of the same name later (a StatefulSet's pod recreated), with no room left
        # for it, is new: the memory of x's replanning went when x was bound.
        c.store.delete("pods", "x", "default", grace_period_seconds=0)
        c.store.create("pods", f.pod("another", requests={"cpu": "1200m"}, node_name=node_r))
        c.pending_pod("x")
        await c.round()
        assert c.ended(Ended.POD_GONE) == 0, "x was bound: its nomination had already ended"
        assert (c.nodeclaims("first"), c.nodeclaims("replanned")) == (2, 1)


async def test_a_nomination_that_expires_is_placed_again_on_the_room_still_left(apiserver):
    async with cluster(apiserver) as c:
        c.pending_pod("x")
        await c.round()
        (a,) = c.claims()
        c.initialize(a)
        await c.round()
        assert c.nominated_to("x") == a, "within the window kube-scheduler may still bind it"

        await c.clock.advance(c.provisioner.nominations.window + 1)
        await c.round()
        assert c.ended(Ended.EXPIRED) == 1
        assert c.claims() == [a], "A still has room for x: nothing new is launched"
        assert c.nominated_to("x") == a
        assert (c.nodeclaims("first"), c.nodeclaims("replanned")) == (1, 0)


async def test_a_pod_whose_target_goes_takes_the_room_a_deleted_pod_left(apiserver):
    async with cluster(apiserver) as c:
        a, b = await two_planned_nodeclaims(c)
        c.store.delete("pods", "x", "default", grace_period_seconds=0)
        c.store.delete(NODECLAIMS, b)
        await c.round()
        assert c.ended(Ended.POD_GONE) == 1
        assert c.ended(Ended.TARGET_GONE) == 1
        assert c.nominated_to("y") == a, "the room x left on A, rather than a new NodeClaim"
        assert (c.nodeclaims("first"), c.nodeclaims("replanned")) == (2, 0)


def test_every_outcome_is_exported_from_the_start():
    from prometheus_client import CollectorRegistry

    from karpy.observability.karpenter_metrics import KarpenterMetrics

    registry = CollectorRegistry()
    KarpenterMetrics(registry)
    for outcome in Ended:
        value = registry.get_sample_value("karpy_nominations_ended_total",
                                          {"outcome": outcome.value})  # fmt: skip
        assert value == 0, outcome
    for plan in ("first", "replanned"):
        assert registry.get_sample_value("karpy_provisioning_nodeclaims_total", {"plan": plan}) == 0


async def test_nominations_of_the_last_pods_bound_are_ended_by_the_resync(apiserver):
    async with cluster(apiserver) as c:
        c.pending_pod("x")
        await c.round()
        (a,) = c.claims()
        c.bind("x", c.initialize(a))
        await c.world.settled()
        snapshot = c.world.state.snapshot()
        assert not snapshot.pending
        assert c.provisioner.due(snapshot), "a nomination is held"

        await c.round()
        assert c.ended(Ended.BOUND_TO_TARGET) == 1
        assert not c.provisioner.due(c.world.state.snapshot())


async def test_a_pod_its_anti_affinity_shuts_out_of_its_node_goes_to_room_left_at_once(apiserver):
    """Small pods that must each have a node of their own: x planned on A, y on B. A
    turns Ready and kube-scheduler puts y there. x still fits on A by room, but y's
    presence keeps it off A for good, so its nomination ends now (not after the window)
    and it takes B, which y left free: no new NodeClaim."""
    apart = {"labelSelector": {"matchLabels": {"app": "web"}},
             "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
    spec = {"requests": {"cpu": "100m"}, "labels": {"app": "web"}, "pod_anti_affinity": [apart]}
    async with cluster(apiserver) as c:
        c.pending_pod("x", **spec)
        c.pending_pod("y", **spec)
        await c.round()
        a, b = c.claims()
        if c.nominated_to("x") != a:
            a, b = b, a
        assert (c.nominated_to("x"), c.nominated_to("y")) == (a, b)
        node_a = c.initialize(a)
        c.bind("y", node_a)
        await c.round()

        assert c.claims() == sorted([a, b]), "no NodeClaim launched for x: B is free"
        assert c.nominated_to("x") == b
        assert c.ended(Ended.NO_ROOM) == 1
        assert c.ended(Ended.BOUND_ELSEWHERE) == 1


async def test_a_pod_bound_elsewhere_than_planned_asks_for_a_round_at_once(apiserver):
    """y, planned on B, bound on A where x was planned: x may not fit there any more, so
    a round is asked for now rather than at the next resync."""
    async with cluster(apiserver) as c:
        a, b = await two_planned_nodeclaims(c)
        node_a = c.initialize(a)
        c.triggered.clear()
        c.bind("x", node_a)  # as planned: nothing to look at again
        await c.world.settled()
        assert not [k for k in c.triggered if k.startswith("displaced/")]
        node_b = c.initialize(b)
        c.pending_pod("z")
        await c.round()
        c.triggered.clear()
        c.bind("y", node_b)
        await c.world.settled()
        assert not [k for k in c.triggered if k.startswith("displaced/")]
        z_target = c.nominated_to("z")
        assert z_target is not None
        other = node_a if z_target != a else node_b
        c.store.delete("pods", "x", "default", grace_period_seconds=0)
        c.store.delete("pods", "y", "default", grace_period_seconds=0)
        await c.world.settled()
        c.triggered.clear()
        c.bind("z", other)
        await c.world.settled()
        assert c.triggered == [f"displaced/{other}"]


async def test_a_nodeclaim_deleted_before_the_next_round_no_longer_counts_as_on_its_way(
    apiserver,
):
    """A round's NodeClaim stands in for itself until the informer reports it; once the
    informer has seen it come and go, its pods need a home again at the next round."""
    async with cluster(apiserver) as c:
        c.pending_pod("x")
        await c.round()
        (a,) = c.claims()
        claim = c.store.get(NODECLAIMS, a)
        claim["metadata"]["finalizers"] = []  # gone at once, as a launch refused leaves it
        c.store.update(NODECLAIMS, claim)
        c.store.delete(NODECLAIMS, a)
        await eventually(lambda: a not in c.world.state.snapshot().nodeclaims)
        await c.round()
        claims = c.claims()
        assert len(claims) == 1 and a not in claims, "x got a NodeClaim again"
        assert c.nominated_to("x") == claims[0]
