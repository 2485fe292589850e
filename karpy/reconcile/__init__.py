"""The controller pattern: a level-triggered reconciler fed by a deduplicating work
queue (`karpy.reconcile.controller`, `karpy.reconcile.queue`). ``docs/controllers.md``
shows how to write one."""

from karpy.reconcile.controller import DONE, Controller, Reconciler, Result, requeue_after

__all__ = ["DONE", "Controller", "Reconciler", "Result", "requeue_after"]
