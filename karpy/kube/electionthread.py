"""`ThreadedLeaderElector`: the leader lease is campaigned for and renewed on its own thread.

Everything else karpy does shares one asyncio event loop: informer event handling, JSON
decoding of large LIST pages, status patches, and the solver's thread taking the GIL in
bursts. At 40,000 pending pods that loop stalled long enough that a renewal running on it
missed the renew deadline, and the controller gave up its lease under its own load.
client-go renews on its own goroutine; karpy does the same with a thread that runs its
own event loop and its own HTTP session (an aiohttp session belongs to the loop that made
it, so ``connect`` is called inside the thread). The rules themselves (acquire, renew every
``retry_period``, lost when no renewal succeeded within ``renew_deadline`` of the start of
the last successful one, release on a clean stop) are `LeaderElector`'s, run unchanged on
that thread.

The writers (controllers) still run on the main loop. The thread talks to it only through
``loop.call_soon_threadsafe``:

* on acquiring, it asks the main loop to set `leading` and start the writers;
* on losing, it first closes the `WriteGate` every writer's `KubeClient` (and the cloud
  provider) checks before sending a write, then asks the main loop to cancel every writer
  at once; `run` raises `LeadershipLost` and the process exits non-zero. If the main loop
  is blocked at that moment, the writers cannot be cancelled yet, but they cannot write
  either: when the loop runs again, a write that was about to go out finds the gate closed
  and raises `WritesStopped` instead;
* on a clean stop, the main loop stops the writers (gracefully, up to ``writer_grace``)
  while the thread keeps renewing, then tells the thread to release the lease.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any

from karpy.base.clock import SYSTEM_CLOCK
from karpy.errors import KarpyError
from karpy.kube.leaderelection import LeaderElector, LeadershipLost, _cancel
from karpy.log import get_logger

if TYPE_CHECKING:
    import random
    from collections.abc import Callable, Sequence
    from contextlib import AbstractAsyncContextManager

    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.kube.client import KubeClient, WriteGate
    from karpy.kube.leaderelection import ElectionConfig
    from karpy.observability.metrics import Metrics

__all__ = ["ThreadedLeaderElector"]

log = get_logger("leader-election")


class _Link:
    """What one campaign's two loops share. Attributes of the main loop are touched only on
    the main loop, those of the thread's loop only on the thread."""

    def __init__(self, main: asyncio.AbstractEventLoop) -> None:
        self.main = main
        self.loop = asyncio.new_event_loop()  # the thread's; runs once the thread starts
        self.finish = asyncio.Event()  # thread side: stop campaigning, or release
        self.acquired = asyncio.Event()  # main side
        self.lost: asyncio.Future[None] = main.create_future()
        self.finished: asyncio.Future[None] = main.create_future()
        self.writers: list[asyncio.Task[None]] = []
        self.over = False  # main side: `run` is finishing; a late "acquired" is ignored

    def tell_thread_to_finish(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop already closed
            self.loop.call_soon_threadsafe(self.finish.set)


class ThreadedLeaderElector:
    """A component with `LeaderElector`'s contract (``writers``, `leading`, `run`), whose
    campaign runs on a thread of its own (see the module docstring). ``connect`` makes the
    election's `KubeClient` inside that thread and closes it afterwards."""

    name = "leader-election"

    def __init__(
        self,
        config: ElectionConfig,
        connect: Callable[[], AbstractAsyncContextManager[KubeClient]],
        *,
        writers: Sequence[Component] = (),
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
        writer_grace: float = 5.0,
        write_gate: WriteGate | None = None,
    ) -> None:
        self.config = config
        self.connect = connect
        self.writers = list(writers)
        self.metrics = metrics
        self.clock = clock
        self.rng = rng
        self.writer_grace = writer_grace
        self.write_gate = write_gate
        self.leading = asyncio.Event()
        self._log = log.bind(lease=f"{config.namespace}/{config.name}", identity=config.identity)
        if metrics is not None:
            metrics.leader_status.labels(config.name).set(0)

    # --- the main loop's side --------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        link = _Link(asyncio.get_running_loop())
        thread = threading.Thread(target=self._thread_main, args=(link,), daemon=True,
                                  name=f"leader-election-{self.config.name}")  # fmt: skip
        thread.start()
        failed: asyncio.Task[None] | None = None
        try:
            if not await _first_of(link.acquired.wait(), stop.wait(), link.finished):
                return
            if link.finished.done():  # the campaign ended without leading: its error
                link.finished.result()
                return
            writers_stop = asyncio.Event()
            link.writers = [
                asyncio.create_task(w.run(writers_stop), name=w.name) for w in self.writers
            ]
            stopping = asyncio.create_task(stop.wait())
            watched: list[asyncio.Future[Any]] = [link.lost, link.finished, stopping,
                                                  *link.writers]  # fmt: skip
            try:
                await asyncio.wait(watched,
                                   return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            finally:
                stopping.cancel()
            if link.lost.done() or link.finished.done():
                self._lose(link, None)  # no-op when the thread already did
                await asyncio.gather(*link.writers, return_exceptions=True)
                if link.lost.done():
                    link.lost.result()  # raises LeadershipLost
                link.finished.result()  # the thread's error, if it had one
                raise LeadershipLost("the leader-election thread ended while leading")
            writers_stop.set()
            _, slow = (
                await asyncio.wait(link.writers, timeout=self.writer_grace)
                if link.writers
                else ((), ())
            )
            for task in slow:
                self._log.warning(
                    "writer did not stop in time; cancelling", component=task.get_name()
                )
            await _cancel(list(slow))
            failed = next((t for t in link.writers if not t.cancelled() and t.exception()),
                          None)  # fmt: skip
            if not stop.is_set() and failed is None:
                failed = next((t for t in link.writers if t.done()), None)
        finally:
            link.over = True
            link.tell_thread_to_finish()  # stop campaigning, or release the lease
            with contextlib.suppress(Exception):
                await asyncio.shield(link.finished)
            self.leading.clear()
            await asyncio.to_thread(thread.join)
        if failed is not None:
            if not failed.cancelled() and failed.exception() is not None:
                raise failed.exception()  # type: ignore[misc]
            raise KarpyError(f"component {failed.get_name()} returned before shutdown")

    def _acquired(self, link: _Link) -> None:
        if not link.over and not link.lost.done():
            self.leading.set()
            link.acquired.set()

    def _lose(self, link: _Link, error: BaseException | None) -> None:
        """Cancel every writer at once: the first thing the main loop does once told."""
        self.leading.clear()
        for task in link.writers:
            task.cancel()
        if error is not None and not link.lost.done():
            link.lost.set_exception(error)

    @staticmethod
    def _finished(link: _Link, error: BaseException | None) -> None:
        if link.finished.done():
            return
        if error is None:
            link.finished.set_result(None)
        else:
            link.finished.set_exception(error)

    # --- the thread's side -----------------------------------------------------------------

    def _thread_main(self, link: _Link) -> None:
        loop = link.loop
        asyncio.set_event_loop(loop)
        error: BaseException | None = None
        try:
            loop.run_until_complete(self._campaign(link))
        except BaseException as exc:  # handed to the main loop, which raises it
            error = exc
            self._log.error("leader-election thread failed", error=repr(exc))
        finally:
            with contextlib.suppress(Exception):
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            with contextlib.suppress(RuntimeError):  # the main loop already closed
                link.main.call_soon_threadsafe(self._finished, link, error)

    async def _campaign(self, link: _Link) -> None:
        async with self.connect() as client:
            core = LeaderElector(self.config, client, metrics=self.metrics, clock=self.clock,
                                 rng=self.rng, write_gate=self.write_gate)  # fmt: skip
            if not await core._acquire(link.finish):
                return
            core._set_leading(True)
            link.main.call_soon_threadsafe(self._acquired, link)
            renewing = asyncio.create_task(core._renew_until_lost(), name="lease-renewal")
            finishing = asyncio.create_task(link.finish.wait())
            try:
                await asyncio.wait([renewing, finishing], return_when=asyncio.FIRST_COMPLETED)
            finally:
                finishing.cancel()
            if renewing.done():
                error = renewing.exception()
                # `_renew_until_lost` closed the write gate before raising.
                core._set_leading(False)
                link.main.call_soon_threadsafe(self._lose, link, error)
                return
            await _cancel_surely(renewing)
            await core._release()


async def _cancel_surely(task: asyncio.Task[Any]) -> None:
    """Cancel ``task`` and wait for it to end. On Python 3.11 ``asyncio.wait_for`` loses a
    cancellation that arrives as its inner request completes (the renewal loop then just
    goes on renewing), so cancel again until it has ended."""
    while not task.done():
        task.cancel()
        await asyncio.wait([task], timeout=0.1)
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()


async def _first_of(*waits: Any) -> bool:
    """Wait for the first of ``waits`` (coroutines or futures); True unless the second (the
    caller's stop) came first."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks[:2]:
            task.cancel()
    return not (tasks[1].done() and not tasks[0].done() and not tasks[2].done())
