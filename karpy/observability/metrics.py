"""Every metric the runtime exports, on one registry per `Metrics` object.

Names follow Karpenter where Karpenter has the metric (``karpenter_cluster_state_*``,
``karpenter_build_info``, ``leader_election_master_status``, ``client_go_request_total``,
the historical ``karpenter_nodes_leases_deleted_total``), so dashboards and alerts carry
over; karpy's own runtime metrics are prefixed ``karpy_``.

Metrics live on an explicit `CollectorRegistry` held by a `Metrics` object that is handed
to the informers, clients, elector and collectors: the controller makes one (with the
process and Python collectors, as client_golang's default registry has), and each test
makes its own, so counts never leak between tests. No ``*_created`` series are exported
(``PROMETHEUS_DISABLE_CREATED_SERIES``): Karpenter has none and they double the series
count of every counter.
"""

from __future__ import annotations

import asyncio
import platform
from typing import TYPE_CHECKING, Final

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from karpy import __version__
from karpy.observability.controller_metrics import ControllerMetrics
from karpy.observability.karpenter_metrics import KarpenterMetrics

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["Metrics"]

prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

_LATENCY_BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_WAIT_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30)
# 1 ms to 30 s: a tick's ordinary jitter, the 100 ms a stall must stay under, and the
# renew deadline (10 s) a stall must never approach.
_LOOP_LAG_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
)  # fmt: skip


class Metrics:
    """The runtime's metrics. ``process_collectors`` adds process_*, python_gc_* and
    python_info, as the controller's registry has them."""

    def __init__(
        self,
        registry: CollectorRegistry | None = None,
        *,
        process_collectors: bool = False,
        commit: str = "unknown",
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.before_scrape: list[Callable[[], None]] = []
        r = self.registry
        if process_collectors:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
            GCCollector(registry=r)

        python = platform.python_version()
        arch = platform.machine()
        build = Gauge("karpy_build_info", "karpy's version, Python, architecture and commit; 1.",
                      ["version", "python_version", "arch", "commit"], registry=r)  # fmt: skip
        build.labels(__version__, python, arch, commit).set(1)
        karpenter_build = Gauge(
            "karpenter_build_info",
            "Build information, as Karpenter names it (goversion holds the Python version).",
            ["version", "goversion", "goarch", "commit"],
            registry=r,
        )
        karpenter_build.labels(__version__, f"python{python}", arch, commit).set(1)

        # --- API client --------------------------------------------------------------
        self.client_requests = Counter(
            "karpy_kube_client_requests_total",
            "API requests by client (main, leader-election), verb and HTTP status code "
            "(0 when no response arrived).",
            ["client", "verb", "code"],
            registry=r,
        )
        self.client_go_requests = Counter(
            "client_go_request_total",
            "API requests by HTTP status code and method, as client-go counts them.",
            ["code", "method"],
            registry=r,
        )
        self.client_duration = Histogram(
            "karpy_kube_client_request_duration_seconds",
            "Latency of API requests (one attempt), by client and verb.",
            ["client", "verb"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.client_retries = Counter(
            "karpy_kube_client_retries_total",
            "API requests retried, by client, verb and reason (throttled, server_error, "
            "connection).",
            ["client", "verb", "reason"],
            registry=r,
        )
        self.rate_limiter_wait = Histogram(
            "karpy_kube_client_rate_limiter_wait_seconds",
            "Time requests waited for the client-side rate limiter (KUBE_CLIENT_QPS/BURST).",
            ["client"],
            buckets=_WAIT_BUCKETS,
            registry=r,
        )

        # --- informers ---------------------------------------------------------------
        self.informer_relists = Counter(
            "karpy_informer_relists_total",
            "Full LISTs by kind and cause (initial, expired, gone, error, ...).",
            ["kind", "cause"],
            registry=r,
        )
        self.informer_reconnects = Counter(
            "karpy_informer_watch_reconnects_total",
            "Watch streams re-opened, by kind and cause (closed, dropped, throttled, error).",
            ["kind", "cause"],
            registry=r,
        )
        self.informer_events = Counter(
            "karpy_informer_events_total",
            "Watch events received, by kind and type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR).",
            ["kind", "type"],
            registry=r,
        )
        self.informer_objects = Gauge(
            "karpy_informer_objects", "Objects known to each informer.", ["kind"], registry=r
        )
        self.informer_synced = Gauge(
            "karpy_informer_synced", "1 once an informer has listed its kind.", ["kind"],
            registry=r,
        )  # fmt: skip
        self.informer_last_sync = Gauge(
            "karpy_informer_last_sync_timestamp_seconds",
            "Unix time at which each informer last completed a full LIST.",
            ["kind"],
            registry=r,
        )
        self.informer_sync_duration = Gauge(
            "karpy_informer_sync_duration_seconds",
            "Seconds the last full LIST (all pages, projected) took, by kind.",
            ["kind"],
            registry=r,
        )
        self.informer_projection_errors = Counter(
            "karpy_informer_projection_errors_total",
            "Times an object could not be read into karpy's records.",
            ["kind"],
            registry=r,
        )
        self.informer_unparseable_objects = Gauge(
            "karpy_informer_unparseable_objects",
            "Objects that exist but cannot be read, kept in cluster state as unreadable.",
            ["kind"],
            registry=r,
        )

        # --- cluster state (callbacks bound by `bind_cluster_state`) -------------------
        self.cluster_state_synced = Gauge(
            "karpenter_cluster_state_synced",
            "1 when cluster state has listed every kind and its nodes and nodeclaims agree.",
            registry=r,
        )
        self.cluster_state_node_count = Gauge(
            "karpenter_cluster_state_node_count", "Nodes in cluster state.", registry=r
        )
        self.cluster_state_unsynced = Gauge(
            "karpenter_cluster_state_unsynced_time_seconds",
            "Seconds cluster state has been unsynced (0 when synced).",
            registry=r,
        )

        # --- leader election and lease GC ---------------------------------------------
        self.leader_status = Gauge(
            "leader_election_master_status",
            "1 while this process holds the leader-election lease.",
            ["name"],
            registry=r,
        )
        self.leader_transitions = Counter(
            "karpy_leader_election_transitions_total",
            "Times this process started or stopped leading.",
            ["name", "transition"],
            registry=r,
        )
        self.leases_deleted = Counter(
            "karpenter_nodes_leases_deleted_total",
            "Orphaned node leases in kube-node-lease deleted by the lease garbage collector.",
            registry=r,
        )

        # --- event loop ----------------------------------------------------------------
        self.loop_lag = Histogram(
            "karpy_event_loop_lag_seconds",
            "How late each of the loop watchdog's wake-ups ran (one sample per tick): "
            "how long the event loop was kept from running ready work.",
            buckets=_LOOP_LAG_BUCKETS,
            registry=r,
        )
        self.loop_lag_longest = Gauge(
            "karpy_event_loop_lag_longest_seconds",
            "Longest event-loop stall since the process started.",
            registry=r,
        )
        self.loop_lag_max = Gauge(
            "karpy_event_loop_lag_max_seconds",
            "Largest tick lateness in the health window (what /healthz judges).",
            registry=r,
        )
        self.gc_pause = Histogram(
            "karpy_gc_pause_seconds",
            "How long each cyclic garbage collection held the interpreter (and so the "
            "event loop), by generation; generation 2 walks every object the process holds.",
            ["generation"],
            buckets=_LOOP_LAG_BUCKETS,
            registry=r,
        )
        self.gc_pause_longest = Gauge(
            "karpy_gc_pause_longest_seconds",
            "Longest cyclic garbage collection since the process started, by generation.",
            ["generation"],
            registry=r,
        )
        # --- leader election, seen from its own thread ------------------------------------
        self.leader_renew_duration = Histogram(
            "karpy_leader_election_renew_duration_seconds",
            "Seconds each successful lease renewal took (the elector's own thread and loop).",
            ["name"],
            buckets=_LATENCY_BUCKETS,
            registry=r,
        )
        self.leader_renew_longest = Gauge(
            "karpy_leader_election_renew_longest_seconds",
            "Longest successful lease renewal since the process started (a histogram has no "
            "maximum; this is the one figure to hold against the renew deadline).",
            ["name"],
            registry=r,
        )

        # --- controllers and their work queues (controller_runtime_*, workqueue_*) ------
        self.controllers = ControllerMetrics(r)
        # --- provisioning, lifecycle, termination (karpenter_*) -------------------------
        self.karpenter = KarpenterMetrics(r)

    def bind_cluster_state(
        self,
        synced: Callable[[], bool],
        node_count: Callable[[], int],
        unsynced_seconds: Callable[[], float],
    ) -> None:
        """Have the cluster-state gauges read their values at scrape time."""
        self.cluster_state_synced.set_function(lambda: 1.0 if synced() else 0.0)
        self.cluster_state_node_count.set_function(lambda: float(node_count()))
        self.cluster_state_unsynced.set_function(unsynced_seconds)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return prometheus_client.generate_latest(self.registry)

    async def exposition_off_loop(self) -> bytes:
        """`exposition`, rendered on a worker thread: at 11,000 nodes the per-node series
        took 2.5 s to render, all of it a stall of the event loop. Each `before_scrape`
        hook runs first, on the loop, so collectors that read loop-owned state take it
        there (`karpy.state.metrics.StateMetrics.pin`)."""
        for hook in self.before_scrape:
            hook()
        return await asyncio.to_thread(self.exposition)
