"""`Controller`: one reconciler driven by a work queue, the pattern every karpy
controller is written on.

A reconciler says three things: which keys a change in cluster state concerns
(`Reconciler.keys_for`), which keys exist at all (`Reconciler.all_keys`, for the
periodic resync), and how to bring one key's world to where it should be
(`Reconciler.reconcile`), reading the current state snapshot rather than the change that
woke it. That is what makes it *level-triggered*: a lost, duplicated or reordered event
can delay an action until the next resync but never strands it, and a restarted process
picks up where the API says things stand.

The controller does the rest, as controller-runtime does:

* subscribes to `ClusterState` and queues the keys each applied change concerns (only for
  the kinds the reconciler ``watches``);
* waits until state is synced before the first reconcile (acting on a half-listed
  cluster would launch for pods already placed), then queues every key, and again every
  ``resync`` seconds (jittered by up to 10 %);
* runs ``workers`` reconciles concurrently, never two for one key (`WorkQueue`);
* requeues a key after the reconciler's `Result.requeue_after`, or after a growing
  per-key backoff when it raised; a conflict (409) is routine and logged at debug;
* exports ``controller_runtime_*`` and ``workqueue_*`` metrics.

Controllers that change anything are *writers*: the leader elector runs them only while
this process leads, so `run` starts from nothing each time leadership is won.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from typing import TYPE_CHECKING, Final, Protocol

import attrs

from karpy.base.clock import SYSTEM_CLOCK
from karpy.errors import ExpectedError
from karpy.kube.errors import Conflict
from karpy.log import describe_error, get_logger
from karpy.reconcile.queue import QueueShutDown, WorkQueue

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from karpy.base.clock import Clock
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["DONE", "Controller", "Reconciler", "Result", "requeue_after"]

log = get_logger("controller")

DEFAULT_RESYNC: Final = 300.0  # seconds
_SYNC_POLL: Final = 0.1  # seconds between looks at whether state has synced


@attrs.frozen(slots=True)
class Result:
    """What a reconcile asks for next: nothing (``requeue_after`` None: wait for a change
    or the resync), or another look after ``requeue_after`` seconds."""

    requeue_after: float | None = None


DONE: Final = Result()


def requeue_after(seconds: float) -> Result:
    return Result(requeue_after=max(0.0, seconds))


class Reconciler(Protocol):
    """One controller's logic; see the module docstring."""

    @property
    def name(self) -> str:
        """The controller's name, as metrics and logs show it (``nodeclaim.lifecycle``)."""
        ...

    @property
    def watches(self) -> frozenset[str]:
        """The kinds (`karpy.state.kinds`) whose changes are passed to `keys_for`."""
        ...

    def keys_for(self, change: StateChange) -> Iterable[str]:
        """The keys ``change`` concerns (called on the event loop: keep it cheap)."""
        ...

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        """Every key that exists now (the periodic resync queues them all)."""
        ...

    async def reconcile(self, key: str) -> Result:
        """Bring ``key`` to its desired state; raise to be retried with backoff."""
        ...


class Controller:
    """Runs a `Reconciler` as a `karpy.base.component.Component` (see the module
    docstring). ``needs_sync=False`` lets a reconciler start before state has synced
    (for controllers that only read kinds they check themselves)."""

    def __init__(
        self,
        reconciler: Reconciler,
        state: ClusterState,
        *,
        workers: int = 1,
        resync: float | None = DEFAULT_RESYNC,
        needs_sync: bool = True,
        clock: Clock = SYSTEM_CLOCK,
        metrics: ControllerMetrics | None = None,
        base_delay: float = 0.05,
        max_delay: float = 300.0,
        rng: random.Random | None = None,
    ) -> None:
        self.reconciler = reconciler
        self.state = state
        self.workers = max(1, workers)
        self.resync = resync
        self.needs_sync = needs_sync
        self.clock = clock
        self.metrics = metrics
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.rng = rng or random.Random()
        self.queue = self._new_queue()
        self.started = asyncio.Event()  # set once the first resync has queued every key

    @property
    def name(self) -> str:
        return self.reconciler.name

    def _new_queue(self) -> WorkQueue:
        return WorkQueue(self.name, clock=self.clock, metrics=self.metrics,
                         base_delay=self.base_delay, max_delay=self.max_delay)  # fmt: skip

    # --- feeding the queue ---------------------------------------------------------------

    def enqueue(self, key: str) -> None:
        self.queue.add(key)

    def enqueue_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    def _on_changes(self, changes: Sequence[StateChange]) -> None:
        watches = self.reconciler.watches
        keys_for = self.reconciler.keys_for
        add = self.queue.add
        for change in changes:
            if change.kind in watches:
                for key in keys_for(change):
                    add(key)

    def _resync_all(self) -> int:
        count = 0
        for key in self.reconciler.all_keys(self.state.snapshot()):
            self.queue.add(key)
            count += 1
        return count

    # --- running -----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        self.queue = self._new_queue()  # a fresh start each time leadership is won
        self.started.clear()
        if self.metrics is not None:
            self.metrics.max_concurrent.labels(self.name).set(self.workers)
        unsubscribe = self.state.subscribe(self._on_changes)
        tasks: list[asyncio.Task[None]] = []
        clean = False  # a stop asked for (let reconciles finish), not a loss or a failure
        try:
            if self.needs_sync and not await self._wait_for_sync(stop):
                clean = True
                return
            count = self._resync_all()
            self.started.set()
            log.debug("controller started", controller=self.name, keys=count,
                      workers=self.workers)  # fmt: skip
            tasks = [asyncio.create_task(self.queue.run_delays(), name=f"{self.name}-delays")]
            if self.resync:
                tasks.append(asyncio.create_task(self._resync_loop(), name=f"{self.name}-resync"))
            tasks += [
                asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                for i in range(self.workers)
            ]
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([stopping, *tasks], return_when=asyncio.FIRST_COMPLETED)
            stopping.cancel()
            for task in tasks:  # a worker or loop that ended early has failed: surface it
                if task.done() and not task.cancelled() and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            clean = True
        finally:
            unsubscribe()
            self.queue.shutdown()
            # Leadership lost or a part failed: stop at once, reconciles in flight included.
            await (self._finish(tasks) if clean else _cancel(tasks))

    async def _finish(self, tasks: list[asyncio.Task[None]]) -> None:
        """A clean stop: let reconciles in flight end (the operator's grace bounds this)."""
        workers = [t for t in tasks if "-worker-" in t.get_name()]
        await _cancel([t for t in tasks if t not in workers])
        if workers:
            await asyncio.wait(workers)

    async def _wait_for_sync(self, stop: asyncio.Event) -> bool:
        while not self.state.synced():
            if stop.is_set():
                return False
            await self.clock.sleep(_SYNC_POLL)
        return True

    async def _resync_loop(self) -> None:
        assert self.resync is not None
        while True:
            await self.clock.sleep(self.resync * (1 + 0.1 * self.rng.random()))
            self._resync_all()

    async def _worker(self) -> None:
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self._reconcile(key)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: str) -> None:
        metrics = self.metrics
        if metrics is not None:
            metrics.active_workers.labels(self.name).inc()
        started = time.perf_counter()
        outcome = "success"
        try:
            result = await self.reconciler.reconcile(key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            outcome = "error"
            delay = self.queue.add_rate_limited(key)
            if isinstance(exc, Conflict):
                log.debug("conflict; retrying", controller=self.name, key=key,
                          retryIn=round(delay, 3))  # fmt: skip
            else:
                log.warning("reconcile failed", controller=self.name, key=key,
                            error=describe_error(exc), retryIn=round(delay, 3),
                            exc_info=None if isinstance(exc, ExpectedError) else exc)  # fmt: skip
            if metrics is not None:
                metrics.reconcile_errors.labels(self.name).inc()
        else:
            self.queue.forget(key)
            if result.requeue_after is not None:
                outcome = "requeue_after" if result.requeue_after > 0 else "requeue"
                self.queue.add_after(key, result.requeue_after)
        finally:
            if metrics is not None:
                metrics.active_workers.labels(self.name).dec()
                metrics.reconcile_time.labels(self.name).observe(time.perf_counter() - started)
                metrics.reconcile_total.labels(self.name, outcome).inc()


async def _cancel(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*tasks, return_exceptions=True)
