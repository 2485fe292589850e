"""Liveness (give up on NodeClaims that never launch or never join) and garbage
collection (instances without NodeClaims, NodeClaims without instances), against the
API server emulator with the fake cloud and a fake clock."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from karpy.apis.labels import FINALIZER_TERMINATION
from karpy.apis.nodeclaim import NodeClaim
from karpy.kube.resources import NODES
from karpy.lifecycle.finalize import finalize
from karpy.lifecycle.garbagecollection import GarbageCollection
from karpy.lifecycle.liveness import check_liveness
from tests import factories as f
from tests.fixtures.cluster import World
from tests.fixtures.lifecycle import lifecycle
from tests.fixtures.waiting import eventually

NODECLAIMS = "nodeclaims.karpenter.sh"


def stored_claim(apiserver: Any, name: str, *, launched_at: str | None = None) -> NodeClaim:
    spec = f.nodeclaim(name, nodepool="default", launched=False,
                       requests={"cpu": "500m", "memory": "1Gi", "pods": "1"})  # fmt: skip
    created = apiserver.store.create(NODECLAIMS, spec)
    if launched_at is not None:
        created["status"] = {"providerID": f"fake://test-zone-a/{name}", "conditions": [{
            "type": "Launched", "status": "True", "reason": "Launched", "message": "",
            "lastTransitionTime": launched_at}]}  # fmt: skip
        created = apiserver.store.update_status(NODECLAIMS, created)
    return NodeClaim.from_dict(created)


def disrupted(world: World, reason: str) -> float:
    value = world.metrics.registry.get_sample_value(
        "karpenter_nodeclaims_disrupted_total",
        {"reason": reason, "nodepool": "default", "capacity_type": "",
         "consolidation_policy": "", "termination_mode": ""},
    )  # fmt: skip
    return value or 0.0


async def test_a_nodeclaim_that_never_launches_is_deleted_after_five_minutes(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        claim = stored_claim(apiserver, "default-nolaunch")
        left = await check_liveness(ctx, claim)
        # The emulator stamps creation with the wall clock, which may run ahead of the
        # fake clock started before it: the deadline is five minutes after creation.
        created = claim.metadata.creation_timestamp
        assert created is not None and left is not None
        expected = (created + timedelta(minutes=5) - clock.now()).total_seconds()
        assert left == pytest.approx(expected) and 290 < left < 310
        await clock.advance(left - 1)
        assert await check_liveness(ctx, claim) is not None
        assert apiserver.store.try_get(NODECLAIMS, "default-nolaunch") is not None
        await clock.advance(2)
        assert await check_liveness(ctx, claim) is None
        assert apiserver.store.try_get(NODECLAIMS, "default-nolaunch") is None
        assert disrupted(world, "launch_timeout") == 1


async def test_a_launched_nodeclaim_whose_node_never_joins_is_deleted_after_fifteen_minutes(
    apiserver,
):
    async with lifecycle(apiserver) as (world, ctx, clock):
        launched_at = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        claim = stored_claim(apiserver, "default-nojoin", launched_at=launched_at)
        await clock.advance(14 * 60)
        left = await check_liveness(ctx, claim)
        assert left is not None and 0 < left <= 60
        await clock.advance(61)
        assert await check_liveness(ctx, claim) is None
        assert apiserver.store.try_get(NODECLAIMS, "default-nojoin") is None
        assert disrupted(world, "registration_timeout") == 1


async def test_an_instance_without_a_nodeclaim_is_terminated_after_the_grace(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        # A launch whose NodeClaim vanished (deleted by hand, its finalizer removed).
        leaked = NodeClaim.from_dict(f.nodeclaim("default-leaked", nodepool="default",
                                                 launched=False))  # fmt: skip
        await ctx.provider.create(leaked)
        await world.settled()
        # The emulator stamps the Node's creation with the wall clock, which has run ahead
        # of the fake clock since the world started (far ahead on a loaded machine).
        node = apiserver.store.get("nodes", "default-leaked", None)
        created = datetime.fromisoformat(node["metadata"]["creationTimestamp"])
        await clock.advance(max(0.0, (created - clock.now()).total_seconds()))
        gc = GarbageCollection(ctx, grace=30)
        await gc.reconcile()
        assert gc.terminated == 0, "too young: its launch may still be recording it"
        await clock.advance(31)
        await gc.reconcile()
        assert gc.terminated == 0, "orphaned once: confirmed on a pass a minute later"
        await clock.advance(60)
        await gc.reconcile()
        assert gc.terminated == 1
        assert await world.client.try_get(NODES, "default-leaked") is None


async def test_an_instance_with_its_nodeclaim_is_left_alone(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        claim = stored_claim(apiserver, "default-kept")
        await ctx.provider.create(claim)
        await world.settled()
        await clock.advance(3600)
        gc = GarbageCollection(ctx, grace=30)
        await gc.reconcile()
        assert gc.terminated == 0


async def test_a_registered_nodeclaim_whose_instance_is_gone_is_deleted(apiserver):
    async with lifecycle(apiserver) as (world, ctx, _clock):
        spec = f.nodeclaim("default-gone", nodepool="default", launched=True, registered=True,
                           provider_id="fake://test-zone-a/default-gone",
                           node_name="default-gone")  # fmt: skip
        created = apiserver.store.create(NODECLAIMS, spec)
        stamp = "2025-01-01T00:00:00Z"
        for condition in spec["status"]["conditions"]:
            condition.update(lastTransitionTime=stamp, reason=condition["type"], message="")
        created["status"] = spec["status"]
        apiserver.store.update_status(NODECLAIMS, created)
        await world.settled()
        gc = GarbageCollection(ctx, grace=30)
        await gc.reconcile()
        assert gc.deleted == 1
        await eventually(lambda: apiserver.store.try_get(NODECLAIMS, "default-gone") is None)
        assert disrupted(world, "garbage_collected") == 1


def unreadable_node(apiserver: Any, name: str, provider_id: str) -> None:
    """A Node for ``provider_id`` that karpy cannot read (a condition time in month 13)."""
    apiserver.store.create("nodes", f.node(name, provider_id=provider_id))
    bad = f.condition("Ready", "True") | {"lastTransitionTime": "2024-13-01T00:00:00Z"}
    apiserver.store.patch("nodes", name, {"status": {"conditions": [bad]}}, subresource="status")


async def test_a_nodeclaim_whose_node_may_be_unreadable_is_not_given_up_on(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        launched_at = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        claim = stored_claim(apiserver, "default-unread", launched_at=launched_at)
        unreadable_node(apiserver, "unread", "fake://test-zone-a/default-unread")
        await eventually(lambda: world.state.snapshot().is_unreadable("Node", "unread"))
        await clock.advance(16 * 60)
        assert await check_liveness(ctx, claim) == 60.0
        assert apiserver.store.try_get(NODECLAIMS, "default-unread") is not None
        assert disrupted(world, "registration_timeout") == 0


async def test_a_deleted_nodeclaim_whose_node_is_unreadable_is_not_terminated_undrained(
    apiserver,
):
    async with lifecycle(apiserver) as (world, ctx, clock):
        name = "default-undrained"
        provider_id = f"fake://test-zone-a/{name}"
        spec = f.nodeclaim(name, nodepool="default", finalizers=[FINALIZER_TERMINATION])
        created = apiserver.store.create(NODECLAIMS, spec)
        since = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
        created["status"] = {"providerID": provider_id, "conditions": [
            {"type": kind, "status": "True", "reason": kind, "message": "",
             "lastTransitionTime": since} for kind in ("Launched", "Registered")]}  # fmt: skip
        apiserver.store.update_status(NODECLAIMS, created)
        unreadable_node(apiserver, "undrained", provider_id)
        await eventually(lambda: world.state.snapshot().is_unreadable("Node", "undrained"))
        apiserver.store.delete(NODECLAIMS, name)
        claim = NodeClaim.from_dict(apiserver.store.get(NODECLAIMS, name))
        result = await finalize(ctx, claim)
        assert result.requeue_after is not None
        stored = apiserver.store.get(NODECLAIMS, name)
        assert FINALIZER_TERMINATION in stored["metadata"]["finalizers"]
