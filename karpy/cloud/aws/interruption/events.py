"""The Kubernetes Events an interruption publishes, with Karpenter's reasons and messages.

Each goes on the NodeClaim and, when it has registered, on its Node, deduplicated per
object (by UID when known) and reason, so a message delivered twice, or two messages
about one instance, say so once. One event tells what AWS reported (``SpotInterrupted``,
``InstanceStopping``, ...); a second, ``TerminatingOnInterruption``, tells that karpy
deleted the NodeClaim because of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.cloud.aws.interruption.messages import MessageKind
from karpy.kube.events import Event, ObjectRef

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.state.records import NodeInfo

__all__ = ["notice_events", "terminating_events"]

WARNING: Final = "Warning"
NORMAL: Final = "Normal"

_UNHEALTHY: Final = (
    WARNING,
    "InstanceUnhealthy",
    "An unhealthy warning was triggered for the instance",
)

# kind -> (type, reason, message): what AWS reported about the instance.
_NOTICES: Final = {
    MessageKind.SPOT_INTERRUPTED: (
        WARNING, "SpotInterrupted", "Spot interruption warning was triggered"),
    MessageKind.REBALANCE_RECOMMENDATION: (
        NORMAL, "SpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"),
    MessageKind.INSTANCE_STOPPED: (WARNING, "InstanceStopping", "Instance is stopping"),
    MessageKind.INSTANCE_TERMINATED: (WARNING, "InstanceTerminating", "Instance is terminating"),
    MessageKind.SCHEDULED_CHANGE: _UNHEALTHY,
    MessageKind.INSTANCE_STATUS: _UNHEALTHY,
    MessageKind.SYSTEM_STATUS: _UNHEALTHY,
    MessageKind.EVENT_STATUS: _UNHEALTHY,
    MessageKind.CAPACITY_RESERVATION_INTERRUPTED: (
        WARNING, "CapacityReservationInstanceInterrupted",
        "Capacity Reservation interruption warning was triggered"),
}  # fmt: skip

TERMINATING_REASON: Final = "TerminatingOnInterruption"


def notice_events(kind: MessageKind, claim: NodeClaim, node: NodeInfo | None) -> list[Event]:
    """The events saying what AWS reported about ``claim``'s instance (none for no_op)."""
    notice = _NOTICES.get(kind)
    if notice is None:
        return []
    type_, reason, message = notice
    return _on_both(claim, node, type_=type_, reason=reason, claim_message=message,
                    node_message=message)  # fmt: skip


def terminating_events(claim: NodeClaim, node: NodeInfo | None) -> list[Event]:
    """The events saying the NodeClaim (and so its Node) is deleted for an interruption."""
    return _on_both(
        claim, node, type_=WARNING, reason=TERMINATING_REASON,
        claim_message="Interruption triggered termination for the NodeClaim",
        node_message="Interruption triggered termination for the Node",
    )  # fmt: skip


def _on_both(
    claim: NodeClaim,
    node: NodeInfo | None,
    *,
    type_: str,
    reason: str,
    claim_message: str,
    node_message: str,
) -> list[Event]:
    claim_ref = ObjectRef("NodeClaim", claim.name, uid=claim.metadata.uid,
                          api_version="karpenter.sh/v1")  # fmt: skip
    events = [Event(claim_ref, type_, reason, claim_message, _dedupe(claim_ref))]
    if node is not None:
        node_ref = ObjectRef("Node", node.name, uid=node.uid, api_version="v1")
        events.append(Event(node_ref, type_, reason, node_message, _dedupe(node_ref)))
    return events


def _dedupe(ref: ObjectRef) -> tuple[str, ...]:
    return (ref.kind, ref.uid or ref.name)
