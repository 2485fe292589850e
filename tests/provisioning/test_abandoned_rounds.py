"""A provisioning round cancelled mid-solve (the controller stopping, or losing its lease)
stops its solver thread and creates nothing; an uncancelled round still creates.
`solve_in_thread` is what ends the thread: it sets the solve's flag and waits for it."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

import pytest

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.provisioning.provisioner import CREATE_CONCURRENCY, Provisioner
from karpy.rounds.cancellable import solve_in_thread
from karpy.scheduling.solver import SolveCancelled
from karpy.settings import Settings
from tests import factories as f
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.fixtures.waiting import eventually


@contextlib.asynccontextmanager
async def provisioning(apiserver, pods: int) -> AsyncIterator[tuple[World, Provisioner]]:
    async with controller_world(apiserver) as world:
        apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
        apiserver.store.create("nodepools.karpenter.sh", f.nodepool("default"))
        # Every pod its own shape and its own node: a solve that takes a while.
        for i in range(pods):
            pod = f.pod(
                f"web-{i}", requests={"cpu": f"{100 + i}m"}, labels={"app": "web"},
                unschedulable=True,
                pod_anti_affinity=[f.pod_affinity_term("kubernetes.io/hostname",
                                                       match_labels={"app": "web"})],
            )  # fmt: skip
            created = apiserver.store.create("pods", pod)
            created["status"] = pod["status"]  # as kube-scheduler marks it
            apiserver.store.update_status("pods", created)
        await world.settled(within=30)
        unavailable = UnavailableOfferings()
        provider = FakeCloudProvider(embedded_catalog(), client=world.client, state=world.state,
                                     unavailable=unavailable)  # fmt: skip
        provisioner = Provisioner(
            world.state, world.client, provider, world.recorder,
            Settings(cluster_name="test", cloud_provider="fake"),
            unavailable=unavailable,
            metrics=world.metrics.karpenter, clock=SYSTEM_CLOCK,
        )  # fmt: skip
        yield world, provisioner


def rounds(world: World, outcome: str) -> float:
    value = world.metrics.registry.get_sample_value(
        "karpy_provisioning_rounds_total", {"outcome": outcome}
    )
    return value or 0.0


@pytest.mark.timeout(120)
async def test_a_round_cancelled_mid_solve_stops_the_solve_and_creates_nothing(apiserver):
    async with provisioning(apiserver, pods=3000) as (world, provisioner):
        round_ = asyncio.create_task(provisioner.reconcile())
        await eventually(lambda: provisioner.solving, within=30)
        round_.cancel()
        with pytest.raises(asyncio.CancelledError):
            await round_
        # Counted only once the solver thread has returned, with the cancellation.
        assert rounds(world, "abandoned") == 1
        assert not provisioner.solving
        await world.settled()
        assert apiserver.store.list("nodeclaims.karpenter.sh") == []
        assert world.events("Nominated") == []


async def test_a_round_left_alone_creates_its_nodeclaims(apiserver):
    async with provisioning(apiserver, pods=3) as (world, provisioner):
        await provisioner.reconcile()
        assert rounds(world, "abandoned") == 0
        assert len(apiserver.store.list("nodeclaims.karpenter.sh")) == 3


@pytest.mark.timeout(60)
async def test_cancelling_the_awaiting_task_sets_the_flag_and_waits_for_the_thread():
    finished: list[str] = []

    def solve(cancel: threading.Event) -> str:
        started.set()
        cancel.wait(timeout=50)  # a solve that only stops when told
        finished.append("saw the flag" if cancel.is_set() else "ran to its end")
        raise SolveCancelled(0)

    started = threading.Event()
    solving = asyncio.create_task(solve_in_thread(solve))
    await asyncio.to_thread(started.wait)
    solving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await solving
    assert finished == ["saw the flag"]  # the thread has returned, having been told


async def test_an_uncancelled_solve_returns_its_result():
    assert await solve_in_thread(lambda cancel: "planned" if not cancel.is_set() else "") == (
        "planned"
    )


@pytest.mark.timeout(120)
async def test_a_round_creating_many_nodeclaims_holds_a_bounded_number_of_tasks(apiserver):
    # Cancelling a round at shutdown cancels its creation tasks; there must be few of them
    # (a task per NodeClaim waiting on a semaphore costs quadratic time to cancel).
    async with provisioning(apiserver, pods=300) as (_, provisioner):
        apiserver.faults.delay("POST", "/apis/karpenter.sh/v1/nodeclaims", seconds=0.2,
                               count=None)  # fmt: skip
        round_ = asyncio.create_task(provisioner.reconcile())
        await eventually(lambda: apiserver.store.list("nodeclaims.karpenter.sh"), within=60)
        creating = [t for t in asyncio.all_tasks() if _creating(t)]
        round_.cancel()
        with pytest.raises(asyncio.CancelledError):
            await round_
        assert 0 < len(creating) <= CREATE_CONCURRENCY
        assert 0 < len(apiserver.store.list("nodeclaims.karpenter.sh")) < 300


def _creating(task: asyncio.Task[object]) -> bool:
    return getattr(task.get_coro(), "__qualname__", "").startswith("Provisioner._create_all")
