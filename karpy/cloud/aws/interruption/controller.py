"""`InterruptionController`: reads the SQS interruption queue and acts on what it says.

When ``INTERRUPTION_QUEUE`` is set, EventBridge rules put AWS's warnings about EC2
instances (spot interruptions, rebalance recommendations, state changes, scheduled
maintenance, capacity-reservation interruptions) on that queue, and this one component
long-polls it for as long as the process leads. Each batch (up to ten messages) is
handled in parallel:

* a body that cannot be parsed is logged and deleted, so it never blocks the queue;
* a parsed message is counted by kind, acted on (`actions.InterruptionActions`), and then
  deleted; if acting fails (the API server refused a delete), it is left in the queue
  and comes back after its visibility timeout, so no warning is lost to a transient error.

The loop never dies of the cloud: a missing queue (not created yet, or deleted) is
logged with its name and looked up again with backoff until it appears, and other SQS
errors are retried the same way. Messages are only read once the NodeClaims and Nodes
have been listed, or an interruption would be dropped for an instance state had not yet
seen. Setting ``stop`` cancels a long poll in flight at once; a batch being handled
is finished first (its messages would otherwise come back and be handled twice).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Final

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.interruption.actions import InterruptionActions
from karpy.cloud.aws.interruption.messages import MessageParseError, parse_message
from karpy.cloud.aws.interruption.queue import WAIT_SECONDS, InterruptionQueue, QueueNotFound
from karpy.cloud.aws.interruption.waiting import unless_stopped, until_listed
from karpy.kube.backoff import Backoff
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.interruption.messages import Interruption
    from karpy.cloud.aws.interruption.metrics import InterruptionMetrics
    from karpy.cloud.aws.interruption.queue import ReceivedMessage
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.cluster import ClusterState

__all__ = ["InterruptionController"]

log = get_logger("controller.interruption")

PARALLELISM: Final = 10


class InterruptionController:
    """See the module docstring. ``karpenter_metrics`` (for
    ``karpenter_nodeclaims_disrupted_total``) and ``reservation_unavailable`` (told the ID
    of an interrupted capacity reservation) are optional; ``backoff`` paces retries after
    SQS errors (tests pass a short one)."""

    name = "interruption"

    def __init__(
        self,
        clients: AWSClients,
        queue_name: str,
        *,
        state: ClusterState,
        client: KubeClient,
        unavailable: UnavailableOfferings,
        recorder: EventRecorder | None,
        metrics: InterruptionMetrics | None,
        clock: Clock = SYSTEM_CLOCK,
        wait_seconds: int = WAIT_SECONDS,
        karpenter_metrics: KarpenterMetrics | None = None,
        reservation_unavailable: Callable[[str], None] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.queue = InterruptionQueue(clients, queue_name)
        self.state = state
        self.metrics = metrics
        self.clock = clock
        self.wait_seconds = wait_seconds
        self.backoff = backoff or Backoff(1.0, 60.0, clock=clock)
        self.actions = InterruptionActions(
            client, unavailable, recorder, karpenter_metrics=karpenter_metrics,
            reservation_unavailable=reservation_unavailable, clock=clock,
        )  # fmt: skip
        self._log = log.bind(queue=queue_name)
        self._limit = asyncio.Semaphore(PARALLELISM)

    async def run(self, stop: asyncio.Event) -> None:
        if not await until_listed(self.state, self.clock, stop):
            return
        watching = False
        while not stop.is_set():
            try:
                if not watching:
                    if await unless_stopped(self.queue.resolve(), stop) is None:
                        return
                    self._log.info("watching interruption queue", url=self.queue.url)
                    watching = True
                batch = await unless_stopped(self.queue.receive(self.wait_seconds), stop)
            except QueueNotFound as exc:
                watching = False
                delay = self.backoff.next_delay()
                self._log.error("interruption queue not found (create it, or unset "
                                "INTERRUPTION_QUEUE)", error=str(exc),
                                retryIn=round(delay, 1))  # fmt: skip
                await unless_stopped(self.clock.sleep(delay), stop)
                continue
            except Exception as exc:  # the reader must outlive any SQS or network error
                delay = self.backoff.next_delay()
                self._log.error("failed reading interruption queue", error=describe_error(exc),
                                retryIn=round(delay, 1))  # fmt: skip
                await unless_stopped(self.clock.sleep(delay), stop)
                continue
            if batch is None:
                return
            self.backoff.reset()
            if batch:
                await asyncio.gather(*(self._handle(message) for message in batch))

    async def _handle(self, message: ReceivedMessage) -> None:
        async with self._limit:
            try:
                interruption = parse_message(message.body)
            except MessageParseError as exc:
                self._log.error("failed parsing interruption message", error=str(exc),
                                messageId=message.message_id)  # fmt: skip
                await self._delete(message)
                return
            if self.metrics is not None:
                self.metrics.received_messages.labels(str(interruption.kind)).inc()
            try:
                handled = await self.actions.handle(interruption, self.state.snapshot())
            except Exception as exc:  # left in the queue: it comes back after its timeout
                self._log.error("failed handling interruption message", error=describe_error(exc),
                                messageKind=str(interruption.kind), messageId=message.message_id,
                                instances=list(interruption.instance_ids))  # fmt: skip
                return
            if not handled.nodeclaims:
                self._log.debug("interruption message concerns no nodeclaim",
                                messageKind=str(interruption.kind),
                                instances=list(interruption.instance_ids))  # fmt: skip
            self._observe_latency(interruption, message)
            await self._delete(message)

    def _observe_latency(self, interruption: Interruption, message: ReceivedMessage) -> None:
        started = interruption.time or message.sent
        if self.metrics is not None and started is not None:
            waited = (self.clock.now() - started).total_seconds()
            self.metrics.message_queue_duration.observe(max(0.0, waited))

    async def _delete(self, message: ReceivedMessage) -> None:
        try:
            await self.queue.delete(message)
        except Exception as exc:  # it comes back after its visibility timeout
            self._log.error("failed deleting interruption message", error=describe_error(exc),
                            messageId=message.message_id)  # fmt: skip
            return
        if self.metrics is not None:
            self.metrics.deleted_messages.inc()
