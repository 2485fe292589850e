"""The elector's own thread: renewals go on while the main event loop is blocked or the
solver holds the GIL, and losing the lease stops every writer at once, even a writer that
was about to write when the loop, blocked at the moment of the loss, ran again.

The emulator runs as a subprocess (``karpy sandbox apiserver``), so blocking this test's
event loop does not block it too; a plain thread reads the Lease over HTTP while the loop
is blocked, to see its ``renewTime`` advance.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import urllib.request
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from karpy.kube.client import KubeClient, WriteGate, WritesStopped
from karpy.kube.electionthread import ThreadedLeaderElector
from karpy.kube.leaderelection import ElectionConfig, LeadershipLost
from karpy.kube.resources import Resource
from karpy.observability.metrics import Metrics
from tests.e2e.processes import ApiServerProcess, apiserver_process
from tests.fixtures.waiting import eventually
from tests.kube.helpers import transport_for

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator
    from contextlib import AbstractAsyncContextManager
    from pathlib import Path

LEASE_PATH = "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/karpy-leader-election"
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", namespaced=True)


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[ApiServerProcess]:
    with apiserver_process(tmp_path) as server:
        yield server


def connect_to(url: str) -> Callable[[], AbstractAsyncContextManager[KubeClient]]:
    @contextlib.asynccontextmanager
    async def connect() -> AsyncIterator[KubeClient]:
        transport = transport_for(url)  # made on the elector's thread, for its loop
        try:
            yield KubeClient(transport, name="leader-election", max_attempts=1)
        finally:
            await transport.close()

    return connect


def http(url: str, method: str = "GET", body: Any = None) -> Any:
    """A request from outside the event loop (it works while the loop is blocked)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


class LeaseReader:
    """Reads the Lease every 0.1 s on a thread of its own; `renewals` are the distinct
    (holder, renewTime) pairs seen, in order."""

    def __init__(self, url: str) -> None:
        self.url = url + LEASE_PATH
        self.renewals: list[tuple[str, str]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, daemon=True)

    def __enter__(self) -> LeaseReader:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def mark(self) -> int:
        return len(self.renewals)

    def _read(self) -> None:
        while not self._stop.wait(0.1):
            with contextlib.suppress(OSError):
                spec = http(self.url)["spec"]
                seen = (spec.get("holderIdentity") or "", spec.get("renewTime") or "")
                if not self.renewals or self.renewals[-1] != seen:
                    self.renewals.append(seen)


@attrs.define
class Writer:
    """Creates a ConfigMap each time `go` is set, through a client behind ``gate``."""

    client: KubeClient
    name: str = "writer"
    go: asyncio.Event = attrs.field(factory=asyncio.Event)
    written: list[str] = attrs.field(factory=list)
    refused: list[WritesStopped] = attrs.field(factory=list)
    running: bool = False
    cancelled: bool = False

    async def run(self, stop: asyncio.Event) -> None:
        self.running = True
        try:
            while not stop.is_set():
                await self.go.wait()
                self.go.clear()
                name = f"{self.name}-{len(self.written)}"
                body = {"metadata": {"name": name, "namespace": "default"}, "data": {}}
                try:
                    await self.client.create(CONFIGMAPS, body)
                except WritesStopped as exc:
                    self.refused.append(exc)
                    raise
                self.written.append(name)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        finally:
            self.running = False


def election(identity: str = "a", **timings: float) -> ElectionConfig:
    return ElectionConfig("karpy-leader-election", "kube-system", identity, **timings)


def renewals(metrics: Metrics) -> float:
    value = metrics.registry.get_sample_value(
        "karpy_leader_election_renew_duration_seconds_count", {"name": "karpy-leader-election"}
    )
    return value or 0.0


@pytest.mark.slow
async def test_renewals_go_on_while_the_main_loop_is_blocked_for_15_seconds(emulator):
    metrics = Metrics()
    transport = transport_for(emulator.url)
    writer = Writer(KubeClient(transport, max_attempts=1))
    elector = ThreadedLeaderElector(
        # A 15 s stall is three renew deadlines: a renewal on the main loop would lose it.
        election(lease_duration=8, renew_deadline=5, retry_period=0.5),
        connect_to(emulator.url), writers=[writer], metrics=metrics,
    )  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    try:
        await asyncio.wait_for(elector.leading.wait(), 10)
        await eventually(lambda: writer.running)
        with LeaseReader(emulator.url) as reader:
            await eventually(lambda: reader.mark() > 0)
            before, renewed_before = reader.mark(), renewals(metrics)
            time.sleep(15)  # noqa: ASYNC251 - the synthetic stall, on the main loop itself
            during = reader.renewals[before:]
            renewed_during = renewals(metrics) - renewed_before
        # Five times the renew deadline without the loop: every retry period renewed.
        assert len(during) >= 10, during
        assert {holder for holder, _ in during} == {"a"}
        assert renewed_during >= 10
        assert not task.done() and elector.leading.is_set()
        writer.go.set()  # and the writers, never stopped, still write
        await eventually(lambda: writer.written == ["writer-0"])
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)
        await transport.close()
    assert http(emulator.url + LEASE_PATH)["spec"]["holderIdentity"] == ""  # released


def solve_until(done: Callable[[], bool], *, pods: int = 5_000, most: int = 100) -> int:
    """Karpenter's diverse benchmark pods, solved again and again until ``done()``: pure
    Python that holds the GIL between the interpreter's forced switches, as the
    provisioner's solver thread does. Returns how many solves ran."""
    from karpy.apis.labels import AWS_WELL_KNOWN_LABELS
    from karpy.apis.nodepool import NodePool
    from karpy.scheduling.catalog import parse_catalog
    from karpy.scheduling.clustersnapshot import ClusterSnapshot
    from karpy.scheduling.context import build_context
    from karpy.scheduling.pods import pod_from_dict
    from karpy.scheduling.solver import Scheduler
    from tests.bench.bench_scheduling import Workload, catalog, nodepool

    projected = [pod_from_dict(o) for o in Workload().diverse(pods)]
    parsed = parse_catalog(catalog())
    labels = AWS_WELL_KNOWN_LABELS | parsed.well_known_labels
    context = build_context([NodePool.from_dict(nodepool())], parsed.instance_types,
                            provider_labels=labels)  # fmt: skip
    solves = 0
    while not done() and solves < most:
        results = Scheduler(context, ClusterSnapshot()).solve(projected, clock=time.perf_counter,
                                                              budget=3600.0)  # fmt: skip
        assert results.scheduled == pods
        solves += 1
    return solves


async def test_renewals_go_on_while_the_solver_runs_in_a_thread(emulator):
    metrics = Metrics()
    elector = ThreadedLeaderElector(
        # Half the production renew deadline: the solver contends for the GIL and a loaded
        # test machine for the CPU, and what is judged is that renewals go on, not their speed.
        election(lease_duration=8, renew_deadline=5, retry_period=0.2),
        connect_to(emulator.url), metrics=metrics,
    )  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    try:
        await asyncio.wait_for(elector.leading.wait(), 10)
        target = renewals(metrics) + 15  # fifteen retry periods
        solves = await asyncio.to_thread(solve_until, lambda: renewals(metrics) >= target)
        assert solves < 100  # the renewals came while solving, not after the solver gave up
        assert renewals(metrics) >= target
        assert not task.done() and elector.leading.is_set()
        assert http(emulator.url + LEASE_PATH)["spec"]["holderIdentity"] == "a"
    finally:
        stop.set()
        await asyncio.wait_for(task, 15)


def take_over(url: str, identity: str) -> None:
    """Another replica writes the Lease as its own (as after a network partition)."""
    lease = http(url + LEASE_PATH)
    lease["spec"].update(holderIdentity=identity, leaseDurationSeconds=60)
    http(url + LEASE_PATH, "PUT", lease)


def configmaps(url: str) -> list[str]:
    listed = http(url + "/api/v1/namespaces/default/configmaps")
    return sorted(item["metadata"]["name"] for item in listed["items"])


async def test_losing_the_lease_while_the_loop_is_blocked_stops_every_writer_unwritten(
    emulator,
):
    gate = WriteGate()
    transport = transport_for(emulator.url)
    writers = [Writer(KubeClient(transport, max_attempts=1, write_gate=gate), name=name)
               for name in ("launcher", "terminator")]  # fmt: skip
    first, second = writers
    elector = ThreadedLeaderElector(
        election(lease_duration=3, renew_deadline=2, retry_period=0.5),
        connect_to(emulator.url), writers=writers, write_gate=gate,
    )  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    try:
        await asyncio.wait_for(elector.leading.wait(), 10)
        first.go.set()
        await eventually(lambda: first.written == ["launcher-0"] and second.running)
        take_over(emulator.url, "b")
        # The first writer is woken (ready to run next) and then the loop blocks past the
        # renew deadline: the lease is lost while nothing on this loop can react.
        first.go.set()
        time.sleep(4)  # noqa: ASYNC251 - the main loop, blocked when the lease is lost
        assert gate.closed  # the elector's thread closed the gate during the block
        with pytest.raises(LeadershipLost):
            await asyncio.wait_for(task, 10)
    finally:
        stop.set()
        await transport.close()
    assert configmaps(emulator.url) == ["launcher-0"]  # nothing written after the loss
    assert first.refused and not first.running  # it ran first, and was refused
    assert second.cancelled and not second.running  # cancelled at once, never wrote
    assert not elector.leading.is_set()
    assert http(emulator.url + LEASE_PATH)["spec"]["holderIdentity"] == "b"


async def test_a_stop_before_leading_ends_the_thread_without_touching_a_foreign_lease(
    emulator,
):
    http(emulator.url + "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", "POST", {
        "metadata": {"name": "karpy-leader-election", "namespace": "kube-system"},
        "spec": {"holderIdentity": "other", "leaseDurationSeconds": 15},
    })  # fmt: skip
    elector = ThreadedLeaderElector(election(), connect_to(emulator.url))
    stop = asyncio.Event()
    task = asyncio.create_task(elector.run(stop))
    await asyncio.sleep(0.3)
    assert not elector.leading.is_set()
    stop.set()
    await asyncio.wait_for(task, 10)
    assert http(emulator.url + LEASE_PATH)["spec"]["holderIdentity"] == "other"
    assert not any(t.name.startswith("leader-election") for t in threading.enumerate())
