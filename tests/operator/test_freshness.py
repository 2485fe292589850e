"""A new leader's controllers act only on state listed after it took the lease: a standby
whose watch froze (so it never heard of a Node created since) takes over, relists, and
only then lets the node-lease garbage collector run, which keeps that Node's Lease."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

from karpy.base.component import After
from karpy.kube import resources
from karpy.kube.client import KubeClient
from karpy.kube.events import EventRecorder
from karpy.kube.informer import WatchSpec
from karpy.kube.leaderelection import ElectionConfig, LeaderElector
from karpy.lifecycle.leasegc import LeaseGarbageCollection
from karpy.operator.freshness import FreshState, after_fresh_state
from karpy.reconcile import Controller
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.keys import LeaseKey
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock
from tests.kube.helpers import running, transport_for
from tests.lifecycle.test_leasegc import lease_names, node_lease

NODES = WatchSpec(resources.NODES, p.node_info, kind=kinds.NODE)
LEASES = WatchSpec(resources.LEASES, p.node_lease, namespace="kube-node-lease",
                   kind=kinds.NODE_LEASE)  # fmt: skip
ELECTION = ElectionConfig("karpy-leader-election", "kube-system", "standby",
                          lease_duration=3, renew_deadline=2, retry_period=0.5)  # fmt: skip


@contextlib.asynccontextmanager
async def leading(client: KubeClient, writers: list[Any]) -> AsyncIterator[LeaderElector]:
    elector = LeaderElector(ELECTION, client, writers=writers)
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    try:
        yield elector
    finally:
        stop.set()
        await task


async def standby_takes_over(apiserver: Any, *, gate: bool) -> tuple[list[str], bool]:
    """Lease names left after the new leader's collector has judged every lease, and
    whether the leader's state knew the late Node when the collector started."""
    apiserver.store.create("leases", node_lease("gone"))  # no Node: a real orphan
    frozen = apiserver.faults.freeze_watches("/api/v1/nodes")
    transport = transport_for(apiserver)
    client = KubeClient(transport)
    try:
        async with running(apiserver, [NODES, LEASES]) as (state, informers):
            await asyncio.gather(*(i.synced.wait() for i in informers))
            await eventually(lambda: frozen.hits == 1)
            # Created while the standby's Node watch is frozen: it never hears of the Node.
            apiserver.store.create("nodes", f.node("late"))
            apiserver.store.create("leases", node_lease("late"))
            await eventually(lambda: "kube-node-lease/late" in state.snapshot().node_leases)
            assert "late" not in state.snapshot().nodes
            gc = LeaseGarbageCollection(state, client, clock=FakeClock())
            collector = Controller(gc, state, resync=None)
            fresh = FreshState(informers)
            writers = after_fresh_state(fresh, [collector]) if gate else [collector]
            async with leading(client, writers):
                await collector.started.wait()
                knew_late_node = "late" in state.snapshot().nodes
                leases = [LeaseKey(f"kube-node-lease/{n}") for n in ("gone", "late")]
                await eventually(lambda: gc.deleted >= 1 and not len(collector.queue) and not any(
                    collector.queue.is_processing(lease) for lease in leases
                ))  # fmt: skip
    finally:
        await transport.close()
    return lease_names(apiserver), knew_late_node


async def test_a_new_leader_relists_before_its_collector_runs(apiserver):
    names, knew_late_node = await standby_takes_over(apiserver, gate=True)
    assert knew_late_node
    assert names == ["late"]


async def test_without_the_relist_the_stale_standby_deletes_a_live_nodes_lease(apiserver):
    # The hazard the gate exists for, shown: the same takeover without FreshState.
    names, knew_late_node = await standby_takes_over(apiserver, gate=False)
    assert not knew_late_node
    assert names == []


def test_every_writer_but_the_event_recorder_waits_for_fresh_state():
    recorder = EventRecorder(client=None)  # type: ignore[arg-type]
    other = object()
    fresh = FreshState([])
    gated = after_fresh_state(fresh, [recorder, other])  # type: ignore[list-item]
    assert gated[0] is fresh and gated[1] is recorder
    assert isinstance(gated[2], After) and gated[2].inner is other
    assert gated[2].ready is fresh.fresh
