"""The controller's HTTP endpoints, served by a real `Runtime` against the emulator:
readiness follows cluster-state sync, /metrics parses and carries Karpenter's names,
/healthz fails while the event loop is blocked, profiles come back readable."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import time
from pathlib import Path

import aiohttp
import orjson
import pytest
from kubernetes_asyncio.client.configuration import Configuration
from prometheus_client.parser import text_string_to_metric_families

from karpy.observability.health import LoopWatchdog
from karpy.operator import Operator
from karpy.operator.timings import RuntimeTimings
from karpy.operator.wiring import Runtime
from karpy.settings import Settings
from tests import factories as f
from tests.fixtures.waiting import eventually


def settings(**kw) -> Settings:
    return Settings(cluster_name="test", cloud_provider="fake", metrics_port=0, health_probe_port=0,
                    leader_election_namespace="kube-system", **kw)  # fmt: skip


LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp
FAST_ELECTION = RuntimeTimings(retry_period=0.2, renew_deadline=1, lease_duration=2)
# For tests that are not about election: a profile slows the loop, which must not cost
# the lease on a loaded machine.
PATIENT_ELECTION = RuntimeTimings(retry_period=0.2, renew_deadline=10, lease_duration=15)


async def start(
    apiserver, timings: RuntimeTimings = FAST_ELECTION, profiling_clock=None, **kw
) -> tuple[Runtime, asyncio.Event, asyncio.Task[None]]:
    configuration = Configuration()
    configuration.host = apiserver.url
    runtime = Runtime(settings(**kw), configuration, env={"POD_NAME": "test"}, timings=timings)
    if profiling_clock is not None:
        runtime.http.profiling_clock = profiling_clock
    stop = asyncio.Event()
    task = asyncio.create_task(Operator(runtime.settings, runtime.components).run(stop))
    await asyncio.wait_for(runtime.http.started.wait(), 5)
    return runtime, stop, task


async def finish(runtime: Runtime, stop: asyncio.Event, task: asyncio.Task[None]) -> None:
    stop.set()
    await task
    await runtime.close()


def listening(port: int) -> set[str]:
    """The IPv4 addresses this process listens on at ``port`` (``/proc/net/tcp``, its
    LISTEN sockets, kept to those whose inode is one of this process's descriptors)."""
    mine = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[len("socket:[") : -1])
    found = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        address, port_hex = fields[1].split(":")
        if fields[3] == LISTEN and int(port_hex, 16) == port and fields[9] in mine:
            found.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]))
    return found


async def get(port: int, path: str, host: str = "127.0.0.1") -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://{host}:{port}{path}") as response,
    ):
        return response.status, await response.text()


async def test_each_endpoint_listens_only_on_its_bind_address(apiserver):
    # Every 127/8 address is loopback on Linux: two of them stand for two interfaces.
    runtime, stop, task = await start(
        apiserver, metrics_bind_address="127.0.0.2", health_probe_bind_address="127.0.0.3"
    )
    try:
        metrics, health = runtime.http.metrics_port, runtime.http.health_port
        assert (await get(metrics, "/metrics", host="127.0.0.2"))[0] == 200
        assert (await get(health, "/healthz", host="127.0.0.3"))[0] == 200
        # Asked of the kernel, not by connecting to 127.0.0.1: another test's server may
        # well have been given the same port number on that address.
        assert listening(metrics) == {"127.0.0.2"}
        assert listening(health) == {"127.0.0.3"}
    finally:
        await finish(runtime, stop, task)


async def test_endpoints_listen_on_every_interface_by_default(apiserver):
    runtime, stop, task = await start(apiserver)
    try:
        for host in ("127.0.0.1", "127.0.0.2"):
            assert (await get(runtime.http.metrics_port, "/metrics", host=host))[0] == 200
            assert (await get(runtime.http.health_port, "/healthz", host=host))[0] == 200
    finally:
        await finish(runtime, stop, task)


async def test_readyz_turns_ready_only_once_cluster_state_is_synced(apiserver):
    for _ in range(3):
        apiserver.store.create("pods", f.pod())
    apiserver.faults.delay("GET", "/api/v1/pods", seconds=1.0, count=1)
    runtime, stop, task = await start(apiserver)
    try:
        status, text = await get(runtime.http.health_port, "/readyz")
        assert status == 500
        assert "waiting for" in text and "Pod" in text
        await asyncio.wait_for(runtime.informers.synced.wait(), 10)
        status, text = await get(runtime.http.health_port, "/readyz")
        assert (status, text) == (200, "ok\n")
    finally:
        await finish(runtime, stop, task)


async def test_metrics_parse_and_carry_karpenter_and_runtime_names(apiserver):
    apiserver.store.create("nodes", f.node("n1"))
    runtime, stop, task = await start(apiserver)
    try:
        await asyncio.wait_for(runtime.informers.synced.wait(), 10)
        await eventually(runtime.elector.leading.is_set)
        status, text = await get(runtime.http.metrics_port, "/metrics")
    finally:
        await finish(runtime, stop, task)
    assert status == 200
    families = {family.name: family for family in text_string_to_metric_families(text)}
    samples = {s.name: s for family in families.values() for s in family.samples}
    for name in (
        "karpenter_cluster_state_synced",
        "karpenter_cluster_state_node_count",
        "karpenter_cluster_state_unsynced_time_seconds",
        "leader_election_master_status",
        "karpenter_build_info",
        "karpy_build_info",
        "karpy_informer_objects",
        "karpy_informer_synced",
        "karpy_informer_last_sync_timestamp_seconds",
        "karpy_informer_sync_duration_seconds",
        "karpy_informer_relists_total",
        "karpy_informer_events_total",
        "karpy_event_loop_lag_seconds",
        "process_resident_memory_bytes",
    ):
        assert name in samples or name.removesuffix("_total") in families, name
    assert samples["karpenter_cluster_state_synced"].value == 1
    assert samples["karpenter_cluster_state_node_count"].value == 1
    assert samples["leader_election_master_status"].labels == {"name": "karpy-leader-election"}
    assert samples["leader_election_master_status"].value == 1
    assert not any(name.endswith("_created") for name in samples)
    assert "karpenter_nodes_leases_deleted" in families
    assert "client_go_request" in families
    assert "karpy_kube_client_requests" in families


async def test_cluster_state_observability_can_be_turned_off(apiserver):
    runtime, stop, task = await start(apiserver, disable_cluster_state_observability=True)
    try:
        _, text = await get(runtime.http.metrics_port, "/metrics")
    finally:
        await finish(runtime, stop, task)
    assert "karpenter_cluster_state_synced 0.0" in text  # exported, but never computed
    assert runtime.metrics.registry.get_sample_value("karpenter_cluster_state_synced") == 0


async def test_healthz_fails_while_the_event_loop_is_blocked():
    watchdog = LoopWatchdog(tick=0.05, threshold=0.2, window=2.0)
    stop = asyncio.Event()
    task = asyncio.create_task(watchdog.run(stop))
    await asyncio.sleep(0.2)
    assert watchdog.health() == (True, "ok")
    time.sleep(0.5)  # noqa: ASYNC251 - a synchronous call that hogs the loop
    healthy, reason = watchdog.health()
    assert not healthy and "event loop lagged" in reason
    await asyncio.sleep(0.1)
    assert not watchdog.health()[0]  # the late tick is remembered for the window
    stop.set()
    await task


async def test_healthz_endpoint_reports_a_blocked_loop(apiserver):
    # Default election timings: a 1.5 s block must not also cost the lease here.
    runtime, stop, task = await start(apiserver, RuntimeTimings())
    # Below the 1.5 s block, above what start-up costs the loop on a loaded machine
    # (0.2 s was exceeded there once, and the lag stays on record for 30 s).
    runtime.watchdog.threshold = 1.0
    try:
        assert await get(runtime.http.health_port, "/healthz") == (200, "ok\n")
        assert await get(runtime.http.health_port, "/livez") == (200, "ok\n")
        loop = asyncio.get_running_loop()
        loop.call_soon(time.sleep, 1.5)  # blocks the loop between two ticks
        await asyncio.sleep(0.01)
        status, text = await get(runtime.http.health_port, "/healthz")
        livez = await get(runtime.http.health_port, "/livez")
    finally:
        await finish(runtime, stop, task)
    assert status == 500
    assert "event loop lagged" in text
    assert livez[0] == 500, "/livez is the same check as /healthz"


async def test_profiles_are_served_only_when_enabled(apiserver):
    runtime, stop, task = await start(apiserver)
    try:
        status, _ = await get(runtime.http.metrics_port, "/debug/pprof/profile?seconds=0.1")
    finally:
        await finish(runtime, stop, task)
    assert status == 404


@pytest.mark.timeout(30)
async def test_cpu_and_heap_profiles(apiserver):
    # Each look at the clock is a minute later: the rate limit never applies here.
    minutes = itertools.count(0, 60).__next__
    runtime, stop, task = await start(apiserver, PATIENT_ELECTION, profiling_clock=minutes,
                                      enable_profiling=True)  # fmt: skip
    port = runtime.http.metrics_port
    try:
        status, html = await get(port, "/debug/pprof/profile?seconds=0.3")
        assert status == 200 and "<html" in html.lower()
        status, speedscope = await get(port, "/debug/pprof/profile?seconds=0.2&format=speedscope")
        assert status == 200
        assert "speedscope" in orjson.loads(speedscope)["$schema"]
        status, _ = await get(port, "/debug/pprof/profile?seconds=0")
        assert status == 400
        status, first = await get(port, "/debug/pprof/heap")
        assert status == 200 and first.startswith("tracemalloc started")
        status, second = await get(port, "/debug/pprof/heap?limit=5&types=true")
        assert status == 200 and "size KiB" in second and "objects" in second
        status, stopped = await get(port, "/debug/pprof/heap?stop=true")
        assert stopped == "tracemalloc stopped\n"
    finally:
        await finish(runtime, stop, task)


def hold_the_lease_elsewhere(apiserver) -> None:
    """Another process leads (for ten minutes), so the runtime under test follows."""
    apiserver.store.create("leases", {
        "metadata": {"name": "karpy-leader-election", "namespace": "kube-system"},
        "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 600},
    })  # fmt: skip


async def test_without_warmup_a_follower_starts_no_informers_until_it_leads(apiserver):
    hold_the_lease_elsewhere(apiserver)
    runtime, stop, task = await start(apiserver, disable_controller_warmup=True)
    try:
        await asyncio.sleep(0.3)
        assert not any(i.synced.is_set() for i in runtime.informers.informers)
        status, text = await get(runtime.http.health_port, "/readyz")
        assert status == 500 and "waiting for" in text
        assert "GET /api/v1/pods" not in apiserver.frontend.request_counts
    finally:
        await finish(runtime, stop, task)


async def test_followers_keep_informers_warm_by_default(apiserver):
    hold_the_lease_elsewhere(apiserver)
    runtime, stop, task = await start(apiserver)
    try:
        await asyncio.wait_for(runtime.informers.synced.wait(), 10)
        assert not runtime.elector.leading.is_set()
        assert (await get(runtime.http.health_port, "/readyz"))[0] == 200
    finally:
        await finish(runtime, stop, task)


async def test_added_writers_run_only_while_leading(apiserver):
    apiserver.store.create("leases", {
        "metadata": {"name": "karpy-leader-election", "namespace": "kube-system"},
        "spec": {"holderIdentity": "someone-else", "leaseDurationSeconds": 1},
    })  # fmt: skip
    ran = asyncio.Event()

    class Writer:
        name = "test-writer"

        async def run(self, stop: asyncio.Event) -> None:
            assert runtime.elector.leading.is_set()
            ran.set()
            await stop.wait()

    configuration = Configuration()
    configuration.host = apiserver.url
    runtime = Runtime(settings(), configuration, env={}, timings=FAST_ELECTION)
    runtime.add_writer(Writer())
    stop = asyncio.Event()
    task = asyncio.create_task(Operator(runtime.settings, runtime.components).run(stop))
    try:
        await asyncio.wait_for(ran.wait(), 10)  # once the foreign lease has expired
    finally:
        await finish(runtime, stop, task)
