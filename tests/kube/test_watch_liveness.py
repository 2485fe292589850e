"""Informers never trust a watch blindly: one that goes silent is taken for dead and
relisted, lines of any size are read (and one beyond the limit relists rather than loops),
a resync asks for a LIST that starts after it, and an unexpected failure is logged and
recovered from, never a silent stop."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import attrs
import orjson
import pytest
import structlog

from karpy.kube import resources
from karpy.kube.informer import WatchSpec
from karpy.log import configure_logging
from karpy.observability.metrics import Metrics
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock
from tests.kube.helpers import FAST, running

PODS = WatchSpec(resources.PODS, p.pod_info, kind=kinds.POD)
MIB = 1024 * 1024


@pytest.fixture
def logs():
    stream = io.StringIO()
    configure_logging("debug", stream=stream)
    yield stream
    structlog.reset_defaults()


def relists(metrics: Metrics, cause: str) -> float:
    value = metrics.registry.get_sample_value(
        "karpy_informer_relists_total", {"kind": kinds.POD, "cause": cause}
    )
    return value or 0.0


def pod_with_annotation(name: str, size: int) -> dict[str, Any]:
    return f.pod(name, annotations={"example.com/blob": "x" * size})


async def test_a_silent_watch_is_taken_for_dead_and_relisted(apiserver):
    frozen = apiserver.faults.freeze_watches("/api/v1/pods")
    clock, metrics = FakeClock(), Metrics()
    options = attrs.evolve(FAST, read_deadline=120.0)
    async with running(apiserver, [PODS], options=options, clock=clock, metrics=metrics) as (
        state, (informer,),
    ):  # fmt: skip
        await informer.synced.wait()
        await eventually(lambda: frozen.hits == 1)
        apiserver.store.create("pods", f.pod("meanwhile"))  # the frozen watch never tells
        await clock.idle()
        await clock.advance(119)
        assert "default/meanwhile" not in state.snapshot().pods
        assert relists(metrics, "stalled") == 0
        await clock.advance(1)
        await eventually(lambda: "default/meanwhile" in state.snapshot().pods)
        assert relists(metrics, "stalled") == 1


async def test_the_emulator_keeps_an_idle_watch_alive_with_bookmarks(apiserver):
    apiserver.bookmark_period = 0.05
    async with running(apiserver, [PODS]) as (_, (informer,)):
        await informer.synced.wait()
        listed_at = informer.resource_version
        apiserver.store.create("configmaps", {"metadata": {"name": "c", "namespace": "default"}})
        await eventually(lambda: informer.resource_version != listed_at)
        assert informer.relists == 1


async def test_a_watch_line_of_several_mebibytes_is_read(apiserver):
    async with running(apiserver, [PODS]) as (state, (informer,)):
        await informer.synced.wait()
        created = apiserver.store.create("pods", pod_with_annotation("huge", 3 * MIB))
        await eventually(lambda: "default/huge" in state.snapshot().pods)
        assert informer.relists == 1  # read from the watch, not relisted
        record = state.snapshot().pods["default/huge"]
        assert record.resource_version == created["metadata"]["resourceVersion"]


async def test_a_watch_line_beyond_the_limit_relists_instead_of_looping(apiserver, logs):
    metrics = Metrics()
    options = attrs.evolve(FAST, max_line_bytes=MIB)
    async with running(apiserver, [PODS], options=options, metrics=metrics) as (
        state, (informer,),
    ):  # fmt: skip
        await informer.synced.wait()
        apiserver.store.create("pods", pod_with_annotation("huge", 2 * MIB))
        await eventually(lambda: "default/huge" in state.snapshot().pods)  # by the LIST
        apiserver.store.create("pods", f.pod("after"))
        await eventually(lambda: "default/after" in state.snapshot().pods)
    assert relists(metrics, "oversized") == 1
    assert any(m["message"] == "watch line too long; relisting" for m in messages(logs))


async def test_resync_waits_for_a_list_that_started_after_it(apiserver):
    frozen = apiserver.faults.freeze_watches("/api/v1/pods")
    async with running(apiserver, [PODS]) as (state, (informer,)):
        await informer.synced.wait()
        await eventually(lambda: frozen.hits == 1)
        apiserver.store.create("pods", f.pod("unseen"))
        await informer.resync("test")
        assert "default/unseen" in state.snapshot().pods
        assert informer.relists == 2


class FailsOnce(ClusterState):
    """A sink whose first watch-event batch raises, as a bug would."""

    failed = False

    def apply(self, kind: str, upserts: Sequence[tuple[str, Any]], deletes: Sequence[str]) -> None:
        if self.kind_synced(kind) and not self.failed:
            self.failed = True
            raise RuntimeError("bug")
        super().apply(kind, upserts, deletes)


async def test_an_unexpected_failure_is_logged_and_the_informer_relists(apiserver, logs):
    state = FailsOnce(watched=[kinds.POD])
    metrics = Metrics()
    async with running(apiserver, [PODS], state=state, metrics=metrics) as (_, (informer,)):
        await informer.synced.wait()
        apiserver.store.create("pods", f.pod("first"))
        await eventually(lambda: "default/first" in state.snapshot().pods)
    assert state.failed
    assert relists(metrics, "failed") == 1
    failures = [m for m in messages(logs) if m["message"] == "informer loop failed; relisting"]
    assert failures and failures[0]["level"] == "ERROR" and "RuntimeError" in failures[0]["error"]


def messages(stream: io.StringIO) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in stream.getvalue().splitlines()]
