"""KubeClient over HTTP: verbs, typed errors, retries that cannot do harm, rate limiting."""

from __future__ import annotations

import asyncio

import pytest

from karpy.kube import resources as r
from karpy.kube.backoff import Backoff, TokenBucket
from karpy.kube.client import KubeClient, Preconditions, priority
from karpy.kube.errors import (
    AlreadyExists,
    Conflict,
    Invalid,
    NotFound,
    ServerError,
    TooManyRequests,
    TransportError,
)
from karpy.observability.metrics import Metrics
from tests import factories as f
from tests.kube.fakeclock import FakeClock, RecordingClock
from tests.kube.helpers import transport_for


@pytest.fixture
async def transport(apiserver):
    transport = transport_for(apiserver)
    yield transport
    await transport.close()


@pytest.fixture
def clock():
    return RecordingClock()


@pytest.fixture
def metrics():
    return Metrics()


@pytest.fixture
def client(transport, clock, metrics):
    return KubeClient(transport, clock=clock, metrics=metrics,
                      backoff=Backoff(0.01, 0.05, clock=clock))  # fmt: skip


def sample(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_create_get_and_list(client):
    created = await client.create(r.PODS, f.pod("web", labels={"app": "web"}))
    assert created["metadata"]["resourceVersion"]
    got = await client.get(r.PODS, "web", "default")
    assert got["metadata"]["uid"] == created["metadata"]["uid"]
    for _ in range(3):
        await client.create(r.PODS, f.pod())
    items, version = await client.list(r.PODS, label_selector="app=web", limit=1)
    assert [i["metadata"]["name"] for i in items] == ["web"]
    items, _ = await client.list(r.PODS, limit=2)
    assert len(items) == 4 and version
    assert await client.try_get(r.PODS, "nope", "default") is None


async def test_create_twice_is_already_exists_and_missing_is_not_found(client):
    await client.create(r.NODES, f.node("n1"))
    with pytest.raises(AlreadyExists):
        await client.create(r.NODES, f.node("n1"))
    with pytest.raises(NotFound):
        await client.get(r.NODES, "n2")


async def test_patch_types(client):
    await client.create(r.NODES, f.node("n1", labels={"a": "1"}))
    merged = await client.patch(r.NODES, "n1", {"metadata": {"labels": {"b": "2"}}})
    assert merged["metadata"]["labels"]["b"] == "2"
    patched = await client.patch(r.NODES, "n1", [
        {"op": "remove", "path": "/metadata/labels/a"}], patch_type="json")  # fmt: skip
    assert "a" not in patched["metadata"]["labels"]
    strategic = await client.patch(r.NODES, "n1", {"spec": {"taints": [
        {"key": "k", "effect": "NoSchedule"}]}}, patch_type="strategic")  # fmt: skip
    assert strategic["spec"]["taints"] == [{"key": "k", "effect": "NoSchedule"}]


async def test_status_patch_changes_only_status(client, apiserver):
    await client.create(r.NODECLAIMS, f.nodeclaim("c1", nodepool="default"))
    done = await client.patch_status(r.NODECLAIMS, "c1", {"status": {"providerID": "x:///1"}})
    assert done["status"]["providerID"] == "x:///1"


async def test_replace_with_a_stale_version_is_conflict(client):
    created = await client.create(r.NODES, f.node("n1"))
    await client.patch(r.NODES, "n1", {"metadata": {"labels": {"x": "y"}}})
    with pytest.raises(Conflict):
        await client.replace(r.NODES, created)
    fresh = await client.get(r.NODES, "n1")
    fresh["metadata"]["labels"]["z"] = "1"
    assert (await client.replace(r.NODES, fresh))["metadata"]["labels"]["z"] == "1"


async def test_delete_with_preconditions(client, apiserver):
    created = await client.create(r.NODES, f.node("n1"))
    await client.patch(r.NODES, "n1", {"metadata": {"labels": {"x": "y"}}})
    old = Preconditions(resource_version=created["metadata"]["resourceVersion"])
    with pytest.raises(Conflict):
        await client.delete(r.NODES, "n1", preconditions=old)
    await client.delete(r.NODES, "n1", preconditions=Preconditions(uid=created["metadata"]["uid"]),
                        propagation_policy="Background")  # fmt: skip
    assert apiserver.store.try_get("nodes", "n1") is None
    with pytest.raises(NotFound):
        await client.delete(r.NODES, "n1")


async def test_invalid_objects_carry_their_causes(client):
    bad = f.nodepool("bad")
    bad["spec"]["weight"] = 500
    with pytest.raises(Invalid) as invalid:
        await client.create(r.NODEPOOLS, bad)
    assert invalid.value.status == 422
    assert any(c.field == "spec.weight" for c in invalid.value.causes)


async def test_bind_and_evict(client, apiserver):
    await client.create(r.NODES, f.node("n1"))
    await client.create(r.PODS, f.pod("web", labels={"app": "web"}))
    await client.bind("web", "default", "n1")
    assert apiserver.store.get("pods", "web", "default")["spec"]["nodeName"] == "n1"
    running = {"status": {"phase": "Running", "conditions": [f.condition("Ready")]}}
    await client.patch_status(r.PODS, "web", running, namespace="default")
    await client.create(r.PDBS, f.pod_disruption_budget("pdb", match_labels={"app": "web"},
                                                        max_unavailable=0))  # fmt: skip
    with pytest.raises(TooManyRequests) as refused:
        await client.evict("web", "default")
    assert any(c.reason == "DisruptionBudget" for c in refused.value.causes)
    assert apiserver.store.try_get("pods", "web", "default") is not None


async def test_evict_without_a_budget_deletes(client, apiserver):
    await client.create(r.PODS, f.pod("lone"))
    await client.evict("lone", "default", delete_options={"gracePeriodSeconds": 0})
    assert apiserver.store.try_get("pods", "lone", "default") is None


async def test_create_event(client, apiserver):
    pod = await client.create(r.PODS, f.pod("web"))
    pod["kind"], pod["apiVersion"] = "Pod", "v1"
    await client.create_event(pod, reason="Nominated", message="Pod should schedule on: x")
    (event,) = apiserver.store.list("events", "default")
    assert (event["reason"], event["involvedObject"]["name"]) == ("Nominated", "web")
    assert event["source"]["component"] == "karpenter"


async def test_429_is_retried_after_retry_after_even_for_creates(client, apiserver, clock,
                                                                 metrics):  # fmt: skip
    apiserver.faults.throttle("POST", "/api/v1/namespaces/default/pods", retry_after=3)
    await client.create(r.PODS, f.pod("web"))
    assert clock.slept == [3.0]
    assert sample(metrics, "karpy_kube_client_retries_total", client="main", verb="create",
                  reason="throttled") == 1  # fmt: skip
    assert sample(metrics, "karpy_kube_client_requests_total", client="main", verb="create",
                  code="429") == 1  # fmt: skip


async def test_storage_initializing_429_on_custom_resources_is_retried(client, apiserver):
    apiserver.faults.storage_initializing(requests=2)
    created = await client.create(r.NODEPOOLS, f.nodepool("default"))
    assert created["metadata"]["name"] == "default"


async def test_server_errors_are_retried_for_reads_only(client, apiserver, clock):
    await client.create(r.NODES, f.node("n1"))
    apiserver.faults.error("GET", "/api/v1/nodes/n1", status=500, count=2)
    assert (await client.get(r.NODES, "n1"))["metadata"]["name"] == "n1"
    assert len(clock.slept) == 2
    apiserver.faults.error("POST", "/api/v1/nodes", status=500, count=1)
    with pytest.raises(ServerError):
        await client.create(r.NODES, f.node("n2"))
    apiserver.faults.error("PATCH", "/api/v1/nodes/n1", status=503, count=1)
    with pytest.raises(ServerError):
        await client.patch(r.NODES, "n1", {"metadata": {"labels": {"a": "b"}}})


async def test_a_dropped_connection_is_not_blindly_repeated_for_creates(client, apiserver):
    # aiohttp itself re-sends an idempotent request once on a dropped connection, so
    # two drops are needed before a GET sees one; a POST sees the first.
    apiserver.faults.drop("POST", "/api/v1/nodes", count=1)
    with pytest.raises(TransportError):
        await client.create(r.NODES, f.node("n1"))
    apiserver.faults.drop("GET", "/api/v1/nodes", count=3)
    items, _ = await client.list(r.NODES)
    assert items == []


async def test_retries_give_up_after_max_attempts(transport, apiserver, clock):
    client = KubeClient(transport, clock=clock, max_attempts=3,
                        backoff=Backoff(0.01, 0.05, clock=clock))  # fmt: skip
    apiserver.faults.error("GET", "/api/v1/nodes", status=500, count=None)
    with pytest.raises(ServerError):
        await client.list(r.NODES)
    assert len(clock.slept) == 2


async def test_rate_limiter_spaces_requests_and_is_measured(transport, metrics):
    clock = FakeClock()
    limiter = TokenBucket(qps=10, burst=2, clock=clock)
    client = KubeClient(transport, limiter=limiter, metrics=metrics, clock=clock)
    await client.list(r.NODES)
    await client.list(r.NODES)  # the burst
    third = asyncio.create_task(client.list(r.NODES))
    await clock.idle()
    assert not third.done()
    await clock.advance(0.1)
    await asyncio.wait_for(third, 5)
    assert sample(metrics, "karpy_kube_client_rate_limiter_wait_seconds_count", client="main") == 3
    assert sample(metrics, "karpy_kube_client_rate_limiter_wait_seconds_sum",
                  client="main") == pytest.approx(0.1)  # fmt: skip


def test_token_bucket_refills_at_qps_up_to_burst():
    clock = FakeClock()
    bucket = TokenBucket(qps=5, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert bucket.reserve() == pytest.approx(0.2)
    assert bucket.reserve() == pytest.approx(0.4)  # waiting callers queue up
    unlimited = TokenBucket(qps=-1, burst=1, clock=clock)
    assert [unlimited.reserve() for _ in range(100)] == [0.0] * 100


def test_backoff_grows_with_jitter_caps_and_resets():
    clock = FakeClock()
    backoff = Backoff(1.0, 8.0, jitter=0.0, clock=clock, reset_after=60)
    assert [backoff.next_delay() for _ in range(5)] == [1, 2, 4, 8, 8]
    backoff.reset()
    assert backoff.next_delay() == 1
    jittered = Backoff(1.0, 8.0, jitter=1.0, clock=clock)
    delays = [jittered.next_delay() for _ in range(3)]
    assert 1 <= delays[0] <= 2 and 2 <= delays[1] <= 4 and 4 <= delays[2] <= 8


async def test_waiting_callers_are_served_by_priority_then_arrival():
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=1, clock=clock)
    assert await bucket.acquire() == 0.0  # the stored token
    served: list[str] = []

    async def caller(name: str, level: int) -> None:
        await bucket.acquire(level)
        served.append(name)

    tasks = [asyncio.create_task(caller(n, p)) for n, p in
             (("low-1", 0), ("low-2", 0), ("high-1", 10), ("high-2", 10))]  # fmt: skip
    await clock.idle()
    assert bucket.waiting == 4
    for _ in range(4):
        await clock.advance(0.1)
        await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert served == ["high-1", "high-2", "low-1", "low-2"]


async def test_a_cancelled_waiter_gives_its_turn_to_the_next():
    clock = FakeClock()
    bucket = TokenBucket(qps=10, burst=1, clock=clock)
    await bucket.acquire()
    gone = asyncio.create_task(bucket.acquire(5))
    kept = asyncio.create_task(bucket.acquire(0))
    await clock.idle()
    gone.cancel()
    await clock.advance(0.1)
    assert await asyncio.wait_for(kept, 5) == pytest.approx(0.1)


async def test_requests_inside_priority_jump_the_rate_limiters_queue(transport, metrics):
    clock = FakeClock()
    limiter = TokenBucket(qps=10, burst=1, clock=clock)
    client = KubeClient(transport, limiter=limiter, metrics=metrics, clock=clock)
    await client.list(r.NODES)  # the burst
    order: list[str] = []

    async def listing(name: str) -> None:
        await client.list(r.NODES)
        order.append(name)

    routine = asyncio.create_task(listing("routine"))
    await clock.idle()
    with priority(10):
        urgent = asyncio.create_task(listing("urgent"))  # inherits the priority
    await asyncio.sleep(0)
    for _ in range(3):
        await clock.advance(0.1)
        await asyncio.sleep(0.01)
    await asyncio.wait_for(asyncio.gather(routine, urgent), 5)
    assert order == ["urgent", "routine"]


async def test_a_failed_drainer_fails_its_waiters_instead_of_leaving_them_waiting():
    class BrokenClock(FakeClock):
        async def sleep(self, seconds: float) -> None:
            raise RuntimeError("clock broke")

    bucket = TokenBucket(qps=10, burst=1, clock=BrokenClock())
    await bucket.acquire()  # the stored token
    waiters = [asyncio.create_task(bucket.acquire()) for _ in range(2)]
    done, pending = await asyncio.wait(waiters, timeout=5)
    assert not pending, "a waiter was left queued behind a dead drainer"
    for task in done:
        with pytest.raises(RuntimeError, match="clock broke"):
            task.result()
    assert bucket.waiting == 0
