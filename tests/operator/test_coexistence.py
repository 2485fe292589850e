"""karpy does not act while a Karpenter controller does: it looks for Karpenter's leader
Lease in every namespace, does not campaign (so runs no writer) while that Lease is live,
stops every writer at once if one appears while it leads, and says so once per change (a
warning, an Event, ``/readyz``). A stale or released Lease does not hold it back, and
``COEXIST_WITH_KARPENTER=true`` lets it act anyway."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import orjson
import pytest
import structlog

from karpy.kube.client import KubeClient
from karpy.kube.leaderelection import ElectionConfig, LeaderElector, micro_time
from karpy.log import configure_logging
from karpy.operator.coexistence import (
    KARPENTER_LEASE,
    KarpenterDetected,
    KarpenterWatch,
    event_target,
)
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock
from tests.kube.helpers import transport_for

ELECTION = ElectionConfig("karpy-leader-election", "karpy", "karpy-0",
                          lease_duration=3, renew_deadline=2, retry_period=0.5)  # fmt: skip
TARGET = event_target({"POD_NAME": "karpy-0"}, namespace="karpy",
                      lease_name="karpy-leader-election")  # fmt: skip


def namespace(apiserver: Any, name: str) -> None:
    with contextlib.suppress(Exception):
        apiserver.store.create("namespaces", {"metadata": {"name": name}})


def karpenter_lease(apiserver: Any, clock: FakeClock, *, ns: str = "karpenter",
                    holder: str = "karpenter-5d8f_1a2b", ago: float = 0.0) -> None:  # fmt: skip
    """Karpenter's leader Lease in ``ns``, renewed ``ago`` seconds before ``clock``'s now."""
    namespace(apiserver, ns)
    stamp = micro_time(clock.now() - timedelta(seconds=ago))
    spec = {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": stamp,
            "renewTime": stamp, "leaseTransitions": 3}  # fmt: skip
    existing = [o for o in apiserver.store.list("leases", ns)
                if o["metadata"]["name"] == KARPENTER_LEASE]  # fmt: skip
    if existing:
        apiserver.store.update("leases", {**existing[0], "spec": spec}, ns)
    else:
        apiserver.store.create("leases", {"metadata": {"name": KARPENTER_LEASE, "namespace": ns},
                                          "spec": spec})  # fmt: skip


def events(apiserver: Any) -> list[tuple[str, str, str, str]]:
    return [(e["type"], e["reason"], e["involvedObject"]["kind"], e["involvedObject"]["name"])
            for e in apiserver.store.list("events", "karpy")]  # fmt: skip


@contextlib.asynccontextmanager
async def watching(apiserver: Any, clock: FakeClock, *,
                   coexist: bool = False) -> AsyncIterator[KarpenterWatch]:  # fmt: skip
    transport = transport_for(apiserver)
    try:
        yield KarpenterWatch(KubeClient(transport, max_attempts=1), coexist=coexist,
                             target=TARGET, clock=clock)  # fmt: skip
    finally:
        await transport.close()


class Writer:
    """A writer that records its life; it ignores ``stop`` (a slow graceful stop), so
    only cancellation ends it."""

    name = "writer"

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = False

    async def run(self, stop: asyncio.Event) -> None:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    yield stream
    structlog.reset_defaults()


def logged(stream: io.StringIO, event: str) -> list[dict[str, Any]]:
    lines = [orjson.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in lines if line.get("message", line.get("event")) == event]


async def test_a_fresh_karpenter_lease_blocks_karpy_and_a_stale_one_does_not(apiserver):
    clock = FakeClock()
    karpenter_lease(apiserver, clock, ns="kube-system", ago=600)  # an old install, crashed
    async with watching(apiserver, clock) as watch:
        await watch.look()
        assert watch.clear.is_set() and not watch.blocked.is_set()
        assert watch.refusal() == ""
        karpenter_lease(apiserver, clock, ns="karpenter", ago=1)
        await watch.look()
        assert watch.blocked.is_set() and not watch.clear.is_set()
        refusal = watch.refusal()
        assert "Lease karpenter/karpenter-leader-election held by karpenter-5d8f_1a2b" in refusal
        assert "kube-system" not in refusal
        assert "COEXIST_WITH_KARPENTER=true" in refusal


async def test_a_released_lease_is_not_a_live_karpenter(apiserver):
    # Karpenter scaled to 0 releases its lease: no holder, a renewTime of just now.
    clock = FakeClock()
    karpenter_lease(apiserver, clock, holder="", ago=0)
    async with watching(apiserver, clock) as watch:
        await watch.look()
        assert watch.clear.is_set()


async def test_a_lease_that_keeps_changing_is_live_whatever_clock_skew_makes_it_look(apiserver):
    clock = FakeClock()
    # Karpenter's node writes times an hour behind ours: by wall clock the lease looks stale.
    karpenter_lease(apiserver, clock, ago=3600)
    async with watching(apiserver, clock) as watch:
        await watch.look()
        assert watch.clear.is_set()
        await clock.advance(2)
        karpenter_lease(apiserver, clock, ago=3600)  # renewed: the record changed
        await watch.look()
        assert watch.blocked.is_set()
        await clock.advance(31)  # no change for longer than the window: gone
        await watch.look()
        assert watch.clear.is_set()


async def test_karpy_campaigns_only_once_the_karpenter_lease_is_stale(apiserver):
    clock = FakeClock()
    karpenter_lease(apiserver, clock, ago=1)
    namespace(apiserver, "karpy")
    writer = Writer()
    async with watching(apiserver, clock) as watch:
        transport = transport_for(apiserver)
        elector = LeaderElector(ELECTION, KubeClient(transport),
                                writers=[watch.halting(writer)])  # fmt: skip
        stop = asyncio.Event()
        gated = asyncio.create_task(watch.gate(elector).run(stop))
        try:
            await watch.look()
            await asyncio.sleep(0.3)
            assert not writer.started.is_set()
            assert apiserver.store.list("leases", "karpy") == [], "karpy did not campaign"
            await clock.advance(31)  # Karpenter stopped renewing (crashed, or scaled down)
            await watch.look()
            await asyncio.wait_for(writer.started.wait(), 5)
            (lease,) = apiserver.store.list("leases", "karpy")
            assert lease["spec"]["holderIdentity"] == "karpy-0"
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(gated, 10)
            await transport.close()


async def test_a_karpenter_appearing_while_karpy_leads_stops_every_writer_at_once(apiserver):
    clock = FakeClock()
    namespace(apiserver, "karpy")
    writers = [Writer(), Writer()]
    async with watching(apiserver, clock) as watch:
        transport = transport_for(apiserver)
        elector = LeaderElector(ELECTION, KubeClient(transport),
                                writers=[watch.halting(w) for w in writers])  # fmt: skip
        stop = asyncio.Event()
        gated = asyncio.create_task(watch.gate(elector).run(stop))
        try:
            await watch.look()
            await asyncio.wait_for(asyncio.gather(*(w.started.wait() for w in writers)), 5)
            karpenter_lease(apiserver, clock, ago=0)
            await watch.look()
            # Not a graceful stop (these writers ignore stop): cancelled, and karpy fails.
            with pytest.raises(KarpenterDetected, match="karpenter/karpenter-leader-election"):
                await asyncio.wait_for(gated, 5)
            assert all(w.cancelled for w in writers)
            (lease,) = apiserver.store.list("leases", "karpy")
            assert lease["spec"]["holderIdentity"] == "", "karpy's lease is released"
        finally:
            stop.set()
            await transport.close()


async def test_a_replica_campaigning_when_karpenter_appears_stops_campaigning_and_waits(
    apiserver,
):
    clock = FakeClock()
    namespace(apiserver, "karpy")
    # Another karpy replica holds karpy's lease: this one campaigns without winning.
    now = micro_time(clock.now())
    apiserver.store.create("leases", {
        "metadata": {"name": "karpy-leader-election", "namespace": "karpy"},
        "spec": {"holderIdentity": "karpy-1", "leaseDurationSeconds": 3600, "acquireTime": now,
                 "renewTime": now}})  # fmt: skip
    writer = Writer()
    async with watching(apiserver, clock) as watch:
        transport = transport_for(apiserver)
        elector = LeaderElector(ELECTION, KubeClient(transport), writers=[watch.halting(writer)])
        stop = asyncio.Event()
        gated = asyncio.create_task(watch.gate(elector).run(stop))
        try:
            await watch.look()
            await asyncio.sleep(0.2)
            karpenter_lease(apiserver, clock, ago=0)
            await watch.look()
            await asyncio.sleep(0.2)
            assert not gated.done(), "a follower waits; it has nothing to stop"
            assert not writer.started.is_set()
        finally:
            stop.set()
            await asyncio.wait_for(gated, 5)
            await transport.close()


async def test_before_any_answer_karpy_waits_and_readyz_says_why(apiserver):
    clock = FakeClock()
    apiserver.faults.error("GET", "/apis/coordination.k8s.io/v1/leases", status=403, count=1)
    async with watching(apiserver, clock) as watch:
        await watch.look()
        assert not watch.clear.is_set() and not watch.blocked.is_set()
        assert watch.refusal().startswith("not yet known whether a Karpenter controller is "
                                          "running: ")  # fmt: skip
        await watch.look()  # the fault is spent: an answer, no Karpenter
        assert watch.clear.is_set() and watch.refusal() == ""


async def test_coexist_with_karpenter_acts_beside_a_live_one_and_still_warns(apiserver):
    clock = FakeClock()
    namespace(apiserver, "karpy")
    karpenter_lease(apiserver, clock, ago=0)
    async with watching(apiserver, clock, coexist=True) as watch:
        await watch.look()
        assert watch.clear.is_set() and not watch.blocked.is_set()
        assert watch.refusal() == ""
        await eventually(lambda: bool(events(apiserver)))
        (event,) = apiserver.store.list("events", "karpy")
        assert event["type"] == "Warning" and event["reason"] == "KarpenterDetected"
        assert "acts anyway" in event["message"]


async def test_one_warning_and_one_event_per_change_and_a_reminder(apiserver, captured_logs):
    clock = FakeClock()
    namespace(apiserver, "karpy")
    pod = apiserver.store.create("pods", {
        "metadata": {"name": "karpy-0", "namespace": "karpy"},
        "spec": {"containers": [{"name": "controller", "image": "karpy"}]}})  # fmt: skip
    karpenter_lease(apiserver, clock, ago=0)
    async with watching(apiserver, clock) as watch:
        for _ in range(3):  # three looks, Karpenter renewing each time
            await watch.look()
            await clock.advance(5)
            karpenter_lease(apiserver, clock, ago=0)
        assert len(logged(captured_logs, "karpenter detected; not acting")) == 1
        assert events(apiserver) == [("Warning", "KarpenterDetected", "Pod", "karpy-0")]
        (event,) = apiserver.store.list("events", "karpy")
        assert event["involvedObject"]["uid"] == pod["metadata"]["uid"], "kubectl describe pod"
        await clock.advance(300)
        karpenter_lease(apiserver, clock, ago=0)
        await watch.look()
        assert len(logged(captured_logs, "karpenter still running; not acting")) == 1
        await clock.advance(60)  # no renewal for a minute: gone
        await watch.look()
        assert len(logged(captured_logs, "karpenter no longer running; karpy may act")) == 1
        await eventually(lambda: len(events(apiserver)) == 2)
        assert sorted(events(apiserver)) == [
            ("Normal", "KarpenterGone", "Pod", "karpy-0"),
            ("Warning", "KarpenterDetected", "Pod", "karpy-0"),
        ]
        assert len(logged(captured_logs, "karpenter detected; not acting")) == 1


def test_events_go_to_karpys_lease_when_it_does_not_know_its_pod():
    target = event_target({}, namespace="karpy", lease_name="karpy-leader-election")
    assert (target.kind, target.name, target.namespace) == ("Lease", "karpy-leader-election",
                                                            "karpy")  # fmt: skip


async def test_the_event_is_recorded_even_when_karpy_may_not_read_its_pod(apiserver):
    clock = FakeClock()
    namespace(apiserver, "karpy")
    apiserver.faults.error("GET", "/api/v1/namespaces/karpy/pods/karpy-0", status=403)
    karpenter_lease(apiserver, clock, ago=0)
    async with watching(apiserver, clock) as watch:
        await watch.look()
        assert events(apiserver) == [("Warning", "KarpenterDetected", "Pod", "karpy-0")]
        (event,) = apiserver.store.list("events", "karpy")
        assert "uid" not in event["involvedObject"]
