"""`EventRecorder` senders survive whatever one Event's write raises: an answer that is not
JSON, an OSError from the credentials hook. Each failure is counted and logged, and the
Events after it are written."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import structlog
from kubernetes_asyncio.client.configuration import Configuration

from karpy.kube.client import KubeClient
from karpy.kube.events import _SENDERS, Event, EventRecorder, ObjectRef
from karpy.kube.transport import Transport
from karpy.log import configure_logging
from karpy.observability.metrics import Metrics
from tests.fixtures.waiting import eventually

FAILURES = 2 * _SENDERS  # more than one per sender: none may die of its failure


@pytest.fixture
def logs() -> Any:
    stream = io.StringIO()
    configure_logging("debug", stream=stream)
    yield stream
    structlog.reset_defaults()


@contextlib.asynccontextmanager
async def recorder(configuration: Any) -> AsyncIterator[tuple[EventRecorder, Metrics]]:
    metrics = Metrics()
    transport = Transport(configuration)
    events = EventRecorder(KubeClient(transport, metrics=metrics, max_attempts=1),
                           qps=1000, burst=1000, metrics=metrics)  # fmt: skip
    stop = asyncio.Event()
    task = asyncio.create_task(events.run(stop))
    await asyncio.sleep(0)
    try:
        yield events, metrics
    finally:
        stop.set()
        await task
        await transport.close()


def configuration_for(apiserver: Any) -> Configuration:
    configuration = Configuration()
    configuration.host = apiserver.url
    return configuration


def event(name: str) -> Event:
    return Event(ObjectRef("Pod", name, "default", f"uid-{name}", "v1"), "Normal", "Nominated",
                 f"Pod should schedule on {name}")  # fmt: skip


async def publish_failing_then_good(events: EventRecorder) -> None:
    for i in range(FAILURES):
        assert events.publish(event(f"bad-{i}"))
    await eventually(lambda: events.failed == FAILURES)
    for i in range(3):
        assert events.publish(event(f"good-{i}"))
    await eventually(lambda: events.sent == 3)


def failed_metric(metrics: Metrics) -> float:
    labels = {"reason": "Nominated", "why": "send_failed"}
    return metrics.registry.get_sample_value("karpy_events_dropped_total", labels) or 0.0


async def test_senders_survive_answers_that_are_not_json(apiserver, logs):
    apiserver.faults.add("POST", "/api/v1/namespaces/default/events", action="garbage",
                         count=FAILURES)  # fmt: skip
    async with recorder(configuration_for(apiserver)) as (events, metrics):
        await publish_failing_then_good(events)
    assert failed_metric(metrics) == FAILURES
    names = {e["involvedObject"]["name"] for e in apiserver.store.list("events")}
    assert names == {"good-0", "good-1", "good-2"}
    lines = [orjson.loads(line) for line in logs.getvalue().splitlines()]
    failed = [line for line in lines if line["message"] == "could not record event"]
    assert len(failed) == FAILURES
    assert {line["level"] for line in failed} == {"WARN"}
    assert failed[0]["error"].startswith("JSONDecodeError")


async def test_senders_survive_an_os_error_from_the_credentials_hook(apiserver):
    calls = 0

    def token_hook(configuration: Any) -> None:
        nonlocal calls
        calls += 1
        if calls <= FAILURES:
            raise OSError("token file vanished")

    configuration = configuration_for(apiserver)
    configuration.api_key["BearerToken"] = "Bearer sandbox"
    configuration.refresh_api_key_hook = token_hook
    async with recorder(configuration) as (events, metrics):
        await publish_failing_then_good(events)
    assert failed_metric(metrics) == FAILURES
    assert len(apiserver.store.list("events")) == 3
