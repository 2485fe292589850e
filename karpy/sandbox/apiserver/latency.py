"""How long the emulator takes to answer, per verb and resource, served at ``GET /metrics``.

At 40,000 pods the question "did the controller starve, or did the API server answer
late?" needs both sides measured. This module is the API server's side, in the terms
kube-apiserver itself exports: ``apiserver_request_duration_seconds{verb,resource,
subresource}``, with kube-apiserver's metric verbs (``GET`` and ``LIST``, ``POST``,
``PUT``, ``PATCH`` or ``APPLY``, ``DELETE``; its ``CleanVerb``/``CanonicalVerb``), so a
dashboard or a PromQL query written for a real control plane reads the emulator too.
The verb is derived from the `requestinfo.RequestInfo` the middleware already resolves
for RBAC: ``create`` is ``POST``, ``update`` is ``PUT``, ``deletecollection`` is
``DELETE``, a named GET is ``GET`` and an unnamed one ``LIST``. Watches are long-lived
streams, not requests with a latency, and are not observed (kube-apiserver leaves them
out of this histogram's meaning too; it has ``apiserver_longrunning_requests``).

Handler timing cannot see a request that waits in the socket while the event loop runs
something else: the emulator serves every client, its kube-scheduler stand-in and its
ReplicaSet controller on one loop. So `LoopLagSampler` asks the loop to call it back
every 100 ms (a ``call_later`` chain, a few microseconds a tick) and records how late
each tick ran: ``karpy_sandbox_event_loop_lag_seconds`` (histogram) and the longest
stall since start, ``karpy_sandbox_event_loop_lag_longest_seconds``.

The emulator serves tens of thousands of requests a minute, so the per-request cost is
one dict lookup for the histogram child of a (verb, resource, subresource) key (children
are cached, never re-resolved through ``labels()``) plus prometheus_client's observe.
Both metrics live on a registry of their own, not the process-global default one.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

import prometheus_client
from prometheus_client import CollectorRegistry, Gauge, Histogram

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable

    from karpy.sandbox.apiserver.requestinfo import RequestInfo

__all__ = ["BUCKETS", "LoopLagSampler", "RequestLatency", "metric_verb"]

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

# 1 ms to 30 s, fine enough that a p99 interpolated between two bounds means something.
BUCKETS: Final = (
    0.001, 0.002, 0.004, 0.006, 0.008, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15,
    0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0, 15.0, 20.0, 30.0,
)  # fmt: skip
_RESOURCE_VERBS: Final = {
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
    "create": "POST",
    "update": "PUT",
    "patch": "PATCH",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}
_APPLY_PATCH = "application/apply-patch"
CONTENT_TYPE: Final = prometheus_client.CONTENT_TYPE_LATEST


def metric_verb(info: RequestInfo, content_type: str = "") -> str:
    """kube-apiserver's ``verb`` label for a request: its HTTP method, LIST for a GET of
    a collection, WATCH for a watch, APPLY for a server-side-apply PATCH."""
    if not info.is_resource_request:
        return info.verb.upper()
    verb = _RESOURCE_VERBS.get(info.verb, info.verb.upper())
    if verb == "PATCH" and content_type.startswith(_APPLY_PATCH):
        return "APPLY"
    return verb


class LoopLagSampler:
    """Records how late a ``call_later`` chain of ``tick`` seconds runs on the loop it was
    started on: how long ready work (requests) waited behind whatever held the loop."""

    def __init__(
        self,
        lag: Histogram,
        longest: Gauge,
        *,
        tick: float = 0.1,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.lag = lag
        self.longest_gauge = longest
        self.tick = tick
        self.monotonic = monotonic
        self.longest = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._waiting_since = 0.0

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._schedule()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._handle = None
        self._loop = None

    def _schedule(self) -> None:
        assert self._loop is not None
        self._waiting_since = self.monotonic()
        self._handle = self._loop.call_later(self.tick, self._tick)

    def _tick(self) -> None:
        lateness = max(0.0, self.monotonic() - self._waiting_since - self.tick)
        self.lag.observe(lateness)
        if lateness > self.longest:
            self.longest = lateness
            self.longest_gauge.set(lateness)
        if self._loop is not None:
            self._schedule()


class RequestLatency:
    """The emulator's request-duration histogram and loop-lag sampler, on one registry."""

    def __init__(
        self,
        *,
        timer: Callable[[], float] = time.perf_counter,
        tick: float = 0.1,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timer = timer
        self.registry = CollectorRegistry()
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Seconds the emulator took to answer each non-WATCH request (from the middleware "
            "receiving it to the handler's return), by kube-apiserver's verb, resource and "
            "subresource.",
            ["verb", "resource", "subresource"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.sampler = LoopLagSampler(
            Histogram(
                "karpy_sandbox_event_loop_lag_seconds",
                "How late each of the emulator's 100 ms loop ticks ran: how long requests "
                "could wait behind a busy event loop before any handler saw them.",
                buckets=BUCKETS,
                registry=self.registry,
            ),
            Gauge(
                "karpy_sandbox_event_loop_lag_longest_seconds",
                "Longest stall of the emulator's event loop since it started.",
                registry=self.registry,
            ),
            tick=tick,
            monotonic=monotonic,
        )
        self._children: dict[tuple[str, str, str, bool], Histogram] = {}

    def observe(self, info: RequestInfo, content_type: str, seconds: float) -> None:
        """Count one answered request that took ``seconds``."""
        apply = info.verb == "patch" and content_type.startswith(_APPLY_PATCH)
        key = (info.verb, info.resource, info.subresource, apply)
        child = self._children.get(key)
        if child is None:
            verb = metric_verb(info, content_type)
            child = self.duration.labels(verb, info.resource, info.subresource)
            self._children[key] = child
        child.observe(seconds)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        self.sampler.start(loop)

    def stop(self) -> None:
        self.sampler.stop()

    def exposition(self) -> bytes:
        """Both metrics in Prometheus' text format."""
        return prometheus_client.generate_latest(self.registry)
