"""The elector's renewal figures: a duration histogram and the longest renewal as a gauge
(a histogram has no maximum), against the emulator with one slow lease update."""

from __future__ import annotations

import asyncio

import pytest

from karpy.kube.client import KubeClient
from karpy.kube.leaderelection import ElectionConfig, LeaderElector
from karpy.observability.metrics import Metrics
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import RecordingClock
from tests.kube.helpers import transport_for

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpy-leader-election"
NAME = {"name": "karpy-leader-election"}


@pytest.fixture
async def client(apiserver):
    transport = transport_for(apiserver)
    yield KubeClient(transport, name="leader-election", max_attempts=1)
    await transport.close()


async def test_the_longest_renewal_is_kept_after_faster_ones(apiserver, client):
    metrics = Metrics()
    # Real readings, sleeps that return at once: the elector renews back to back.
    elector = LeaderElector(ElectionConfig("karpy-leader-election", "kube-system", "a"),
                            client, clock=RecordingClock(), metrics=metrics)  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    await asyncio.wait_for(elector.leading.wait(), 5)
    apiserver.faults.delay("PUT", LEASE_PATH, 0.2, count=1)  # the next renewal is slow

    def renewals() -> float:
        count = metrics.registry.get_sample_value(
            "karpy_leader_election_renew_duration_seconds_count", NAME
        )
        return count or 0.0

    before = renewals()
    await eventually(lambda: renewals() >= before + 3)  # the slow one and faster ones after
    stop.set()
    await task

    longest = metrics.registry.get_sample_value("karpy_leader_election_renew_longest_seconds", NAME)
    assert longest is not None and longest >= 0.2
