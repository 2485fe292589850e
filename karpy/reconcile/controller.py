"""`Controller`: one reconciler driven by a work queue, the pattern every karpy
controller is written on.

A reconciler says three things: which keys a change in cluster state concerns
(`Reconciler.keys_for`), which keys exist at all (`Reconciler.all_keys`, for the
periodic resync), and how to bring one key's world to where it should be
(`Reconciler.reconcile`), reading the current state snapshot rather than the change that
woke it. That is what makes it *level-triggered*: a lost, duplicated or reordered event
can delay an action until the next resync but never strands it, and a restarted process
picks up where the API says things stand. Each reconciler names its key type (``K``):
a `NewType` over an object's name, a small record, or a singleton's one `Unit`
(`karpy.reconcile.singleton`).

The controller does the rest, as controller-runtime does:

* subscribes to `ClusterState` and queues the keys each applied change concerns (only for
  the kinds the reconciler ``watches``);
* waits until state is synced before the first reconcile (acting on a half-listed
  cluster would launch for pods already placed), then queues every key, and again every
  ``resync`` seconds (jittered by up to 10 %);
* runs its *sources* (`karpy.reconcile.source`): feeders of work from outside the
  informers (a batching window, a poll of a cloud API), started with the workers and
  stopped with them;
* runs ``workers`` reconciles concurrently, never two for one key (`WorkQueue`);
* requeues a key after the reconciler's `Result.requeue_after`, or after a growing
  per-key backoff when it raised; a conflict (409) is routine and logged at debug;
* exports ``controller_runtime_*`` and ``workqueue_*`` metrics.

Controllers that change anything are *writers*: the leader elector runs them only while
this process leads, so `run` starts from nothing each time leadership is won. A clean
stop lets the reconciles in flight finish; losing the lease (the run is cancelled) or a
part failing stops everything at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar

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
    from karpy.reconcile.source import Source
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["DONE", "Controller", "Reconciler", "Result", "requeue_after"]

log = get_logger("controller")

K = TypeVar("K", bound=Hashable)

DEFAULT_RESYNC: Final = 300.0  # seconds
_SYNC_POLL: Final = 0.1  # seconds between looks at whether state has synced
# A worker yields to the event loop after running this long without suspending
# (`Controller._worker`); a yield when it did suspend meanwhile costs microseconds.
TIME_SLICE: Final = 0.02  # seconds


@attrs.frozen(slots=True)
class Result:
    """What a reconcile asks for next: nothing (``requeue_after`` None: wait for a change
    or the resync), or another look after ``requeue_after`` seconds."""

    requeue_after: float | None = None


DONE: Final = Result()


def requeue_after(seconds: float) -> Result:
    return Result(requeue_after=max(0.0, seconds))


class Reconciler(Protocol[K]):
    """One controller's logic; see the module docstring."""

    @property
    def name(self) -> str:
        """The controller's name, as metrics and logs show it (``nodeclaim.lifecycle``)."""
        ...

    @property
    def watches(self) -> frozenset[str]:
        """The kinds (`karpy.state.kinds`) whose changes are passed to `keys_for`."""
        ...

    def keys_for(self, change: StateChange[Any]) -> Iterable[K]:
        """The keys ``change`` concerns (called on the event loop: keep it cheap, and free
        of side effects)."""
        ...

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[K]:
        """Every key that exists now (the periodic resync queues them all)."""
        ...

    async def reconcile(self, key: K) -> Result:
        """Bring ``key`` to its desired state; raise to be retried with backoff."""
        ...


class Controller(Generic[K]):
    """Runs a `Reconciler` as a `karpy.base.component.Component` (see the module
    docstring). ``needs_sync=False`` lets a reconciler start before state has synced
    (for controllers that only read kinds they check themselves); ``synced_kinds`` waits
    for those kinds alone to have listed rather than for the whole state."""

    def __init__(
        self,
        reconciler: Reconciler[K],
        state: ClusterState,
        *,
        workers: int = 1,
        resync: float | None = DEFAULT_RESYNC,
        sources: Sequence[Source[K]] = (),
        needs_sync: bool = True,
        synced_kinds: tuple[str, ...] | None = None,
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
        self.sources = tuple(sources)
        self.needs_sync = needs_sync
        self.synced_kinds = synced_kinds
        self.clock = clock
        self.metrics = metrics
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.rng = rng or random.Random()
        self.queue = self._new_queue()
        self.started = asyncio.Event()  # set once the first resync has queued every key
        self._workers: list[asyncio.Task[None]] = []  # reconciling: a clean stop awaits them
        self._loops: list[asyncio.Task[None]] = []  # feeding the queue: cancelled on any stop

    @property
    def name(self) -> str:
        return self.reconciler.name

    def _new_queue(self) -> WorkQueue[K]:
        return WorkQueue(self.name, clock=self.clock, metrics=self.metrics,
                         base_delay=self.base_delay, max_delay=self.max_delay)  # fmt: skip

    # --- feeding the queue ---------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` now (what sources call: `karpy.reconcile.source.Feed`)."""
        self.queue.add(key)

    def add_after(self, key: K, delay: float) -> None:
        self.queue.add_after(key, delay)

    async def settled(self, keys: Iterable[K]) -> None:
        """Wait until ``keys`` have been worked through (`WorkQueue.settled`)."""
        await self.queue.settled(keys)

    def _on_changes(self, changes: Sequence[StateChange[Any]]) -> None:
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
        self._workers, self._loops = [], []
        clean = False  # a stop asked for (let reconciles finish), not a loss or a failure
        try:
            if self.needs_sync and not await self._wait_for_sync(stop):
                clean = True
                return
            count = self._resync_all()
            self.started.set()
            log.debug("controller started", controller=self.name, keys=count,
                      workers=self.workers)  # fmt: skip
            self._start_loops()
            self._workers = [asyncio.create_task(self._worker(), name=f"{self.name}-worker-{i}")
                             for i in range(self.workers)]  # fmt: skip
            stopping = asyncio.create_task(stop.wait())
            await asyncio.wait([stopping, *self._loops, *self._workers],
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            stopping.cancel()
            for task in [*self._loops, *self._workers]:  # one that ended early has failed
                if task.done() and not task.cancelled():
                    failure = task.exception()
                    if failure is not None:
                        raise failure
            clean = True
        finally:
            unsubscribe()
            self.queue.shutdown()
            await _cancel(self._loops)  # nothing new is queued once stopping
            # A clean stop lets reconciles in flight end (the operator's grace bounds this);
            # leadership lost or a part failed: stop at once, reconciles in flight included.
            await (_finish(self._workers) if clean else _cancel(self._workers))

    def _start_loops(self) -> None:
        """The tasks that feed the queue: its delays, the resync and the sources."""
        loops = [asyncio.create_task(self.queue.run_delays(), name=f"{self.name}-delays")]
        if self.resync:
            loops.append(asyncio.create_task(self._resync_loop(), name=f"{self.name}-resync"))
        loops += [asyncio.create_task(source.run(self), name=f"{self.name}-{source.name}")
                  for source in self.sources]  # fmt: skip
        self._loops = loops

    async def _wait_for_sync(self, stop: asyncio.Event) -> bool:
        while not self._synced():
            if stop.is_set():
                return False
            await self.clock.sleep(_SYNC_POLL)
        return True

    def _synced(self) -> bool:
        if self.synced_kinds is None:
            return self.state.synced()
        return self.state.kind_synced(*self.synced_kinds)

    async def _resync_loop(self) -> None:
        assert self.resync is not None
        while True:
            await self.clock.sleep(self.resync * (1 + 0.1 * self.rng.random()))
            self._resync_all()

    async def _worker(self) -> None:
        # Taking a key from a queue that has one does not suspend, nor does a reconcile
        # that only reads state: a worker with 11,000 such keys queued ran them back to
        # back and held the event loop for 0.4 s at a time. So it yields once it has
        # run for TIME_SLICE seconds without suspending.
        slice_started = time.perf_counter()
        while True:
            try:
                key = await self.queue.get()
            except QueueShutDown:
                return
            try:
                await self._reconcile(key)
            finally:
                self.queue.done(key)
            if time.perf_counter() - slice_started >= TIME_SLICE:
                await asyncio.sleep(0)
                slice_started = time.perf_counter()

    async def _reconcile(self, key: K) -> None:
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
                log.debug("conflict; retrying", controller=self.name, key=str(key),
                          retryIn=round(delay, 3))  # fmt: skip
            else:
                log.warning("reconcile failed", controller=self.name, key=str(key),
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


async def _finish(workers: Sequence[asyncio.Task[None]]) -> None:
    """Wait for ``workers`` to end: the queue is shut down, so each returns once its
    reconcile in flight (if any) has."""
    if workers:
        await asyncio.wait(workers)


async def _cancel(tasks: Sequence[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asyncio.gather(*tasks, return_exceptions=True)
