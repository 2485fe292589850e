"""`PollingSource`: work that must be asked for, at an interval.

Some of what karpy acts on is not in the API server: AWS's interruption warnings wait in
an SQS queue, EC2's failed status checks behind DescribeInstanceStatus. A polling source
asks (``poll``), queues each key the answer holds (a message, an unhealthy instance),
waits until the controller has worked through them, then waits ``interval`` seconds
(stretched by up to ``jitter`` times that, so many pollers do not ask in lockstep) and
asks again. An SQS long poll is its own wait: its interval is 0.

Waiting for the work before asking again keeps one batch at a time in hand: a slow
batch is not overtaken by the next answer, and a message is never handled twice because
it was received again while still being handled.

A poll that fails (the API refused, the network broke, the queue does not exist yet) is
logged and asked again after a growing, jittered delay (`karpy.kube.backoff.Backoff`,
reset by the next answer): a source outlives any error of the outside world. Stopping is
the controller's: it cancels the source, and with it a long poll in flight, at once.
"""

from __future__ import annotations

import random
from collections.abc import Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.backoff import Backoff
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable

    from karpy.base.clock import Clock
    from karpy.reconcile.source import Feed

__all__ = ["PollingSource"]

log = get_logger("controller.poll")

K = TypeVar("K", bound=Hashable)


class PollingSource(Generic[K]):
    """See the module docstring. ``name`` says what is polled, for logs
    (``sqs``, ``describe-instance-status``)."""

    def __init__(
        self,
        name: str,
        poll: Callable[[], Awaitable[Iterable[K]]],
        *,
        interval: float,
        jitter: float = 0.0,
        backoff: Backoff | None = None,
        clock: Clock = SYSTEM_CLOCK,
        rng: random.Random | None = None,
    ) -> None:
        self.name = name
        self.poll = poll
        self.interval = interval
        self.jitter = jitter
        self.clock = clock
        self.backoff = backoff or Backoff(1.0, 60.0, clock=clock)
        self.rng = rng or random.Random()

    async def run(self, feed: Feed[K]) -> None:
        """Poll, queue, wait for the work, wait the interval; until cancelled."""
        while True:
            try:
                keys = list(await self.poll())
            except Exception as exc:  # a source must outlive the outside world's errors
                delay = self.backoff.next_delay()
                log.error("poll failed", source=self.name, error=describe_error(exc),
                          retryIn=round(delay, 1))  # fmt: skip
                await self.clock.sleep(delay)
                continue
            self.backoff.reset()
            for key in keys:
                feed.add(key)
            if keys:
                await feed.settled(keys)
            # Slept even when 0: a poll that answers at once must not starve the loop.
            await self.clock.sleep(self.interval * (1 + self.jitter * self.rng.random()))
