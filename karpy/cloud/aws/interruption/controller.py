"""`InterruptionController`: reads the SQS interruption queue and acts on what it says.

When ``INTERRUPTION_QUEUE`` is set, EventBridge rules put AWS's warnings about EC2
instances (spot interruptions, rebalance recommendations, state changes, scheduled
maintenance, capacity-reservation interruptions) on that queue, and this controller
reads it for as long as the process leads (`interruption_controller` builds it):

* a `karpy.reconcile.PollingSource` long-polls the queue (`InterruptionController.receive`,
  up to ten messages, no pause between polls: the long poll is the wait) and queues each
  message it receives; it polls again once they are all handled;
* each message is a reconcile, ten at a time (`InterruptionController.reconcile`): a body
  that cannot be parsed is logged and deleted, so it never blocks the queue; a parsed
  message is counted by kind, acted on (`actions.InterruptionActions`), and then deleted.
  If acting fails (the API server refused a delete), the message is left in the queue and
  comes back after its visibility timeout: SQS is the retry, so no warning is lost to a
  transient error.

The reader never dies of the cloud: a missing queue (not created yet, or deleted) or any
other SQS error fails the poll, which the source logs and retries with backoff; the queue
is looked up again until it appears. Messages are only read once the NodeClaims and Nodes
have been listed (`actions.LISTED_FIRST`), or an interruption would be dropped for an
instance state had not yet seen. Stopping cancels a long poll in flight at once; the
messages being handled are finished first (they would otherwise come back and be handled
twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.interruption.actions import LISTED_FIRST, InterruptionActions
from karpy.cloud.aws.interruption.messages import MessageParseError, parse_message
from karpy.cloud.aws.interruption.queue import WAIT_SECONDS, InterruptionQueue
from karpy.kube.backoff import Backoff
from karpy.log import describe_error, get_logger
from karpy.reconcile import DONE, Controller, PollingSource

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.interruption.messages import Interruption
    from karpy.cloud.aws.interruption.metrics import InterruptionMetrics
    from karpy.cloud.aws.interruption.queue import ReceivedMessage
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.reconcile import Result
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["InterruptionController", "interruption_controller"]

log = get_logger("controller.interruption")

PARALLELISM: Final = 10


class InterruptionController:
    """The reconciler of one received message (see the module docstring).
    ``karpenter_metrics`` (for ``karpenter_nodeclaims_disrupted_total``) and
    ``reservation_unavailable`` (told the ID of an interrupted capacity reservation) are
    optional; ``backoff`` paces polls after SQS errors (tests pass a short one)."""

    name = "interruption"
    watches: frozenset[str] = frozenset()  # its work comes from the queue alone

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

    def keys_for(self, change: StateChange[Any]) -> Iterable[ReceivedMessage]:
        return ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[ReceivedMessage]:
        return ()

    async def receive(self) -> list[ReceivedMessage]:
        """The next messages (the polling source's poll), looking the queue up first when
        its URL is not known (the first poll, or the queue was deleted under us)."""
        if self.queue.url is None:
            url = await self.queue.resolve()
            self._log.info("watching interruption queue", url=url)
        return await self.queue.receive(self.wait_seconds)

    async def reconcile(self, key: ReceivedMessage) -> Result:
        """Parse, act on and delete one message; a failure to act leaves it in the queue."""
        message = key
        try:
            interruption = parse_message(message.body)
        except MessageParseError as exc:
            self._log.error("failed parsing interruption message", error=str(exc),
                            messageId=message.message_id)  # fmt: skip
            await self._delete(message)
            return DONE
        if self.metrics is not None:
            self.metrics.received_messages.labels(str(interruption.kind)).inc()
        try:
            handled = await self.actions.handle(interruption, self.state.snapshot())
        except Exception as exc:  # left in the queue: it comes back after its timeout
            self._log.error("failed handling interruption message", error=describe_error(exc),
                            messageKind=str(interruption.kind), messageId=message.message_id,
                            instances=list(interruption.instance_ids))  # fmt: skip
            return DONE
        if not handled.nodeclaims:
            self._log.debug("interruption message concerns no nodeclaim",
                            messageKind=str(interruption.kind),
                            instances=list(interruption.instance_ids))  # fmt: skip
        self._observe_latency(interruption, message)
        await self._delete(message)
        return DONE

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


def interruption_controller(
    reader: InterruptionController, *, metrics: ControllerMetrics | None = None
) -> Controller[ReceivedMessage]:
    """``reader`` run as a controller: fed by a long poll of its queue, ``PARALLELISM``
    messages handled at a time, started once NodeClaims and Nodes are listed."""
    source = PollingSource("sqs", reader.receive, interval=0.0, backoff=reader.backoff,
                           clock=reader.clock)  # fmt: skip
    return Controller(reader, reader.state, workers=PARALLELISM, resync=None,
                      sources=[source], synced_kinds=LISTED_FIRST, clock=reader.clock,
                      metrics=metrics)  # fmt: skip
