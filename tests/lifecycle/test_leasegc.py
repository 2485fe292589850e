"""The node-lease garbage collector deletes only orphaned, stale leases."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from karpy.kube import resources
from karpy.kube.client import KubeClient
from karpy.kube.informer import WatchSpec
from karpy.kube.leaderelection import micro_time
from karpy.lifecycle.leasegc import LeaseGarbageCollection
from karpy.observability.metrics import Metrics
from karpy.reconcile import Controller
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.factories import Obj
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import START, FakeClock
from tests.kube.helpers import running, transport_for

NODES = WatchSpec(resources.NODES, p.node_info, kind=kinds.NODE)
LEASES = WatchSpec(resources.LEASES, p.node_lease, namespace="kube-node-lease",
                   kind=kinds.NODE_LEASE)  # fmt: skip
LONG_AGO = START - timedelta(minutes=10)


def node_lease(name: str, *, renewed=LONG_AGO, owner: Obj | None = None) -> Obj:
    meta: Obj = {"name": name, "namespace": "kube-node-lease"}
    if owner is not None:
        meta["ownerReferences"] = [owner]
    return {
        "metadata": meta,
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                 "renewTime": micro_time(renewed)},
    }  # fmt: skip


def node_owner(node: Obj) -> Obj:
    return f.owner_reference("Node", node["metadata"]["name"], api_version="v1",
                             uid=node["metadata"]["uid"])  # fmt: skip


async def collect(gc: LeaseGarbageCollection) -> int:
    """Reconcile every lease once; the number deleted."""
    before = gc.deleted
    for key in list(gc.all_keys(gc.state.snapshot())):
        await gc.reconcile(key)
    return gc.deleted - before


def lease_names(apiserver) -> list[str]:
    return sorted(o["metadata"]["name"] for o in apiserver.store.list("leases", "kube-node-lease"))


@pytest.fixture
async def client(apiserver):
    transport = transport_for(apiserver)
    yield KubeClient(transport)
    await transport.close()


async def test_deletes_only_orphaned_stale_leases(apiserver, client):
    live = apiserver.store.create("nodes", f.node("live"))
    other = apiserver.store.create("nodes", f.node("other-name"))
    for lease in (
        node_lease("gone"),  # no node, stale: the one to delete
        node_lease("live"),  # its node exists
        node_lease("owned", owner=node_owner(other)),  # owned by a live node of another name
        node_lease("fresh", renewed=START - timedelta(minutes=1)),  # no node, renewed lately
    ):
        apiserver.store.create("leases", lease)
    del live
    metrics = Metrics()
    async with running(apiserver, [NODES, LEASES]) as (state, informers):
        await asyncio.gather(*(i.synced.wait() for i in informers))
        gc = LeaseGarbageCollection(state, client, metrics=metrics, clock=FakeClock())
        assert await collect(gc) == 1
    assert lease_names(apiserver) == ["fresh", "live", "owned"]
    assert metrics.registry.get_sample_value("karpenter_nodes_leases_deleted_total") == 1


async def test_an_orphan_becomes_collectable_once_the_grace_has_passed(apiserver, client):
    apiserver.store.create("leases", node_lease("young", renewed=START - timedelta(minutes=4)))
    clock = FakeClock()
    async with running(apiserver, [NODES, LEASES]) as (state, informers):
        await asyncio.gather(*(i.synced.wait() for i in informers))
        gc = LeaseGarbageCollection(state, client, clock=clock)
        assert await collect(gc) == 0
        await clock.advance(61)
        assert await collect(gc) == 1
    assert lease_names(apiserver) == []


async def test_a_lease_renewed_after_it_was_judged_survives(apiserver, client):
    created = apiserver.store.create("leases", node_lease("racing"))
    state = ClusterState()
    state.apply(kinds.NODE_LEASE, [("kube-node-lease/racing", p.node_lease(created))], [])
    state.set_synced(kinds.NODE)
    state.set_synced(kinds.NODE_LEASE)
    # The kubelet renews it between the judgement (state above) and the DELETE.
    apiserver.store.patch("leases", "racing", {"spec": {"renewTime": micro_time(START)}},
                          "kube-node-lease")  # fmt: skip
    gc = LeaseGarbageCollection(state, client, clock=FakeClock())
    assert await collect(gc) == 0
    assert lease_names(apiserver) == ["racing"]


async def test_nothing_is_collected_before_nodes_and_leases_are_listed(apiserver, client):
    created = apiserver.store.create("leases", node_lease("early"))
    state = ClusterState()
    state.apply(kinds.NODE_LEASE, [("kube-node-lease/early", p.node_lease(created))], [])
    state.set_synced(kinds.NODE_LEASE)  # nodes not listed yet: every lease looks orphaned
    gc = LeaseGarbageCollection(state, client, clock=FakeClock())
    assert await collect(gc) == 0
    assert lease_names(apiserver) == ["early"]


async def test_an_orphan_is_looked_at_again_when_it_becomes_stale(apiserver, client):
    apiserver.store.create("leases", node_lease("young", renewed=START - timedelta(minutes=4)))
    clock = FakeClock()
    async with running(apiserver, [NODES, LEASES]) as (state, informers):
        await asyncio.gather(*(i.synced.wait() for i in informers))
        gc = LeaseGarbageCollection(state, client, clock=clock)
        controller = Controller(gc, state, clock=clock, resync=None)
        stop = asyncio.Event()
        task = asyncio.create_task(controller.run(stop))
        await controller.started.wait()
        await clock.idle()
        assert lease_names(apiserver) == ["young"]
        await clock.advance(61)
        await eventually(lambda: lease_names(apiserver) == [])
        stop.set()
        await task


async def test_a_node_deletion_wakes_the_collector_without_waiting_for_the_period(
    apiserver, client
):
    node = apiserver.store.create("nodes", f.node("worker"))
    apiserver.store.create("leases", node_lease("worker"))  # stale, but its node is there
    clock = FakeClock()
    async with running(apiserver, [NODES, LEASES]) as (state, informers):
        await asyncio.gather(*(i.synced.wait() for i in informers))
        gc = LeaseGarbageCollection(state, client, clock=clock)
        controller = Controller(gc, state, clock=clock, resync=3600)
        stop = asyncio.Event()
        task = asyncio.create_task(controller.run(stop))
        await controller.started.wait()
        await clock.idle()
        assert lease_names(apiserver) == ["worker"]
        apiserver.store.delete("nodes", node["metadata"]["name"])
        await eventually(lambda: lease_names(apiserver) == [])
        stop.set()
        await task
    assert gc.deleted == 1


async def test_the_lease_of_a_node_karpy_cannot_read_is_kept(apiserver, client):
    apiserver.store.create("nodes", f.node("unreadable"))
    bad = f.condition("Ready", "True") | {"lastTransitionTime": "2024-01-01t00:00:00z"}
    apiserver.store.patch("nodes", "unreadable", {"status": {"conditions": [bad]}},
                          subresource="status")  # fmt: skip
    apiserver.store.create("leases", node_lease("unreadable"))
    apiserver.store.create("leases", node_lease("gone"))
    async with running(apiserver, [NODES, LEASES]) as (state, informers):
        await asyncio.gather(*(i.synced.wait() for i in informers))
        assert "unreadable" not in state.snapshot().nodes
        gc = LeaseGarbageCollection(state, client, clock=FakeClock())
        assert await collect(gc) == 1
    assert lease_names(apiserver) == ["unreadable"]
