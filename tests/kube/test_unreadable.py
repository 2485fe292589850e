"""Objects karpy cannot read stay known by key: a placeholder in cluster state, a gauge,
a Warning Event naming the field, and a readable version replaces the placeholder."""

from __future__ import annotations

import asyncio
from typing import Any

from karpy.kube import resources
from karpy.kube.client import KubeClient
from karpy.kube.events import Event, EventRecorder
from karpy.kube.informer import WatchSpec
from karpy.kube.unreadable import UNREADABLE_REASON
from karpy.observability.metrics import Metrics
from karpy.state import kinds
from karpy.state import records as p
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.kube.helpers import running, transport_for

NODES = WatchSpec(resources.NODES, p.node_info, kind=kinds.NODE)
NODECLAIMS = WatchSpec(resources.NODECLAIMS, p.nodeclaim, kind=kinds.NODECLAIM)


class Events:
    """Collects what the informer publishes (the recorder's `publish`)."""

    def __init__(self) -> None:
        self.published: list[Event] = []

    def publish(self, event: Event) -> bool:
        self.published.append(event)
        return True


def unparseable(metrics: Metrics, kind: str) -> float | None:
    return metrics.registry.get_sample_value("karpy_informer_unparseable_objects", {"kind": kind})


def set_status(apiserver: Any, resource: str, name: str, status: dict[str, Any]) -> None:
    apiserver.store.patch(resource, name, {"status": status}, subresource="status")


def bad_condition(time: str) -> dict[str, Any]:
    return f.condition("Ready", "True") | {"lastTransitionTime": time}


async def test_unreadable_nodeclaim_and_node_stay_known_until_fixed(apiserver):
    apiserver.store.create("nodeclaims", f.nodeclaim("claim", provider_id="fake:///i-1"))
    bad_claim_status = {"providerID": "fake:///i-1",
                        "conditions": [bad_condition("2024-01-01t00:00:00z")]}  # fmt: skip
    set_status(apiserver, "nodeclaims", "claim", bad_claim_status)
    apiserver.store.create("nodes", f.node("good"))
    metrics, events = Metrics(), Events()
    async with running(apiserver, [NODES, NODECLAIMS], metrics=metrics, events=events) as (
        state, informers,
    ):  # fmt: skip
        await asyncio.gather(*(i.synced.wait() for i in informers))
        snapshot = state.snapshot()
        assert "claim" not in snapshot.nodeclaims
        assert snapshot.is_unreadable(kinds.NODECLAIM, "claim")
        assert snapshot.unreadable_provider("fake:///i-1", kinds.NODECLAIM)
        assert not snapshot.unreadable_provider("fake:///i-2", kinds.NODECLAIM)
        assert not snapshot.unreadable_provider("fake:///i-1", kinds.NODE)
        assert unparseable(metrics, kinds.NODECLAIM) == 1

        # A Node turns unreadable through the watch: its record makes way for a placeholder.
        apiserver.store.create("nodes", f.node("bad", provider_id="fake:///i-2"))
        await eventually(lambda: "bad" in state.snapshot().nodes)
        set_status(apiserver, "nodes", "bad",
                   {"conditions": [bad_condition("2024-13-01T00:00:00Z")]})  # fmt: skip
        await eventually(lambda: state.snapshot().is_unreadable(kinds.NODE, "bad"))
        assert "bad" not in state.snapshot().nodes
        assert state.snapshot().unreadable_provider("fake:///i-2", kinds.NODE)
        assert unparseable(metrics, kinds.NODE) == 1

        warnings = {(e.involved.kind, e.involved.name): e for e in events.published}
        claim_event = warnings[("NodeClaim", "claim")]
        assert (claim_event.type, claim_event.reason) == ("Warning", UNREADABLE_REASON)
        assert "status.conditions[0].lastTransitionTime" in claim_event.message
        assert "2024-01-01t00:00:00z" in claim_event.message
        assert "status.conditions" in warnings[("Node", "bad")].message
        assert warnings[("Node", "bad")].involved.uid

        # Fixed: the real record replaces the placeholder.
        set_status(apiserver, "nodeclaims", "claim",
                   {"conditions": [bad_condition("2024-01-01T00:00:00Z")]})  # fmt: skip
        set_status(apiserver, "nodes", "bad", {"conditions": [f.condition("Ready", "True")]})
        await eventually(lambda: "claim" in state.snapshot().nodeclaims)
        await eventually(lambda: "bad" in state.snapshot().nodes)
        snapshot = state.snapshot()
        assert not snapshot.is_unreadable(kinds.NODECLAIM, "claim")
        assert not snapshot.is_unreadable(kinds.NODE, "bad")
        assert unparseable(metrics, kinds.NODECLAIM) == 0
        assert unparseable(metrics, kinds.NODE) == 0


async def test_deleting_an_unreadable_object_forgets_it(apiserver):
    apiserver.store.create("nodes", f.node("bad"))
    set_status(apiserver, "nodes", "bad", {"conditions": [bad_condition("yesterday")]})
    metrics = Metrics()
    async with running(apiserver, [NODES], metrics=metrics) as (state, (informer,)):
        await informer.synced.wait()
        assert state.snapshot().is_unreadable(kinds.NODE, "bad")
        apiserver.store.delete("nodes", "bad")
        await eventually(lambda: not state.snapshot().is_unreadable(kinds.NODE, "bad"))
        assert unparseable(metrics, kinds.NODE) == 0


async def test_unreadable_objects_are_announced_again_after_a_relist(apiserver):
    apiserver.store.create("nodes", f.node("bad"))
    set_status(apiserver, "nodes", "bad", {"conditions": [bad_condition("yesterday")]})
    events = Events()
    async with running(apiserver, [NODES], events=events) as (_, (informer,)):
        await informer.synced.wait()
        await informer.resync("test")
    # once when read, once after each of the two lists (a new leader's recorder hears it)
    assert [e.involved.name for e in events.published] == ["bad", "bad", "bad"]


async def test_the_warning_event_reaches_the_api_server(apiserver):
    apiserver.store.create("nodeclaims", f.nodeclaim("claim"))
    set_status(apiserver, "nodeclaims", "claim",
               {"conditions": [bad_condition("2024-01-01t00:00:00z")]})  # fmt: skip
    transport = transport_for(apiserver)
    recorder = EventRecorder(KubeClient(transport), qps=1000, burst=1000)
    stop = asyncio.Event()
    recording = asyncio.create_task(recorder.run(stop))
    await asyncio.sleep(0)  # the recorder runs (leads) before the informer reads
    try:
        async with running(apiserver, [NODECLAIMS], events=recorder) as (_, (informer,)):
            await informer.synced.wait()
            await eventually(lambda: recorder.sent == 1)
    finally:
        stop.set()
        await recording
        await transport.close()
    (event,) = apiserver.store.list("events")
    assert (event["type"], event["reason"]) == ("Warning", UNREADABLE_REASON)
    assert event["involvedObject"]["kind"] == "NodeClaim"
    assert event["involvedObject"]["name"] == "claim"
    assert "lastTransitionTime" in event["message"]
