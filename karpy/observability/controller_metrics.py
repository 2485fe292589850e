"""Metrics every controller exports, with controller-runtime's and client-go's names.

Each controller (`karpy.reconcile.Controller`) counts its reconciles by result, its
errors and their durations, and its work queue reports depth, adds, retries and how long
keys wait and take, so dashboards built for Karpenter's ``controller_runtime_*`` and
``workqueue_*`` series work unchanged. The label is the controller's name
(``nodeclaim.lifecycle``, ``provisioner``, ...), as Karpenter names its controllers.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["ControllerMetrics"]

_RECONCILE_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
    0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30,
    40, 50, 60,
)  # fmt: skip
_QUEUE_BUCKETS: Final = (1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 0.001, 0.01, 0.1, 1, 10, 100, 1000)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total",
            "Reconciles per controller and result (success, error, requeue, requeue_after).",
            ["controller", "result"],
            registry=r,
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciles that failed, per controller.",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds",
            "Length of each reconcile, per controller.",
            ["controller"],
            buckets=_RECONCILE_BUCKETS,
            registry=r,
        )
        self.active_workers = Gauge(
            "controller_runtime_active_workers",
            "Workers currently reconciling, per controller.",
            ["controller"],
            registry=r,
        )
        self.max_concurrent = Gauge(
            "controller_runtime_max_concurrent_reconciles",
            "Workers each controller runs.",
            ["controller"],
            registry=r,
        )
        self.workqueue_depth = Gauge(
            "workqueue_depth", "Keys waiting in each work queue.", ["name"], registry=r
        )
        self.workqueue_adds = Counter(
            "workqueue_adds_total", "Keys added to each work queue.", ["name"], registry=r
        )
        self.workqueue_retries = Counter(
            "workqueue_retries_total",
            "Keys re-added after a failure, per work queue.",
            ["name"],
            registry=r,
        )
        self.workqueue_queue_duration = Histogram(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the queue before a worker takes it.",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
        self.workqueue_work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "Seconds a worker spends on one key.",
            ["name"],
            buckets=_QUEUE_BUCKETS,
            registry=r,
        )
