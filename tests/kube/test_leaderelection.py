"""Leader election against the emulator, with a fake clock: acquire, expiry by the
observer's clock, takeover counting, optimistic concurrency, losing and releasing."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta
from typing import Any

import attrs
import pytest

from karpy.kube.client import KubeClient
from karpy.kube.errors import NotFound
from karpy.kube.leaderelection import (
    ElectionConfig,
    LeaderElector,
    LeadershipLost,
    NoElection,
    default_identity,
    micro_time,
)
from karpy.kube.resources import NAMESPACES
from karpy.observability.metrics import Metrics
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import START, FakeClock, RecordingClock
from tests.kube.helpers import transport_for

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpy-leader-election"


@attrs.define
class Writer:
    """A writer component that notes when it runs and when it is told to stop."""

    name: str = "writer"
    running: bool = False
    stopped_gracefully: bool = False
    cancelled: bool = False

    async def run(self, stop: asyncio.Event) -> None:
        self.running = True
        try:
            await stop.wait()
            self.stopped_gracefully = True
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.running = False


def config(identity: str, **kw) -> ElectionConfig:
    return ElectionConfig("karpy-leader-election", "kube-system", identity, **kw)


@pytest.fixture
async def client(apiserver):
    transport = transport_for(apiserver)
    yield KubeClient(transport, name="leader-election", max_attempts=1)
    await transport.close()


def lease(apiserver) -> dict[str, Any]:
    spec: dict[str, Any] = apiserver.store.get("leases", "karpy-leader-election", "kube-system")[
        "spec"
    ]
    return spec


def start(elector: LeaderElector, stop: asyncio.Event) -> asyncio.Task[None]:
    return asyncio.create_task(elector.run(stop))


async def test_first_candidate_creates_the_lease_and_leads(apiserver, client):
    clock = FakeClock()
    writer = Writer()
    metrics = Metrics()
    elector = LeaderElector(config("a"), client, writers=[writer], clock=clock, metrics=metrics)
    stop = asyncio.Event()
    task = start(elector, stop)
    await asyncio.wait_for(elector.leading.wait(), 5)
    await eventually(lambda: writer.running)
    spec = lease(apiserver)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] == micro_time(START)
    assert (
        metrics.registry.get_sample_value(
            "leader_election_master_status", {"name": "karpy-leader-election"}
        )
        == 1
    )
    stop.set()
    await task
    assert writer.stopped_gracefully


async def test_leader_renews_every_retry_period(apiserver, client):
    clock = FakeClock()
    elector = LeaderElector(config("a"), client, clock=clock)
    stop = asyncio.Event()
    task = start(elector, stop)
    await asyncio.wait_for(elector.leading.wait(), 5)
    for _ in range(3):
        await clock.idle()
        await clock.advance(2)
    await eventually(
        lambda: lease(apiserver)["renewTime"] == micro_time(START + timedelta(seconds=6))
    )
    assert lease(apiserver)["acquireTime"] == micro_time(START)
    stop.set()
    await task


async def test_expiry_is_judged_by_the_observers_clock_not_remote_timestamps(apiserver, client):
    # A lease whose renewTime is a year old, but which this candidate has only just seen:
    # it must still wait a full lease duration of its own time before taking it.
    old = micro_time(START - timedelta(days=365))
    apiserver.store.create("leases", {
        "metadata": {"name": "karpy-leader-election", "namespace": "kube-system"},
        "spec": {"holderIdentity": "old", "leaseDurationSeconds": 15, "acquireTime": old,
                 "renewTime": old, "leaseTransitions": 4},
    })  # fmt: skip
    clock = FakeClock()
    elector = LeaderElector(config("b"), client, clock=clock)
    stop = asyncio.Event()
    task = start(elector, stop)
    await clock.idle()
    await clock.advance(14)
    await clock.idle()
    assert not elector.leading.is_set()
    assert lease(apiserver)["holderIdentity"] == "old"
    await clock.advance(5)
    await asyncio.wait_for(elector.leading.wait(), 5)
    spec = lease(apiserver)
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 5  # incremented on takeover
    stop.set()
    await task


async def test_a_renewing_holder_keeps_the_lease(apiserver, client):
    clock = FakeClock()
    holder = LeaderElector(config("a"), client, clock=clock)
    standby = LeaderElector(config("b"), client, clock=clock)
    stop = asyncio.Event()
    tasks = [start(holder, stop)]
    await asyncio.wait_for(holder.leading.wait(), 5)
    tasks.append(start(standby, stop))
    for _ in range(15):  # 30 s of fake time: the holder renews, so it never expires
        await clock.idle(2)
        await clock.advance(2)
    assert not standby.leading.is_set()
    assert lease(apiserver)["holderIdentity"] == "a"
    stop.set()
    await asyncio.gather(*tasks)


async def test_a_conflicting_write_makes_the_candidate_read_again(apiserver, client):
    clock = FakeClock()
    apiserver.store.create("leases", {
        "metadata": {"name": "karpy-leader-election", "namespace": "kube-system"},
        "spec": {"holderIdentity": "", "leaseDurationSeconds": 1},
    })  # fmt: skip
    apiserver.faults.error("PUT", LEASE_PATH, status=409, count=1)
    elector = LeaderElector(config("a"), client, clock=clock)
    stop = asyncio.Event()
    task = start(elector, stop)
    await clock.idle()
    assert not elector.leading.is_set()  # the 409 lost this round
    await clock.advance(5)
    await asyncio.wait_for(elector.leading.wait(), 5)
    assert lease(apiserver)["leaseTransitions"] == 1
    stop.set()
    await task


async def test_losing_the_lease_stops_writers_before_it_could_expire_and_raises(apiserver, client):
    clock = FakeClock()
    writer = Writer()
    elector = LeaderElector(config("a", lease_duration=15, renew_deadline=10, retry_period=2),
                            client, writers=[writer], clock=clock)  # fmt: skip
    stop = asyncio.Event()
    task = start(elector, stop)
    await asyncio.wait_for(elector.leading.wait(), 5)
    await eventually(lambda: writer.running)
    last_renewed = clock.monotonic()
    apiserver.faults.error("*", LEASE_PATH, status=500, count=None)
    while not task.done():
        await clock.idle()
        assert writer.running == (clock.monotonic() - last_renewed < 10)
        await clock.advance(0.5)
        await asyncio.sleep(0.01)
    with pytest.raises(LeadershipLost):
        await task
    stopped_at = clock.monotonic() - last_renewed
    assert writer.cancelled and not writer.running
    assert 10 <= stopped_at < 15  # after the renew deadline, before others could take over
    assert not elector.leading.is_set()
    assert lease(apiserver)["holderIdentity"] == "a"  # a lost leader does not touch the lease


async def test_clean_stop_releases_the_lease_so_a_standby_takes_over_at_once(apiserver, client):
    clock = FakeClock()
    leader = LeaderElector(config("a"), client, clock=clock)
    standby = LeaderElector(config("b"), client, clock=clock)
    stop_leader, stop_standby = asyncio.Event(), asyncio.Event()
    leading = start(leader, stop_leader)
    await asyncio.wait_for(leader.leading.wait(), 5)
    waiting = start(standby, stop_standby)
    await clock.idle(2)
    stop_leader.set()
    await leading
    spec = lease(apiserver)
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("", 1)
    await clock.advance(2 * 2.2)  # one (jittered) retry period, far less than 15 s
    await asyncio.wait_for(standby.leading.wait(), 5)
    assert lease(apiserver)["holderIdentity"] == "b"
    assert lease(apiserver)["leaseTransitions"] == 1
    stop_standby.set()
    await waiting


async def test_stop_before_leading_returns_without_touching_a_foreign_lease(apiserver, client):
    apiserver.store.create("leases", {
        "metadata": {"name": "karpy-leader-election", "namespace": "kube-system"},
        "spec": {"holderIdentity": "other", "leaseDurationSeconds": 15},
    })  # fmt: skip
    elector = LeaderElector(config("a"), client, clock=FakeClock())
    stop = asyncio.Event()
    task = start(elector, stop)
    await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert lease(apiserver)["holderIdentity"] == "other"


async def test_missing_namespace_is_retried_not_fatal(apiserver, client):
    elector = LeaderElector(
        ElectionConfig("karpy-leader-election", "nowhere", "a"), client, clock=FakeClock()
    )
    stop = asyncio.Event()
    task = start(elector, stop)
    await asyncio.sleep(0.05)
    assert not task.done() and not elector.leading.is_set()
    stop.set()
    await task
    with pytest.raises(NotFound):
        await client.get(NAMESPACES, "nowhere")


async def test_disabled_election_leads_at_once_and_runs_writers():
    writer = Writer()
    election = NoElection([writer])
    stop = asyncio.Event()
    task = asyncio.create_task(election.run(stop))
    await eventually(lambda: election.leading.is_set() and writer.running)
    stop.set()
    await task
    assert writer.stopped_gracefully and not election.leading.is_set()


def test_identity_is_the_pod_name_with_a_random_suffix():
    first = default_identity({"POD_NAME": "karpy-7d9f-abcde"})
    second = default_identity({"POD_NAME": "karpy-7d9f-abcde"})
    assert first.startswith("karpy-7d9f-abcde_") and first != second


def test_timings_must_be_ordered():
    with pytest.raises(ValueError, match="lease_duration > renew_deadline"):
        ElectionConfig("n", "ns", "id", lease_duration=5, renew_deadline=10)


async def test_a_stop_ends_the_elector_whenever_it_lands_in_a_renewal(apiserver, client):
    """Renewals back to back (sleeps return at once), stopped at many moments: a stop
    that lands just as a renewal's answer arrives must still end the renewal loop (a
    cancellation swallowed there kept it renewing for ever, and shutdown waited on it)."""
    rng = random.Random(7)
    for _ in range(300):
        elector = LeaderElector(config("a"), client, clock=RecordingClock())
        stop = asyncio.Event()
        task = start(elector, stop)
        await asyncio.wait_for(elector.leading.wait(), 5)
        await asyncio.sleep(rng.uniform(0.0, 0.005))
        stop.set()
        await asyncio.wait_for(task, 5)
        assert lease(apiserver)["holderIdentity"] == ""
