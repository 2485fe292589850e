"""The controller pattern: a level-triggered reconciler fed by a deduplicating work
queue (`karpy.reconcile.controller`, `karpy.reconcile.queue`), keyless singleton
reconcilers run the same way (`karpy.reconcile.singleton`), and sources feeding work from
outside the informers (`karpy.reconcile.source`: `batching`, `polling`).
``docs/controllers.md`` shows how to write one."""

from karpy.reconcile.batching import BatchingSource
from karpy.reconcile.controller import DONE, Controller, Reconciler, Result, requeue_after
from karpy.reconcile.polling import PollingSource
from karpy.reconcile.singleton import UNIT, Singleton, SingletonReconciler, Unit
from karpy.reconcile.source import Feed, Source

__all__ = [
    "DONE",
    "UNIT",
    "BatchingSource",
    "Controller",
    "Feed",
    "PollingSource",
    "Reconciler",
    "Result",
    "Singleton",
    "SingletonReconciler",
    "Source",
    "Unit",
    "requeue_after",
]
