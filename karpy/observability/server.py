"""The controller's two HTTP servers, as Karpenter serves them.

``HEALTH_PROBE_PORT``: ``/healthz`` and ``/livez`` (liveness: the event loop turns, see
`LoopWatchdog`)
and ``/readyz`` (readiness: cluster state is synced). ``METRICS_PORT``: ``/metrics`` in
Prometheus' text format and, with ``ENABLE_PROFILING=true`` only, the ``/debug/pprof/*``
profiles (`karpy.observability.profiling`, rate-limited). Both answer 200 with ``ok`` or
500 with the reason as text, as controller-runtime's probes do.

Each listens on its own address (``HEALTH_PROBE_BIND_ADDRESS``, ``METRICS_BIND_ADDRESS``):
every interface by default, as a pod's probes and Prometheus need; loopback where nothing
outside the host should reach them (the sandbox's controller).
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from karpy.log import get_logger
from karpy.observability.profiling import Profiling

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.observability.health import LoopWatchdog
    from karpy.observability.metrics import Metrics

__all__ = ["HTTPServers"]

log = get_logger("http")


class HTTPServers:
    """A component serving the probes and metrics until stopped. Port 0 picks a free
    port; `health_port` and `metrics_port` hold the real ones once `started` is set."""

    name = "http-servers"

    def __init__(
        self,
        *,
        metrics: Metrics,
        watchdog: LoopWatchdog,
        ready: Callable[[], tuple[bool, str]],
        health_port: int,
        metrics_port: int,
        health_host: str = "0.0.0.0",
        metrics_host: str = "0.0.0.0",
        profiling: bool = False,
        profiling_clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.metrics = metrics
        self.watchdog = watchdog
        self.ready = ready
        self.health_port = health_port
        self.metrics_port = metrics_port
        self.health_host = health_host
        self.metrics_host = metrics_host
        self.profiling = profiling
        self.profiling_clock = profiling_clock
        self.started = asyncio.Event()

    async def _healthz(self, _: web.Request) -> web.Response:
        healthy, reason = self.watchdog.health()
        return web.Response(status=200 if healthy else 500, text=reason + "\n")

    async def _readyz(self, _: web.Request) -> web.Response:
        ready, reason = self.ready()
        return web.Response(status=200 if ready else 500, text=reason + "\n")

    async def _metrics(self, _: web.Request) -> web.Response:
        body = await self.metrics.exposition_off_loop()
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def run(self, stop: asyncio.Event) -> None:
        health = web.Application()
        health.router.add_get("/healthz", self._healthz)
        health.router.add_get("/livez", self._healthz)  # the name Kubernetes components use
        health.router.add_get("/readyz", self._readyz)
        metrics = web.Application()
        metrics.router.add_get("/metrics", self._metrics)
        if self.profiling:
            Profiling(clock=self.profiling_clock).add_routes(metrics)
        runners = []
        try:
            for app, host, attr in ((health, self.health_host, "health_port"),
                                    (metrics, self.metrics_host, "metrics_port")):  # fmt: skip
                runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0,
                                       handler_cancellation=True)  # fmt: skip
                runners.append(runner)
                await runner.setup()
                site = web.TCPSite(runner, host, getattr(self, attr))
                await site.start()
                sockets = getattr(site._server, "sockets", None) or []
                if sockets:
                    setattr(self, attr, sockets[0].getsockname()[1])
            log.info("serving", healthAddress=self.health_host, healthPort=self.health_port,
                     metricsAddress=self.metrics_host, metricsPort=self.metrics_port,
                     profiling=self.profiling)  # fmt: skip
            self.started.set()
            await stop.wait()
        finally:
            for runner in runners:
                await runner.cleanup()
