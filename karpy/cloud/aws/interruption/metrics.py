"""The interruption controllers' metrics, under Karpenter's names so its dashboards
work: messages received by kind, messages deleted from the queue, how long a message
waited between the event (EventBridge's ``time``) and the end of its handling, and the
unhealthy instances the instance-status poller found (once per instance and category
for as long as it stays unhealthy)."""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["InterruptionMetrics"]

# Karpenter's DurationBuckets: controller-runtime's, plus longer ones for singletons.
DURATION_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7,
    0.8, 0.9, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5, 6, 7, 8, 9, 10, 15,
    20, 25, 30, 40, 50, 60, 120, 150, 300, 450, 600,
)  # fmt: skip


class InterruptionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.received_messages = Counter(
            "karpenter_interruption_received_messages_total",
            "Messages received from the interruption queue, by message type.",
            ["message_type"],
            registry=registry,
        )
        self.deleted_messages = Counter(
            "karpenter_interruption_deleted_messages_total",
            "Messages deleted from the interruption queue.",
            registry=registry,
        )
        self.message_queue_duration = Histogram(
            "karpenter_interruption_message_queue_duration_seconds",
            "Seconds from an interruption event to the end of its handling.",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self.instance_status_unhealthy = Counter(
            "karpenter_interruption_instance_status_unhealthy_total",
            "Unique unhealthy instance statuses found by EC2 DescribeInstanceStatus, by "
            "status check category.",
            ["category"],
            registry=registry,
        )
