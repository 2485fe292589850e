"""`NodeRepair` against the API server emulator with the fake cloud's repair policies
(``Ready`` False or Unknown for ten minutes), on the fake clock: an unhealthy node's
NodeClaim is deleted with its drain deadline set to now, unless too much of its NodePool
is unhealthy at once."""

from __future__ import annotations

import asyncio
from datetime import datetime

import pytest

from karpy.apis.core import format_time
from karpy.apis.labels import ANNOTATION_TERMINATION_TIMESTAMP, FINALIZER_TERMINATION
from karpy.disruption.repair import BLOCKED_RETRY, NodeRepair
from karpy.lifecycle.context import Lifecycle
from karpy.reconcile import DONE, Controller
from karpy.sandbox.apiserver import APIServer
from karpy.state import kinds
from karpy.state.cluster import StateChange
from karpy.state.keys import NodeName
from tests import factories as f
from tests.fixtures.cluster import World
from tests.fixtures.lifecycle import lifecycle, running_nodeclaim
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
TOLERATION = 600.0  # the fake cloud's: ten minutes


def kubelet_stops_reporting(apiserver: APIServer, name: str, since: datetime) -> None:
    node = apiserver.store.get("nodes", name, None)
    node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown",
                                     "reason": "NodeStatusUnknown", "message": "",
                                     "lastTransitionTime": format_time(since)}]  # fmt: skip
    apiserver.store.update_status("nodes", node)


def repair(world: World, ctx: Lifecycle, clock: FakeClock) -> NodeRepair:
    return NodeRepair(world.state, world.client, world.recorder, ctx.provider.repair_policies(),
                      clock=clock, metrics=world.metrics.karpenter)  # fmt: skip


async def test_a_node_unready_past_the_toleration_is_replaced_forcefully(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        for name in ("default-a", "default-b", "default-c", "default-d", "default-e"):
            await running_nodeclaim(apiserver, world, ctx, name,
                                    finalizers=[FINALIZER_TERMINATION])  # fmt: skip
        kubelet_stops_reporting(apiserver, "default-a", clock.now().replace(microsecond=0))
        apiserver.store.create("pods", f.pod("web-1", node_name="default-a", phase="Running"))
        await world.settled()
        health = repair(world, ctx, clock)

        left = (await health.reconcile(NodeName("default-a"))).requeue_after
        assert left == pytest.approx(TOLERATION, abs=1)
        assert await health.reconcile(NodeName("default-b")) == DONE, (
            "a healthy node: nothing to wait for"
        )

        await clock.advance(TOLERATION)
        assert await health.reconcile(NodeName("default-a")) == DONE
        claim = apiserver.store.get(NODECLAIMS, "default-a")
        assert claim["metadata"]["deletionTimestamp"]
        assert claim["metadata"]["annotations"][ANNOTATION_TERMINATION_TIMESTAMP] == (
            format_time(clock.now()))  # fmt: skip
        labels = {"reason": "unhealthy", "nodepool": "default",
                  "capacity_type": claim["metadata"]["labels"]["karpenter.sh/capacity-type"],
                  "consolidation_policy": "", "termination_mode": "forceful"}  # fmt: skip
        registry = world.metrics.registry
        assert registry.get_sample_value("karpenter_nodeclaims_disrupted_total", labels) == 1
        assert registry.get_sample_value("karpenter_pods_disruption_initiated_total", labels) == 1


async def two_of_three_unhealthy(
    apiserver: APIServer, world: World, ctx: Lifecycle, clock: FakeClock
) -> None:
    """default-a, -b and -c running; a and b unready for the whole toleration."""
    for name in ("default-a", "default-b", "default-c"):
        await running_nodeclaim(apiserver, world, ctx, name)
    since = clock.now().replace(microsecond=0)
    kubelet_stops_reporting(apiserver, "default-a", since)
    kubelet_stops_reporting(apiserver, "default-b", since)
    await world.settled()
    await clock.advance(TOLERATION)


async def test_repair_holds_off_while_more_than_a_fifth_of_the_pool_is_unhealthy(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await two_of_three_unhealthy(apiserver, world, ctx, clock)

        result = await repair(world, ctx, clock).reconcile(NodeName("default-a"))
        assert result.requeue_after == BLOCKED_RETRY
        assert not apiserver.store.get(NODECLAIMS, "default-a")["metadata"].get(
            "deletionTimestamp")  # fmt: skip
        blocked = await eventually(lambda: world.events("NodeRepairBlocked"))
        assert "2 of 3 nodes" in blocked[0]["message"]


def kubelet_reports_ready(apiserver: APIServer, name: str, since: datetime) -> None:
    node = apiserver.store.get("nodes", name, None)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "message": "", "lastTransitionTime": format_time(since),
                                     "lastHeartbeatTime": format_time(since)}]  # fmt: skip
    apiserver.store.update_status("nodes", node)


def deleting(apiserver: APIServer, name: str) -> bool:
    return bool(apiserver.store.get(NODECLAIMS, name)["metadata"].get("deletionTimestamp"))


async def test_a_blocked_node_is_repaired_as_soon_as_its_pool_recovers_enough(apiserver):
    """No timer: the blocked node is looked at again when another node's health changes,
    while a heartbeat (no health change) wakes nobody else."""
    async with lifecycle(apiserver) as (world, ctx, clock):
        await two_of_three_unhealthy(apiserver, world, ctx, clock)
        health = repair(world, ctx, clock)
        for name in ("default-a", "default-b"):
            assert (await health.reconcile(NodeName(name))).requeue_after == BLOCKED_RETRY

        before = world.state.snapshot().nodes["default-c"]
        kubelet_reports_ready(apiserver, "default-c", clock.now())  # a heartbeat
        await world.settled()
        after = world.state.snapshot().nodes["default-c"]
        assert after is not before
        heartbeat = StateChange(kinds.NODE, "default-c", before, after)
        assert set(health.keys_for(heartbeat)) == {"default-c"}

        controller = Controller(health, world.state, clock=clock, resync=None)
        stop = asyncio.Event()
        task = asyncio.create_task(controller.run(stop))
        await controller.started.wait()
        await clock.idle()
        assert not deleting(apiserver, "default-a") and not deleting(apiserver, "default-b")
        kubelet_reports_ready(apiserver, "default-b", clock.now())  # one of three: allowed
        await eventually(lambda: deleting(apiserver, "default-a"))
        assert not deleting(apiserver, "default-b")
        stop.set()
        await task
