"""EventBridge message bodies as AWS delivers them to the interruption queue (the shapes
of the ``aws.ec2`` and ``aws.health`` events in AWS's documentation), built by small
factories so each test says only what it varies."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-west-2"


def _envelope(source: str, detail_type: str, detail: dict[str, Any], *,
              resources: list[str], time: datetime | None = None) -> dict[str, Any]:  # fmt: skip
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": (time or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": REGION,
        "resources": resources,
        "detail": detail,
    }


def _arn(instance_id: str) -> str:
    return f"arn:aws:ec2:{REGION}:{ACCOUNT}:instance/{instance_id}"


def spot_interruption(instance_id: str, **kw: Any) -> dict[str, Any]:
    return _envelope("aws.ec2", "EC2 Spot Instance Interruption Warning",
                     {"instance-id": instance_id, "instance-action": "terminate"},
                     resources=[_arn(instance_id)], **kw)  # fmt: skip


def rebalance_recommendation(instance_id: str, **kw: Any) -> dict[str, Any]:
    return _envelope("aws.ec2", "EC2 Instance Rebalance Recommendation",
                     {"instance-id": instance_id}, resources=[_arn(instance_id)], **kw)  # fmt: skip


def state_change(instance_id: str, state: str, **kw: Any) -> dict[str, Any]:
    return _envelope("aws.ec2", "EC2 Instance State-change Notification",
                     {"instance-id": instance_id, "state": state},
                     resources=[_arn(instance_id)], **kw)  # fmt: skip


def reservation_interruption(instance_id: str, **kw: Any) -> dict[str, Any]:
    return _envelope("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning",
                     {"instance-id": instance_id, "instance-action": "terminate"},
                     resources=[_arn(instance_id)], **kw)  # fmt: skip


def health_event(*instance_ids: str, service: str = "EC2", category: str = "scheduledChange",
                 **kw: Any) -> dict[str, Any]:  # fmt: skip
    detail = {
        "eventArn": f"arn:aws:health:{REGION}::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/"
                    "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED_1",
        "service": service,
        "eventTypeCode": "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
        "eventTypeCategory": category,
        "startTime": "Wed, 05 Jun 2019 06:00:00 GMT",
        "endTime": "Wed, 05 Jun 2019 18:00:00 GMT",
        "eventDescription": [{"language": "en_US",
                              "latestDescription": "The instance is scheduled for retirement."}],
        "affectedEntities": [{"entityValue": i} for i in instance_ids],
    }  # fmt: skip
    return _envelope("aws.health", "AWS Health Event", detail,
                     resources=list(instance_ids), **kw)  # fmt: skip


def body(event: dict[str, Any]) -> str:
    return json.dumps(event)
