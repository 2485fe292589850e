"""Interruption handling for the AWS provider: an SQS queue fed by EventBridge carries
AWS's warnings about EC2 instances (spot interruptions, rebalance recommendations, state
changes, scheduled maintenance, capacity-reservation interruptions), and karpy deletes
the affected NodeClaims ahead of the loss so their pods move in good order.

`messages` parses one queue message, `actions` acts on it, `events` and `metrics` are
what it reports, `queue` is the SQS calls, and `controller` is the long-running reader
the AWS provider starts when ``INTERRUPTION_QUEUE`` is set. `instancestatus` polls EC2's
status checks once a minute, queue or no queue, and acts on failed ones the same way."""

from __future__ import annotations

from karpy.cloud.aws.interruption.controller import InterruptionController
from karpy.cloud.aws.interruption.instancestatus import InstanceStatusController
from karpy.cloud.aws.interruption.messages import Interruption, MessageKind, parse_message
from karpy.cloud.aws.interruption.metrics import InterruptionMetrics

__all__ = [
    "InstanceStatusController",
    "Interruption",
    "InterruptionController",
    "InterruptionMetrics",
    "MessageKind",
    "parse_message",
]
