"""Informers against the emulator over HTTP: paging, resuming watches, both forms of 410,
throttling, server errors, dropped streams, projection and missing CRDs."""

from __future__ import annotations

import asyncio
import io

import orjson
import pytest
import structlog
from aiohttp import ClientSession, web

from karpy.kube import resources
from karpy.kube.informer import InformerOptions, WatchSpec
from karpy.log import configure_logging
from karpy.observability.metrics import Metrics
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.factories import Obj
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import RecordingClock
from tests.kube.helpers import listed_versions, running

PODS = WatchSpec(resources.PODS, p.pod_info, kind=kinds.POD)
NODES = WatchSpec(resources.NODES, p.node_info, kind=kinds.NODE)
NODEPOOLS = WatchSpec(resources.NODEPOOLS, p.nodepool, kind=kinds.NODEPOOL)


@pytest.fixture
def logs():
    stream = io.StringIO()
    configure_logging("debug", stream=stream)
    yield stream
    structlog.reset_defaults()


def messages(stream: io.StringIO) -> list[Obj]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]


def create_pods(apiserver, count: int, **options) -> list[Obj]:
    return [apiserver.store.create("pods", pod) for pod in f.pods(count, **options)]


def create_unschedulable(apiserver, pod: Obj) -> Obj:
    """Create ``pod`` and mark it as kube-scheduler would (the server resets status)."""
    created = apiserver.store.create("pods", pod)
    meta = created["metadata"]
    status = {
        "status": {"conditions": [f.condition("PodScheduled", "False", reason="Unschedulable")]}
    }
    patched: Obj = apiserver.store.patch("pods", meta["name"], status, meta["namespace"],
                                         subresource="status")  # fmt: skip
    return patched


def state_versions(state: ClusterState, kind: str) -> dict[str, str]:
    return {key: rec.resource_version for key, rec in state.snapshot().of(kind).items()}


async def test_initial_list_is_paged_and_fills_state(apiserver):
    create_pods(apiserver, 12, requests={"cpu": "100m"})
    options = InformerOptions(page_size=5, backoff_initial=0.01, backoff_max=0.1)
    async with running(apiserver, [PODS], options=options) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert state.synced()
    lists = [q for _, _, q in informer.transport.sent if "watch" not in q]  # type: ignore[attr-defined]
    assert [q["limit"] for q in lists] == [5, 5, 5]
    assert ["continue" in q for q in lists] == [False, True, True]
    assert state_versions(state, kinds.POD) == listed_versions(apiserver, "pods")
    pod = next(iter(state.snapshot().pods.values())).pod
    assert pod.requests["cpu"] == 100


async def test_watch_starts_at_the_list_version_with_bookmarks(apiserver):
    create_pods(apiserver, 2)
    async with running(apiserver, [PODS]) as (_, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        listed_at = informer.resource_version
        await eventually(lambda: len(informer.transport.sent) == 2)  # type: ignore[attr-defined]
    _, _, watch = informer.transport.sent[1]  # type: ignore[attr-defined]
    assert watch["watch"] == "true"
    assert watch["allowWatchBookmarks"] == "true"
    assert watch["resourceVersion"] == listed_at
    assert 300 <= watch["timeoutSeconds"] <= 600


async def test_expired_continue_token_restarts_the_list_without_paging(apiserver, logs):
    create_pods(apiserver, 6)
    apiserver.faults.delay("GET", "/api/v1/pods", seconds=0.3, count=2)
    options = InformerOptions(page_size=5, backoff_initial=0.01, backoff_max=0.1)
    async with running(apiserver, [PODS], options=options) as (state, (informer,)):
        counts = apiserver.frontend.request_counts
        await eventually(lambda: counts.get("GET /api/v1/pods", 0) >= 2)
        apiserver.store.create("pods", f.pod("late"))
        apiserver.compact()
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert state_versions(state, kinds.POD) == listed_versions(apiserver, "pods")
    lists = [q for _, _, q in informer.transport.sent if "watch" not in q]  # type: ignore[attr-defined]
    assert lists[-1] == {}  # the last list: no limit, no continue
    assert any(m["message"].startswith("list continue token expired") for m in messages(logs))


async def test_watch_events_update_state(apiserver):
    async with running(apiserver, [PODS]) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        created = create_unschedulable(apiserver, f.pod("web", requests={"cpu": 1}))
        await eventually(lambda: "default/web" in state.snapshot().pods)
        assert (
            state.snapshot().pods["default/web"].resource_version
            == (created["metadata"]["resourceVersion"])
        )
        assert [i.key for i in state.snapshot().pending_pods()] == ["default/web"]
        apiserver.store.patch("pods", "web", {"metadata": {"labels": {"a": "b"}}}, "default")
        await eventually(lambda: state.snapshot().pods["default/web"].pod.labels == {"a": "b"})
        apiserver.store.delete("pods", "web", "default")
        await eventually(lambda: "default/web" not in state.snapshot().pods)
        assert list(state.snapshot().pending_pods()) == []


async def test_watch_resumes_from_the_last_bookmark_without_relisting(apiserver):
    apiserver.bookmark_period = 0.05
    create_pods(apiserver, 3)
    metrics = Metrics()
    async with running(apiserver, [PODS], metrics=metrics) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        listed_at = informer.resource_version
        # Changes to another kind move the global resourceVersion; bookmarks carry it.
        for node in (f.node() for _ in range(3)):
            apiserver.store.create("nodes", node)
        target = str(apiserver.store.resource_version)
        await eventually(lambda: informer.resource_version == target)
        assert int(informer.resource_version) > int(listed_at)
        apiserver.drop_watches(abrupt=True)
        apiserver.store.create("pods", f.pod("after-drop"))
        await eventually(lambda: "default/after-drop" in state.snapshot().pods)
        assert informer.relists == 1
    value = metrics.registry.get_sample_value(
        "karpy_informer_events_total", {"kind": "Pod", "type": "BOOKMARK"}
    )
    assert value is not None and value >= 1
    assert (
        metrics.registry.get_sample_value(
            "karpy_informer_relists_total", {"kind": "Pod", "cause": "initial"}
        )
        == 1
    )


async def test_cleanly_closed_stream_resumes_without_relisting(apiserver):
    async with running(apiserver, [PODS]) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        apiserver.drop_watches(abrupt=False)
        apiserver.store.create("pods", f.pod("p1"))
        await eventually(lambda: "default/p1" in state.snapshot().pods)
        assert informer.relists == 1


async def test_in_stream_410_relists_and_turns_missed_deletions_into_deletions(apiserver, logs):
    kept, gone, changed = (
        apiserver.store.create("pods", f.pod(n)) for n in ("kept", "gone", "changed")
    )
    del kept
    apiserver.bookmark_period = 3600  # no bookmark may move the informer past the gap
    metrics = Metrics()
    async with running(apiserver, [PODS], metrics=metrics) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        # Make the next watch start from a version the server no longer has: changes
        # happen while the stream is down, then history is compacted past them.
        apiserver.faults.drop("GET", "/api/v1/pods", count=None, watch=True)
        apiserver.drop_watches(abrupt=True)
        apiserver.store.delete("pods", "gone", "default")
        apiserver.store.patch("pods", "changed", {"metadata": {"labels": {"v": "2"}}}, "default")
        apiserver.store.create("pods", f.pod("new"))
        apiserver.compact()
        apiserver.faults.clear()
        await eventually(lambda: informer.relists == 2)
        snap = state.snapshot()
        assert sorted(snap.pods) == ["default/changed", "default/kept", "default/new"]
        assert snap.pods["default/changed"].pod.labels == {"v": "2"}
        assert state_versions(state, kinds.POD) == listed_versions(apiserver, "pods")
    assert gone["metadata"]["name"] == "gone"
    assert changed["metadata"]["name"] == "changed"
    relists = [m for m in messages(logs) if m["message"] == "relisted"]
    assert relists and relists[0]["cause"] == "expired"
    assert (relists[0]["deleted"], relists[0]["changed"]) == (1, 2)
    assert (
        metrics.registry.get_sample_value(
            "karpy_informer_relists_total", {"kind": "Pod", "cause": "expired"}
        )
        == 1
    )


async def test_http_410_answer_to_a_watch_relists(apiserver, unused_tcp_port):
    """Some proxies and older servers answer an expired watch with HTTP 410 rather than
    an in-stream ERROR event: a proxy in front of the emulator plays that part once."""
    apiserver.store.create("pods", f.pod("a"))
    answered_410 = asyncio.Event()

    async def proxy(request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") == "true" and not answered_410.is_set():
            answered_410.set()
            status = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "code": 410,
                "reason": "Expired",
                "message": "too old resource version: 1 (2)",
            }
            return web.json_response(status, status=410)
        async with (
            ClientSession() as session,
            session.request(
                request.method, apiserver.url + request.path_qs, data=await request.read()
            ) as upstream,
        ):
            response = web.StreamResponse(status=upstream.status)
            response.content_type = "application/json"
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.1)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", unused_tcp_port).start()
    try:
        url = f"http://127.0.0.1:{unused_tcp_port}"
        async with running(apiserver, [PODS], url=url) as (state, (informer,)):
            await eventually(lambda: informer.relists == 2)
            apiserver.store.delete("pods", "a", "default")
            await eventually(lambda: "default/a" not in state.snapshot().pods)
    finally:
        await runner.cleanup()


async def test_429_with_retry_after_is_honoured(apiserver, logs):
    apiserver.faults.throttle("GET", "/api/v1/pods", retry_after=2, count=1)
    clock = RecordingClock()
    async with running(apiserver, [PODS], clock=clock) as (_, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
    assert clock.slept[0] == 2.0  # the server's Retry-After, not the informer's backoff
    throttled = [m for m in messages(logs) if m["message"].startswith("throttled")]
    assert throttled and throttled[0]["retryIn"] == 2.0


async def test_storage_initializing_429_on_custom_resources_is_retried(apiserver):
    apiserver.faults.storage_initializing(requests=2)
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("default"))
    options = InformerOptions(backoff_initial=0.01, backoff_max=0.1, max_retry_after=0.05)
    async with running(apiserver, [NODEPOOLS], options=options) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert list(state.snapshot().nodepools) == ["default"]


async def test_server_errors_and_dropped_connections_are_retried(apiserver):
    apiserver.store.create("pods", f.pod("a"))
    apiserver.faults.error("GET", "/api/v1/pods", status=500, count=2, watch=False)
    apiserver.faults.drop("GET", "/api/v1/pods", count=2, watch=False)
    metrics = Metrics()
    async with running(apiserver, [PODS], metrics=metrics) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert list(state.snapshot().pods) == ["default/a"]
        apiserver.faults.error("GET", "/api/v1/pods", status=500, count=3, watch=True)
        apiserver.drop_watches(abrupt=True)
        apiserver.store.create("pods", f.pod("b"))
        await eventually(lambda: "default/b" in state.snapshot().pods)
    errors = metrics.registry.get_sample_value(
        "karpy_informer_watch_reconnects_total", {"kind": "Pod", "cause": "error"}
    )
    assert errors is not None and errors >= 3


async def test_projection_keeps_what_scheduling_and_disruption_read(apiserver):
    owner = f.owner_reference("ReplicaSet", "web-abc")
    create_unschedulable(apiserver, f.pod(
        "web-1", requests={"cpu": "250m", "memory": "64Mi"}, owner_references=[owner],
        annotations={"karpenter.sh/do-not-disrupt": "true"}, priority=100,
        init_containers=[f.container(requests={"cpu": "2"})],
    ))  # fmt: skip
    async with running(apiserver, [PODS]) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
    info = state.snapshot().pods["default/web-1"]
    assert info.pod.requests["cpu"] == 2000  # the init container's peak wins
    assert info.pod.requests["memory"] == 64 * 2**20 * 1000
    assert info.owner is not None
    assert (info.owner.kind, info.owner.name) == ("ReplicaSet", "web-abc")
    assert info.do_not_disrupt == "true"
    assert info.priority == 100
    assert info.provisionable


async def test_unreadable_object_is_kept_out_of_state_and_counted(apiserver):
    bad = f.pod("bad")
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "lots"}}
    apiserver.store.create("pods", bad)
    apiserver.store.create("pods", f.pod("good"))
    metrics = Metrics()
    async with running(apiserver, [PODS], metrics=metrics) as (state, (informer,)):
        await asyncio.wait_for(informer.synced.wait(), 5)
        assert list(state.snapshot().pods) == ["default/good"]
        assert "default/bad" in informer.versions
    assert (
        metrics.registry.get_sample_value("karpy_informer_projection_errors_total", {"kind": "Pod"})
        == 1
    )


@pytest.mark.parametrize("apiserver_options", [{"crd_dirs": []}])
async def test_missing_crd_is_retried_logged_once_and_never_synced(apiserver, logs):
    state = ClusterState(watched=[kinds.POD, kinds.NODEPOOL])
    async with running(apiserver, [PODS, NODEPOOLS], state=state) as (_, (pods, pools)):
        await asyncio.wait_for(pods.synced.wait(), 5)
        await asyncio.sleep(0.5)  # several retries
        assert not pools.synced.is_set()
        assert not state.synced()
        assert state.missing_kinds() == [kinds.NODEPOOL]
    missing = [m for m in messages(logs) if m["message"].startswith("resource not served")]
    assert len(missing) == 1
    assert missing[0]["kind"] == "NodePool"


async def test_informer_stops_promptly_when_asked(apiserver):
    async with running(apiserver, [PODS, NODES]) as (_, informers):
        await asyncio.gather(*(asyncio.wait_for(i.synced.wait(), 5) for i in informers))
    # leaving the block set `stop` and awaited every informer: reaching here is the test
