"""One SQS message body, as EventBridge delivered it, turned into a typed `Interruption`.

EventBridge rules forward five kinds of AWS events to the interruption queue; each is
recognised by its envelope (``version``, ``source``, ``detail-type``) and carries the
affected instances in a different place of its ``detail``:

* ``aws.ec2`` "EC2 Spot Instance Interruption Warning" (``detail.instance-id``):
  the spot instance is reclaimed in two minutes;
* ``aws.ec2`` "EC2 Instance Rebalance Recommendation" (``detail.instance-id``): a spot
  instance is at elevated risk of interruption;
* ``aws.ec2`` "EC2 Instance State-change Notification" (``detail.instance-id``,
  ``detail.state``): stopping/stopped and shutting-down/terminated matter, the other
  states (pending, running) do not;
* ``aws.ec2`` "EC2 Capacity Reservation Instance Interruption Warning"
  (``detail.instance-id``): an instance in an interruptible reservation is reclaimed;
* ``aws.health`` "AWS Health Event" (``detail.affectedEntities[].entityValue``): only
  EC2 events of category ``scheduledChange`` (maintenance that will stop or reboot the
  instance) matter.

Anything else (another envelope, an event of a kind above that needs no action) is a
``no_op`` message: it is counted and deleted, nothing else. A body that is not JSON, or
one of the kinds above without the fields it needs, raises `MessageParseError` and
nothing else, so the reader can log it and delete it without stopping.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

import attrs

from karpy.errors import KarpyError

__all__ = ["Interruption", "MessageKind", "MessageParseError", "parse_message"]


class MessageKind(StrEnum):
    """What a message says happened; the values are Karpenter's ``message_type`` metric
    labels and disruption reasons."""

    SPOT_INTERRUPTED = "spot_interrupted"
    REBALANCE_RECOMMENDATION = "rebalance_recommendation"
    INSTANCE_STOPPED = "instance_stopped"
    INSTANCE_TERMINATED = "instance_terminated"
    SCHEDULED_CHANGE = "scheduled_change"
    CAPACITY_RESERVATION_INTERRUPTED = "capacity_reservation_interrupted"
    # From EC2 DescribeInstanceStatus (`instancestatus`), not from the queue:
    INSTANCE_STATUS = "instance_status"
    SYSTEM_STATUS = "system_status"
    EVENT_STATUS = "event_status"
    NO_OP = "no_op"


class MessageParseError(KarpyError):
    """The body is not an event this reader can understand (the message is dropped)."""


@attrs.frozen(slots=True)
class Interruption:
    """A parsed message: its kind, the instances it concerns and when the event happened
    (None when the envelope has no ``time``). ``event_id`` is EventBridge's ``id``."""

    kind: MessageKind
    instance_ids: tuple[str, ...] = ()
    time: datetime | None = None
    event_id: str = ""
    source: str = ""
    detail_type: str = ""


EC2: Final = "aws.ec2"
HEALTH: Final = "aws.health"
SPOT_INTERRUPTION: Final = "EC2 Spot Instance Interruption Warning"
REBALANCE: Final = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE: Final = "EC2 Instance State-change Notification"
RESERVATION_INTERRUPTION: Final = "EC2 Capacity Reservation Instance Interruption Warning"
HEALTH_EVENT: Final = "AWS Health Event"
_VERSION: Final = "0"

_STOPPED_STATES: Final = frozenset({"stopping", "stopped"})
_TERMINATED_STATES: Final = frozenset({"shutting-down", "terminated"})
_HEALTH_SERVICE: Final = "EC2"
_HEALTH_CATEGORY: Final = "scheduledChange"

# The envelopes whose detail names a single instance under ``instance-id``.
_SINGLE_INSTANCE: Final = {
    SPOT_INTERRUPTION: MessageKind.SPOT_INTERRUPTED,
    REBALANCE: MessageKind.REBALANCE_RECOMMENDATION,
    RESERVATION_INTERRUPTION: MessageKind.CAPACITY_RESERVATION_INTERRUPTED,
}


def parse_message(body: str) -> Interruption:
    """The `Interruption` in one SQS message ``body``; `MessageParseError` when it cannot
    be read (see the module docstring). An empty body is a ``no_op``."""
    if not body:
        return Interruption(MessageKind.NO_OP)
    try:
        envelope = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise MessageParseError(f"message body is not JSON: {exc}") from None
    if not isinstance(envelope, dict):
        raise MessageParseError(f"message body is a JSON {type(envelope).__name__}, "
                                "not an event object")  # fmt: skip
    source = _text(envelope, "source")
    detail_type = _text(envelope, "detail-type")
    base = Interruption(
        MessageKind.NO_OP,
        time=_time(envelope.get("time")),
        event_id=_text(envelope, "id"),
        source=source,
        detail_type=detail_type,
    )
    if _text(envelope, "version") != _VERSION:
        return base
    if source == EC2 and detail_type in _SINGLE_INSTANCE:
        detail = _detail(envelope, detail_type)
        kind = _SINGLE_INSTANCE[detail_type]
        return attrs.evolve(base, kind=kind, instance_ids=(_instance_id(detail, detail_type),))
    if source == EC2 and detail_type == STATE_CHANGE:
        return _state_change(base, _detail(envelope, detail_type))
    if source == HEALTH and detail_type == HEALTH_EVENT:
        return _health_event(base, _detail(envelope, detail_type))
    return base


def _state_change(base: Interruption, detail: dict[str, Any]) -> Interruption:
    instance_id = _instance_id(detail, STATE_CHANGE)
    state = detail.get("state")
    if not isinstance(state, str) or not state:
        raise MessageParseError(f"{STATE_CHANGE} without a state")
    state = state.lower()
    if state in _STOPPED_STATES:
        kind = MessageKind.INSTANCE_STOPPED
    elif state in _TERMINATED_STATES:
        kind = MessageKind.INSTANCE_TERMINATED
    else:  # pending, running: nothing to do
        return base
    return attrs.evolve(base, kind=kind, instance_ids=(instance_id,))


def _health_event(base: Interruption, detail: dict[str, Any]) -> Interruption:
    if detail.get("service") != _HEALTH_SERVICE or (
        detail.get("eventTypeCategory") != _HEALTH_CATEGORY
    ):
        return base  # other services, issues and account notifications: not ours to act on
    entities = detail.get("affectedEntities")
    if not isinstance(entities, list):
        raise MessageParseError(f"{HEALTH_EVENT} without affectedEntities")
    ids: list[str] = []
    for entity in entities:
        value = entity.get("entityValue") if isinstance(entity, dict) else None
        if not isinstance(value, str) or not value:
            raise MessageParseError(f"{HEALTH_EVENT} with an affected entity without a value")
        ids.append(value)
    return attrs.evolve(base, kind=MessageKind.SCHEDULED_CHANGE, instance_ids=tuple(ids))


def _detail(envelope: dict[str, Any], detail_type: str) -> dict[str, Any]:
    detail = envelope.get("detail")
    if not isinstance(detail, dict):
        raise MessageParseError(f"{detail_type} without a detail object")
    return detail


def _instance_id(detail: dict[str, Any], detail_type: str) -> str:
    value = detail.get("instance-id")
    if not isinstance(value, str) or not value:
        raise MessageParseError(f"{detail_type} without an instance-id")
    return value


def _text(envelope: dict[str, Any], key: str) -> str:
    value = envelope.get(key)
    return value if isinstance(value, str) else ""


def _time(value: Any) -> datetime | None:
    """EventBridge's ``time`` (RFC 3339, ``2021-02-18T16:36:02Z``); None when absent."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MessageParseError(f"event time is not a string: {value!r}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise MessageParseError(f"event time is not RFC 3339: {value!r}") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
