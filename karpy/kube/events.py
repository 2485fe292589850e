"""`EventRecorder`: Kubernetes Events that help people and never hurt the cluster.

Karpenter explains itself through Events (``Nominated`` on a pod, ``FailedScheduling``
with the scheduler's reason, ``InsufficientCapacityError`` on a NodeClaim, ...). At
40,000 pending pods that is 40,000 writes, so events are shaped the way client-go's
broadcaster and Karpenter's recorder shape them:

* **Never in the way.** `publish` only queues; a background sender writes. The queue is
  bounded (client-go drops events when its 1,000-slot channel is full) and writes go
  through their own token bucket, so events never delay a NodeClaim launch or a drain.
* **Deduplicated.** An event with the same reason and dedupe values (by default the
  involved object's identity) as one published within its ``dedupe_timeout`` (two
  minutes by default) is dropped, as Karpenter's recorder does.
* **Spam-filtered per object**, as client-go's ``EventSourceObjectSpamFilter``: at most
  25 events in a burst per involved object, refilled one per five minutes.

Drops are counted (``karpy_events_dropped_total{reason,why}``); a send that fails is
counted too (``why="send_failed"``) and logged, at debug when the API server refused it
(an Event is worth a try, not a retry loop), as a warning for anything else (an answer
that is not JSON, an error from the credentials hook, a bug). Whatever happens to one
Event, its sender goes on to the next: a sender task that died would silently stop every
Event for the rest of the process. The recorder is a writer: it runs (and its queue
exists) only while this process leads.
"""

from __future__ import annotations

import asyncio
import collections
from typing import TYPE_CHECKING, Final

import attrs

from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.backoff import TokenBucket
from karpy.kube.errors import KubeError
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.observability.metrics import Metrics

__all__ = ["Event", "EventRecorder", "ObjectRef"]

log = get_logger("events")

DEFAULT_DEDUPE_TIMEOUT: Final = 120.0  # seconds
QUEUE_SIZE: Final = 1000
SPAM_BURST: Final = 25
SPAM_REFILL: Final = 300.0  # seconds per token
_SENDERS: Final = 4


@attrs.frozen(slots=True)
class ObjectRef:
    """The object an event is about."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = ""

    def to_dict(self) -> dict[str, str]:
        out = {"kind": self.kind, "name": self.name, "namespace": self.namespace,
               "uid": self.uid, "apiVersion": self.api_version}  # fmt: skip
        return {k: v for k, v in out.items() if v}


@attrs.frozen(slots=True)
class Event:
    involved: ObjectRef
    type: str  # Normal or Warning
    reason: str
    message: str
    dedupe_values: tuple[str, ...] = ()  # empty: the involved object's identity
    dedupe_timeout: float = DEFAULT_DEDUPE_TIMEOUT

    def dedupe_key(self) -> tuple[str, ...]:
        values = self.dedupe_values or (
            self.involved.kind,
            self.involved.namespace,
            self.involved.name,
            self.involved.uid,
        )
        return (self.reason.lower(), *values)


class EventRecorder:
    name = "events"

    def __init__(
        self,
        client: KubeClient,
        *,
        qps: float = 50.0,
        burst: int = 100,
        queue_size: int = QUEUE_SIZE,
        component: str = "karpenter",
        clock: Clock = SYSTEM_CLOCK,
        metrics: Metrics | None = None,
    ) -> None:
        self.client = client
        self.limiter = TokenBucket(qps, burst, clock=clock)
        self.queue_size = queue_size
        self.component = component
        self.clock = clock
        self.metrics = metrics
        self._queue: collections.deque[Event] = collections.deque()
        self._ready = asyncio.Event()
        self._seen: dict[tuple[str, ...], float] = {}  # dedupe key -> monotonic expiry
        self._spam: dict[tuple[str, ...], tuple[float, float]] = {}  # object -> (tokens, stamp)
        self._seen_limit = 4 * queue_size
        self._spam_limit = 20 * queue_size
        self._running = False
        self.sent = 0
        self.failed = 0  # sends that raised, whatever the cause

    # --- publishing (synchronous, never blocks) ---------------------------------------

    def publish(self, event: Event) -> bool:
        """Queue ``event`` unless it is a duplicate, spam, or the queue is full (or the
        recorder is not running); whether it was queued."""
        if not self._running:
            return self._drop(event, "not_leading")
        now = self.clock.monotonic()
        key = event.dedupe_key()
        expiry = self._seen.get(key)
        if expiry is not None and expiry > now:
            return self._drop(event, "duplicate")
        if not self._take_spam_token(event.involved, now):
            return self._drop(event, "spam")
        if len(self._queue) >= self.queue_size:
            return self._drop(event, "queue_full")
        self._seen[key] = now + event.dedupe_timeout
        if len(self._seen) > self._seen_limit:
            self._seen = {k: v for k, v in self._seen.items() if v > now}
            # Amortized: when most entries are still live, the next sweep waits until the
            # map has doubled, so a burst of 40,000 Events never sweeps per Event.
            self._seen_limit = max(4 * self.queue_size, 2 * len(self._seen))
        self._queue.append(event)
        self._ready.set()
        return True

    def _take_spam_token(self, ref: ObjectRef, now: float) -> bool:
        key = (ref.kind, ref.namespace, ref.name, ref.uid)
        tokens, stamp = self._spam.get(key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + (now - stamp) / SPAM_REFILL)
        if tokens < 1:
            self._spam[key] = (tokens, now)
            return False
        self._spam[key] = (tokens - 1, now)
        if len(self._spam) > self._spam_limit:  # forget objects back at full burst
            self._spam = {k: v for k, v in self._spam.items()
                          if v[0] + (now - v[1]) / SPAM_REFILL < SPAM_BURST}  # fmt: skip
            self._spam_limit = max(20 * self.queue_size, 2 * len(self._spam))
        return True

    def _drop(self, event: Event, why: str) -> bool:
        if self.metrics is not None:
            self.metrics.karpenter.events_dropped.labels(event.reason, why).inc()
        return False

    # --- sending ----------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        self._running = True
        senders = [asyncio.create_task(self._send_loop()) for _ in range(_SENDERS)]
        try:
            await stop.wait()
        finally:
            self._running = False
            for task in senders:
                task.cancel()
            await asyncio.gather(*senders, return_exceptions=True)
            self._queue.clear()

    async def _send_loop(self) -> None:
        while True:
            while not self._queue:
                self._ready.clear()
                await self._ready.wait()
            await self._send(self._queue.popleft())

    async def _send(self, event: Event) -> None:
        """Write ``event``; never raises (but for cancellation), see the module docstring."""
        try:
            await self.limiter.acquire()
            await self.client.create_event(
                event.involved.to_dict(), reason=event.reason, message=event.message,
                type_=event.type, component=self.component,
            )  # fmt: skip
        except KubeError as exc:
            self._failed(event, exc, unexpected=False)
            return
        except Exception as exc:  # one bad Event must not end its sender
            self._failed(event, exc, unexpected=True)
            return
        self.sent += 1
        if self.metrics is not None:
            self.metrics.karpenter.events_sent.labels(event.reason).inc()

    def _failed(self, event: Event, exc: Exception, *, unexpected: bool) -> None:
        self.failed += 1
        self._drop(event, "send_failed")
        emit = log.warning if unexpected else log.debug
        emit("could not record event", reason=event.reason, involved=event.involved.to_dict(),
             error=describe_error(exc))  # fmt: skip
