"""Garbage collection terminates only instances no NodeClaim names, and only once a fresh
LIST of the API server agrees and it has stayed unclaimed for a minute: against the API
server emulator with the fake cloud and a fake clock."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.errors import NodeClaimNotFound
from karpy.lifecycle.context import Lifecycle
from karpy.lifecycle.garbagecollection import GarbageCollection
from karpy.reconcile import DONE
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.fixtures.cluster import World
from tests.fixtures.lifecycle import lifecycle
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
NODECLAIMS_PATH = "/apis/karpenter.sh/v1/nodeclaims*"
PERIOD = 120  # seconds between GC passes, as its controller runs it
# Past a 30 s grace with room to spare: an instance's age comes from its Node's
# creationTimestamp (the emulator's wall clock), while the fake clock started with the
# fixture; on a loaded machine the set-up between the two takes seconds.
PAST_GRACE = 90


async def launched(world: World, ctx: Lifecycle, name: str) -> str:
    """Launch an instance for a NodeClaim ``name`` that is not stored; its provider ID."""
    claim = NodeClaim.from_dict(f.nodeclaim(name, nodepool="default", launched=False))
    instance = await ctx.provider.create(claim)
    await world.settled()
    return instance.provider_id


def store_claim(apiserver: Any, name: str, *, status: dict[str, Any] | None = None) -> None:
    created = apiserver.store.create(NODECLAIMS, f.nodeclaim(name, nodepool="default",
                                                             launched=False))  # fmt: skip
    if status is not None:
        created["status"] = status
        apiserver.store.update_status(NODECLAIMS, created)


def unparseable_status(provider_id: str = "") -> dict[str, Any]:
    """A status karpy's reader rejects but the API server stores (RFC 3339 allows the
    lowercase ``t`` and ``z``)."""
    status: dict[str, Any] = {
        "conditions": [{"type": "Launched", "status": "True", "reason": "Launched",
                        "message": "", "lastTransitionTime": "2024-01-01t00:00:00z"}],
    }  # fmt: skip
    if provider_id:
        status["providerID"] = provider_id
    return status


def instance_exists(world: World, provider_id: str) -> bool:
    node = world.apiserver.store.try_get("nodes", provider_id.rsplit("/", 1)[1])
    return node is not None and "fake.karpy.dev/terminated" not in node["metadata"]["labels"]


def terminated_total(world: World, reason: str) -> float:
    value = world.metrics.registry.get_sample_value(
        "karpy_garbagecollection_terminated_total", {"reason": reason}
    )
    return value or 0.0


async def passes(gc: GarbageCollection, clock: FakeClock, *, minutes: float) -> None:
    """Run GC every `PERIOD` seconds of fake time for ``minutes``."""
    for _ in range(int(minutes * 60 / PERIOD) + 1):
        await gc.reconcile()
        await clock.advance(PERIOD)


async def test_an_orphan_is_terminated_on_the_second_pass_a_minute_after_the_first(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        leaked = await launched(world, ctx, "default-leaked")
        gc = GarbageCollection(ctx, grace=30)
        await clock.advance(PAST_GRACE)
        first = await gc.reconcile()
        assert gc.terminated == 0, "first sighting: remembered, not terminated"
        assert gc.suspects[leaked].reason == "orphan"
        assert first.requeue_after == 60, "the confirming pass comes a minute later"
        await clock.advance(59)
        early = await gc.reconcile()
        assert gc.terminated == 0 and instance_exists(world, leaked), "59 s is not a minute"
        assert early.requeue_after == 1
        await clock.advance(1)
        confirming = await gc.reconcile()
        assert gc.terminated == 1 and confirming == DONE
        assert not instance_exists(world, leaked)
        assert terminated_total(world, "orphan") == 1
        assert gc.suspects == {}


async def test_the_instance_of_a_nodeclaim_karpy_cannot_read_is_never_terminated(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        by_name = await launched(world, ctx, "default-odd")
        by_provider_id = await launched(world, ctx, "default-renamed")
        store_claim(apiserver, "default-odd", status=unparseable_status())
        store_claim(apiserver, "default-other", status=unparseable_status(by_provider_id))
        stored = apiserver.store.get(NODECLAIMS, "default-odd")
        with pytest.raises(ValueError):
            NodeClaim.from_dict(stored)  # the strict reader rejects what the server holds
        gc = GarbageCollection(ctx, grace=30)
        await passes(gc, clock, minutes=5)
        assert gc.terminated == 0
        assert instance_exists(world, by_name) and instance_exists(world, by_provider_id)


async def test_a_standby_with_stale_state_does_not_terminate_live_nodeclaims_instances(
    apiserver,
):
    async with lifecycle(apiserver) as (world, ctx, clock):
        kept = await launched(world, ctx, "default-kept")
        store_claim(apiserver, "default-kept", status={"providerID": kept})
        # A replica whose watch died before the NodeClaim appeared: its state has none.
        stale = attrs.evolve(ctx, state=ClusterState(clock=clock))
        gc = GarbageCollection(stale, grace=30)
        await passes(gc, clock, minutes=5)
        assert gc.terminated == 0
        assert instance_exists(world, kept)


async def test_nothing_is_terminated_while_the_nodeclaim_list_fails(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        leaked = await launched(world, ctx, "default-leaked")
        apiserver.faults.add("GET", NODECLAIMS_PATH, status=403, count=None, watch=False)
        gc = GarbageCollection(ctx, grace=30)
        await passes(gc, clock, minutes=5)
        assert gc.terminated == 0 and instance_exists(world, leaked)
        apiserver.faults.clear()
        await gc.reconcile()
        await clock.advance(PERIOD)
        await gc.reconcile()
        assert gc.terminated == 1 and not instance_exists(world, leaked)


async def test_a_suspect_claimed_again_is_forgotten_and_must_be_seen_twice_anew(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        leaked = await launched(world, ctx, "default-back")
        gc = GarbageCollection(ctx, grace=30)
        await clock.advance(PAST_GRACE)
        await gc.reconcile()
        assert leaked in gc.suspects
        store_claim(apiserver, "default-back")
        await world.settled()
        await clock.advance(PERIOD)
        await gc.reconcile()
        assert gc.suspects == {} and gc.terminated == 0
        apiserver.store.delete(NODECLAIMS, "default-back")
        await eventually(lambda: "default-back" not in world.state.snapshot().nodeclaims)
        await clock.advance(PERIOD)
        await gc.reconcile()
        assert gc.terminated == 0, "seen orphaned once since it was claimed"
        await clock.advance(PERIOD)
        await gc.reconcile()
        assert gc.terminated == 1 and not instance_exists(world, leaked)


async def test_the_suspects_kept_are_bounded(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        first = await launched(world, ctx, "default-one")
        second = await launched(world, ctx, "default-two")
        gc = GarbageCollection(ctx, grace=30, max_suspects=1)
        await clock.advance(PAST_GRACE)
        await gc.reconcile()
        assert len(gc.suspects) == 1
        await clock.advance(PERIOD)
        await gc.reconcile()
        await clock.advance(PERIOD)
        await gc.reconcile()
        await clock.advance(PERIOD)
        await gc.reconcile()
        assert gc.terminated == 2
        assert not instance_exists(world, first) and not instance_exists(world, second)


async def test_a_node_the_fake_cloud_did_not_write_is_not_its_instance(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        # Named after itself in a fake:// provider ID, as the fake cloud's are, but made
        # by hand: no KWOK label.
        apiserver.store.create("nodes", f.node("handmade", provider_id="fake://zone/handmade"))
        await world.settled()
        assert await ctx.provider.list() == []
        gc = GarbageCollection(ctx, grace=30)
        await passes(gc, clock, minutes=5)
        assert gc.terminated == 0
        stand_in = NodeClaim.from_dict(
            f.nodeclaim("handmade", nodepool="default", provider_id="fake://zone/handmade")
        )
        with pytest.raises(NodeClaimNotFound):
            await ctx.provider.delete(stand_in)
        assert instance_exists(world, "fake://zone/handmade")
