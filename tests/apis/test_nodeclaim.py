"""NodeClaim: parsing, status, printing back, and the CRD rules (immutable spec,
requirements that may name the NodePool)."""

# ruff: noqa: E501 - expected messages are quoted whole, as kube-apiserver prints them

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from karpy.apis import InvalidObject
from karpy.apis.nodeclaim import NodeClaim
from tests.apis.builders import DELETE, changed, nodeclaim, rendered, requirement


def parse(obj: dict[str, Any]) -> NodeClaim:
    return NodeClaim.from_dict(obj)


def test_minimal_nodeclaim_gets_the_default_expiry():
    claim = parse(nodeclaim())
    assert claim.spec.expire_after == timedelta(hours=720)
    assert claim.spec.resources.requests == {}
    assert claim.status.node_name == ""
    assert claim.to_dict()["spec"]["expireAfter"] == "720h"


def test_spec_and_status_are_read():
    obj = changed(nodeclaim(), "spec.resources", {"requests": {"cpu": "1500m", "pods": 3}})
    obj = changed(obj, "spec.terminationGracePeriod", "2h")
    obj = changed(obj, "spec.taints", [{"key": "a", "effect": "NoSchedule"}])
    obj = changed(
        obj,
        "status",
        {
            "nodeName": "ip-10-0-0-1",
            "providerID": "aws:///us-west-2a/i-1",
            "imageID": "ami-1",
            "capacity": {"cpu": "2", "memory": "8Gi"},
            "allocatable": {"cpu": "1930m"},
            "lastPodEventTime": "2026-05-01T10:02:00Z",
            "conditions": [
                {"type": "Launched", "status": "True", "lastTransitionTime": "2026-05-01T10:00:00Z"}
            ],
        },
    )
    claim = parse(obj)
    assert claim.spec.resources.requests == {"cpu": 1500, "pods": 3000}
    assert claim.spec.termination_grace_period == timedelta(hours=2)
    assert claim.spec.taints[0].key == "a"
    assert claim.spec.requirements[0].key == "karpenter.sh/nodepool"
    assert claim.status.node_name == "ip-10-0-0-1"
    assert claim.status.provider_id == "aws:///us-west-2a/i-1"
    assert claim.status.image_id == "ami-1"
    assert claim.status.capacity == {"cpu": 2000, "memory": 8 * 2**30 * 1000}
    assert claim.status.allocatable == {"cpu": 1930}
    assert claim.status.last_pod_event_time == datetime(2026, 5, 1, 10, 2, tzinfo=UTC)
    launched = claim.status.condition("Launched")
    assert launched is not None and launched.is_true
    assert parse(claim.to_dict()) == claim
    assert claim.to_dict()["spec"]["resources"] == {"requests": {"cpu": "1500m", "pods": "3"}}


def test_status_conditions_without_reason_or_message_still_parse():
    obj = changed(nodeclaim(), "status.conditions", [{"type": "Launched", "status": "Unknown"}])
    condition = parse(obj).status.conditions[0]
    # A missing reason reads as the type (what operatorpkg writes), so printing the
    # condition back satisfies the CRD's required, non-empty reason and message.
    assert (condition.reason, condition.message) == ("Launched", "")
    assert condition.to_dict() == {
        "type": "Launched",
        "status": "Unknown",
        "reason": "Launched",
        "message": "",
    }


def test_missing_node_class_ref_cannot_be_represented():
    with pytest.raises(InvalidObject) as caught:
        parse(changed(nodeclaim(), "spec.nodeClassRef", DELETE))
    assert rendered(caught.value.errors) == ["spec.nodeClassRef: Required value"]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.requirements", [requirement("karpenter.sh/nodepool", "In", "default")], []),
        (
            "spec.requirements",
            [requirement("karpenter.sh/other", "In", "x")],
            [
                'spec.requirements[0].key: Invalid value: "karpenter.sh/other": label domain "karpenter.sh" is restricted'
            ],
        ),
        (
            "spec.requirements",
            [requirement("kubernetes.io/hostname", "In", "x")],
            [
                'spec.requirements[0].key: Invalid value: "kubernetes.io/hostname": label "kubernetes.io/hostname" is restricted'
            ],
        ),
        (
            "spec.requirements",
            [requirement("a", "Gt", "x")],
            [
                "spec.requirements: Invalid value: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"
            ],
        ),
        (
            "spec.expireAfter",
            "5d",
            [
                "spec.expireAfter: Invalid value: \"5d\": spec.expireAfter in body should match '^(([0-9]+(s|m|h))+|Never)$'"
            ],
        ),
        (
            "spec.nodeClassRef.kind",
            "",
            ['spec.nodeClassRef.kind: Invalid value: "": kind may not be empty'],
        ),
    ],
)
def test_schema_rules(path, value, expected):
    obj = changed(nodeclaim(), path, value)
    if path == "spec.expireAfter":
        with pytest.raises(InvalidObject) as caught:
            parse(obj)
        assert rendered(caught.value.errors) == expected
        return
    assert rendered(parse(obj).validate()) == expected


def test_spec_is_immutable_but_status_and_metadata_may_change():
    old = parse(nodeclaim())
    relabelled = parse(changed(nodeclaim(), "metadata.labels", {"a": "b"}))
    assert relabelled.validate(old) == []
    launched = parse(changed(nodeclaim(), "status.nodeName", "n1"))
    assert launched.validate(old) == []
    changed_spec = parse(changed(nodeclaim(), "spec.expireAfter", "1h"))
    assert rendered(changed_spec.validate(old)) == ["spec: Invalid value: spec is immutable"]
    # Group and kind of the node class ref are not separately immutable on a NodeClaim.
    regrouped = parse(changed(nodeclaim(), "spec.nodeClassRef.group", "example.com"))
    assert rendered(regrouped.validate(old)) == ["spec: Invalid value: spec is immutable"]
