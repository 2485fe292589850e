"""What an interruption message does to the cluster.

A message names EC2 instances; karpy acts on the NodeClaims whose ``status.providerID``
(``aws:///<zone>/<instance-id>``) names them, found in the cluster state snapshot, so an
instance karpy does not manage is simply ignored. For each such NodeClaim it:

1. publishes the event saying what AWS reported (`events.notice_events`);
2. marks capacity that is going away: a spot interruption makes the NodeClaim's (instance
   type, zone, spot) offering unavailable in the ICE cache, so the replacement is not
   launched into the pool being reclaimed; a capacity-reservation interruption does the
   same for the reserved offering (and tells the reservation tracker, when one is wired);
3. for every kind except a rebalance recommendation, deletes the NodeClaim through the
   API. Deletion is the whole action: the ordinary termination flow then taints, drains
   and terminates, exactly as for any other disruption. A NodeClaim already being deleted
   is left alone, and the DELETE carries the NodeClaim's UID as a precondition so a
   NodeClaim recreated under the same name is never hit by a stale message.
   An instance whose own or system status checks fail (`instancestatus`) is broken
   already, so draining it politely helps nobody: its NodeClaim is first annotated with
   ``karpenter.sh/nodeclaim-termination-timestamp`` = now, which makes termination skip
   the graceful drain (Karpenter's "forceful termination").

Failures to write (other than "already gone") raise `KubeError`, so the reader keeps the
message in the queue and sees it again after its visibility timeout.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.core import format_time
from karpy.apis.labels import (
    ANNOTATION_TERMINATION_TIMESTAMP,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.interruption.events import notice_events, terminating_events
from karpy.cloud.aws.interruption.messages import MessageKind
from karpy.kube.client import Preconditions
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.log import get_logger, obj_ref
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Callable

    import immutables

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock
    from karpy.cloud.aws.interruption.messages import Interruption
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import Event, EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.records import NodeInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "DELETING_KINDS",
    "FORCEFUL_KINDS",
    "LISTED_FIRST",
    "HandledMessage",
    "InterruptionActions",
    "instance_id_of",
]

log = get_logger("controller.interruption")

PROVIDER_PREFIX: Final = "aws://"
# Listed before any message is acted on: a warning about an instance state has not seen
# yet would be dropped.
LISTED_FIRST: Final = (kinds.NODECLAIM, kinds.NODE)

# The kinds that end the instance's NodeClaim (Karpenter's "cordon and drain").
DELETING_KINDS: Final = frozenset({
    MessageKind.SPOT_INTERRUPTED,
    MessageKind.SCHEDULED_CHANGE,
    MessageKind.INSTANCE_STOPPED,
    MessageKind.INSTANCE_TERMINATED,
    MessageKind.CAPACITY_RESERVATION_INTERRUPTED,
    MessageKind.INSTANCE_STATUS,
    MessageKind.SYSTEM_STATUS,
    MessageKind.EVENT_STATUS,
})  # fmt: skip
# The kinds whose NodeClaim is terminated without a graceful drain.
FORCEFUL_KINDS: Final = frozenset({MessageKind.INSTANCE_STATUS, MessageKind.SYSTEM_STATUS})


def instance_id_of(provider_id: str) -> str | None:
    """The EC2 instance ID in an AWS provider ID (``aws:///us-west-2a/i-0123``), or None
    when ``provider_id`` is not an AWS one."""
    if not provider_id.startswith(PROVIDER_PREFIX):
        return None
    _, _, instance_id = provider_id.rpartition("/")
    return instance_id or None


@attrs.frozen(slots=True)
class HandledMessage:
    """The NodeClaims a message concerned, and those of them it deleted."""

    nodeclaims: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()


class _ClaimsByInstance:
    """NodeClaims by instance ID, rebuilt only when the NodeClaims change (the
    persistent map is a new object exactly then), not for every pod update."""

    def __init__(self) -> None:
        self._source: immutables.Map[str, NodeClaim] | None = None
        self._index: dict[str, list[NodeClaim]] = {}

    def lookup(self, snapshot: StateSnapshot, instance_id: str) -> list[NodeClaim]:
        claims = snapshot.nodeclaims
        if claims is not self._source:
            index: dict[str, list[NodeClaim]] = {}
            for claim in claims.values():
                found = instance_id_of(claim.status.provider_id)
                if found is not None:
                    index.setdefault(found, []).append(claim)
            self._index = index
            self._source = claims
        return self._index.get(instance_id, [])


class InterruptionActions:
    """Acts on parsed messages (see the module docstring). ``reservation_unavailable``,
    when given, is told the ID of a capacity reservation whose instance was interrupted."""

    def __init__(
        self,
        client: KubeClient,
        unavailable: UnavailableOfferings | None,
        recorder: EventRecorder | None = None,
        *,
        karpenter_metrics: KarpenterMetrics | None = None,
        reservation_unavailable: Callable[[str], None] | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.client = client
        self.clock = clock
        self.unavailable = unavailable
        self.recorder = recorder
        self.karpenter_metrics = karpenter_metrics
        self.reservation_unavailable = reservation_unavailable
        self._claims = _ClaimsByInstance()

    async def handle(self, message: Interruption, snapshot: StateSnapshot) -> HandledMessage:
        """Act on every NodeClaim ``message`` concerns; raises `KubeError` when a delete
        fails for a reason other than the NodeClaim being gone already."""
        if message.kind is MessageKind.NO_OP:
            return HandledMessage()
        concerned: list[str] = []
        deleted: list[str] = []
        for instance_id in message.instance_ids:
            for claim in self._claims.lookup(snapshot, instance_id):
                concerned.append(claim.name)
                if await self._act(message.kind, claim, snapshot, instance_id):
                    deleted.append(claim.name)
        return HandledMessage(tuple(concerned), tuple(deleted))

    async def _act(
        self, kind: MessageKind, claim: NodeClaim, snapshot: StateSnapshot, instance_id: str
    ) -> bool:
        node = snapshot.node_for_claim(claim.name) or snapshot.node_by_provider(
            claim.status.provider_id
        )
        self._publish(notice_events(kind, claim, node))
        self._mark_unavailable(kind, claim)
        if kind not in DELETING_KINDS or claim.metadata.deletion_timestamp is not None:
            return False
        return await self._delete(kind, claim, node, instance_id)

    def _mark_unavailable(self, kind: MessageKind, claim: NodeClaim) -> None:
        if self.unavailable is None:
            return
        labels = claim.metadata.labels
        instance_type = labels.get(LABEL_INSTANCE_TYPE, "")
        zone = labels.get(LABEL_ZONE, "")
        if kind is MessageKind.SPOT_INTERRUPTED and instance_type and zone:
            self.unavailable.mark([(instance_type, zone, CAPACITY_TYPE_SPOT)])
        elif kind is MessageKind.CAPACITY_RESERVATION_INTERRUPTED:
            if instance_type and zone:
                self.unavailable.mark([(instance_type, zone, CAPACITY_TYPE_RESERVED)])
            reservation = labels.get(LABEL_AWS_CAPACITY_RESERVATION_ID, "")
            if reservation and self.reservation_unavailable is not None:
                self.reservation_unavailable(reservation)

    async def _delete(
        self, kind: MessageKind, claim: NodeClaim, node: NodeInfo | None, instance_id: str
    ) -> bool:
        preconditions = Preconditions(uid=claim.metadata.uid) if claim.metadata.uid else None
        try:
            if kind in FORCEFUL_KINDS and (
                ANNOTATION_TERMINATION_TIMESTAMP not in claim.metadata.annotations
            ):
                stamp = {ANNOTATION_TERMINATION_TIMESTAMP: format_time(self.clock.now())}
                await self.client.patch(
                    NODECLAIMS, claim.name, {"metadata": {"annotations": stamp}}
                )
            await self.client.delete(NODECLAIMS, claim.name, preconditions=preconditions)
        except (NotFound, Conflict):
            return False  # gone already, or a new NodeClaim now holds the name
        refs = obj_ref("NodeClaim", claim.name)
        if node is not None:
            refs |= obj_ref("Node", node.name)
        log.info("deleted nodeclaim on interruption", **refs, messageKind=str(kind),
                 instance=instance_id, forceful=kind in FORCEFUL_KINDS)  # fmt: skip
        self._publish(terminating_events(claim, node))
        if self.karpenter_metrics is not None:
            labels = claim.metadata.labels
            self.karpenter_metrics.nodeclaims_disrupted.labels(
                str(kind), labels.get(LABEL_NODEPOOL, ""), labels.get(LABEL_CAPACITY_TYPE, ""),
                "", "",
            ).inc()  # fmt: skip
        return True

    def _publish(self, events: list[Event]) -> None:
        if self.recorder is not None:
            for event in events:
                self.recorder.publish(event)
