"""Interruption handling for the AWS provider: an SQS queue fed by EventBridge carries
AWS's warnings about EC2 instances (spot interruptions, rebalance recommendations, state
changes, scheduled maintenance, capacity-reservation interruptions), and karpy deletes
the affected NodeClaims ahead of the loss so their pods move in good order.

`messages` parses one queue message, `actions` acts on it, `events` and `metrics` are
what it reports, `queue` is the SQS calls, and `controller` is the reader (a controller
fed by a long poll of the queue) the AWS provider starts when ``INTERRUPTION_QUEUE`` is
set. `instancestatus` polls EC2's status checks once a minute, queue or no queue, and
acts on failed ones the same way."""

from __future__ import annotations

from karpy.cloud.aws.interruption.controller import (
    InterruptionController,
    interruption_controller,
)
from karpy.cloud.aws.interruption.instancestatus import (
    InstanceStatusController,
    instance_status_controller,
)
from karpy.cloud.aws.interruption.messages import Interruption, MessageKind, parse_message
from karpy.cloud.aws.interruption.metrics import InterruptionMetrics

__all__ = [
    "InstanceStatusController",
    "Interruption",
    "InterruptionController",
    "InterruptionMetrics",
    "MessageKind",
    "instance_status_controller",
    "interruption_controller",
    "parse_message",
]
