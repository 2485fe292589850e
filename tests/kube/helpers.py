"""Shared pieces of the runtime's component tests: a transport to the emulator, fast
informer options, and a fresh LIST to compare with (waiting: `tests.fixtures.waiting`)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

from kubernetes_asyncio.client.configuration import Configuration

from karpy.kube.informer import Informer, InformerOptions, WatchSpec
from karpy.kube.transport import Transport
from karpy.sandbox.apiserver import APIServer
from karpy.state.cluster import ClusterState

FAST = InformerOptions(
    backoff_initial=0.01, backoff_max=0.1, missing_retry_max=0.1, max_retry_after=2.0
)


class RecordingTransport(Transport):
    """A real transport that also notes each request's method, path and query."""

    def __init__(self, configuration: Any) -> None:
        super().__init__(configuration)
        self.sent: list[tuple[str, str, dict[str, Any]]] = []

    async def request(self, method: str, path: str, **kw: Any) -> Any:
        self.sent.append((method, path, dict(kw.get("query") or {})))
        return await super().request(method, path, **kw)


def transport_for(server: APIServer | str) -> RecordingTransport:
    configuration = Configuration()
    configuration.host = server if isinstance(server, str) else server.url
    return RecordingTransport(configuration)


@contextlib.asynccontextmanager
async def running(
    server: APIServer,
    specs: Sequence[WatchSpec],
    *,
    state: ClusterState | None = None,
    options: InformerOptions = FAST,
    url: str | None = None,
    **informer_kw: Any,
) -> AsyncIterator[tuple[ClusterState, list[Informer]]]:
    """Informers for ``specs`` feeding ``state`` (a fresh one by default), running for the
    body of the ``async with``; ``url`` points them elsewhere (a proxy) than ``server``.
    Each informer's ``transport`` is a `RecordingTransport`."""
    state = state or ClusterState(watched=[s.name for s in specs])
    transport = transport_for(url or server)
    informers = [Informer(s, transport, state, options=options, **informer_kw) for s in specs]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(i.run(stop)) for i in informers]
    try:
        yield state, informers
    finally:
        stop.set()
        await asyncio.gather(*tasks)
        await transport.close()


def listed_versions(
    server: APIServer, resource: str, namespace: str | None = None
) -> dict[str, str]:
    """``key -> resourceVersion`` of every object of ``resource`` by a fresh LIST."""
    out = {}
    for obj in server.store.list(resource, namespace=namespace):
        meta = obj["metadata"]
        key = f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]
        out[key] = meta["resourceVersion"]
    return out
