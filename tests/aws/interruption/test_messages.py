"""Parsing one queue message: each EventBridge kind to its `MessageKind` and instances,
everything else to no_op, and unreadable bodies to `MessageParseError` only."""

from __future__ import annotations

import contextlib
import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from karpy.cloud.aws.interruption.actions import instance_id_of
from karpy.cloud.aws.interruption.messages import MessageKind, MessageParseError, parse_message
from tests.aws.interruption import bodies as b

I = "i-0123456789abcdef0"  # noqa: E741


def test_spot_interruption_warning_names_its_instance_and_time():
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    message = parse_message(b.body(b.spot_interruption(I, time=at)))
    assert message.kind is MessageKind.SPOT_INTERRUPTED
    assert message.instance_ids == (I,)
    assert message.time == at
    assert message.source == "aws.ec2" and message.event_id


def test_rebalance_recommendation_and_reservation_interruption():
    assert parse_message(b.body(b.rebalance_recommendation(I))).kind is (
        MessageKind.REBALANCE_RECOMMENDATION)  # fmt: skip
    reserved = parse_message(b.body(b.reservation_interruption(I)))
    assert reserved.kind is MessageKind.CAPACITY_RESERVATION_INTERRUPTED
    assert reserved.instance_ids == (I,)


@pytest.mark.parametrize(
    ("state", "kind"),
    [
        ("stopping", MessageKind.INSTANCE_STOPPED),
        ("stopped", MessageKind.INSTANCE_STOPPED),
        ("STOPPING", MessageKind.INSTANCE_STOPPED),
        ("shutting-down", MessageKind.INSTANCE_TERMINATED),
        ("terminated", MessageKind.INSTANCE_TERMINATED),
        ("pending", MessageKind.NO_OP),
        ("running", MessageKind.NO_OP),
    ],
)
def test_state_change_maps_states_to_kinds(state, kind):
    message = parse_message(b.body(b.state_change(I, state)))
    assert message.kind is kind
    assert message.instance_ids == ((I,) if kind is not MessageKind.NO_OP else ())


def test_scheduled_change_names_every_affected_instance():
    message = parse_message(b.body(b.health_event(I, "i-0fedcba9876543210")))
    assert message.kind is MessageKind.SCHEDULED_CHANGE
    assert message.instance_ids == (I, "i-0fedcba9876543210")


@pytest.mark.parametrize(("service", "category"), [("EC2", "issue"), ("EBS", "scheduledChange"),
                                                   ("EC2", "accountNotification")])  # fmt: skip
def test_health_events_other_than_ec2_scheduled_changes_are_no_op(service, category):
    message = parse_message(b.body(b.health_event(I, service=service, category=category)))
    assert message.kind is MessageKind.NO_OP and message.instance_ids == ()


@pytest.mark.parametrize(
    "event",
    [
        {**b.spot_interruption(I), "version": "1"},
        {**b.spot_interruption(I), "source": "aws.autoscaling"},
        {**b.spot_interruption(I), "detail-type": "EC2 Instance Launch Successful"},
        {"hello": "world"},
    ],
)
def test_unknown_envelopes_are_no_op(event):
    assert parse_message(json.dumps(event)).kind is MessageKind.NO_OP


def test_an_empty_body_is_no_op():
    assert parse_message("").kind is MessageKind.NO_OP


@pytest.mark.parametrize(
    "raw",
    [
        "not json",
        "{",
        "[1, 2]",
        "null",
        json.dumps({**b.spot_interruption(I), "detail": {}}),
        json.dumps({**b.spot_interruption(I), "detail": "i-1"}),
        json.dumps({**b.spot_interruption(I), "detail": {"instance-id": 7}}),
        json.dumps({**b.state_change(I, "stopping"), "detail": {"instance-id": I}}),
        json.dumps({**b.health_event(I), "detail": {"service": "EC2",
                                                    "eventTypeCategory": "scheduledChange"}}),
        json.dumps({**b.health_event(I), "detail": {"service": "EC2",
                    "eventTypeCategory": "scheduledChange", "affectedEntities": [{}]}}),
        json.dumps({**b.spot_interruption(I), "time": "yesterday"}),
        json.dumps({**b.spot_interruption(I), "time": 12}),
    ],
    ids=["not-json", "unclosed", "list", "null", "spot-no-detail", "spot-detail-text",
         "spot-id-number", "state-change-no-state", "health-no-entities",
         "health-empty-entity", "time-text", "time-number"],
)  # fmt: skip
def test_malformed_bodies_raise_a_parse_error(raw):
    with pytest.raises(MessageParseError):
        parse_message(raw)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
_keys = st.sampled_from(["version", "source", "detail-type", "detail", "time", "id"])


@given(st.one_of(
    st.text(),
    _json.map(json.dumps),
    st.dictionaries(_keys, _json, max_size=6).map(
        lambda d: json.dumps({"version": "0", "source": "aws.ec2", **d})),
    st.builds(lambda detail: json.dumps({**b.state_change(I, "stopped"), "detail": detail}),
              _json),
    st.builds(lambda detail: json.dumps({**b.health_event(I), "detail": detail}),
              st.dictionaries(st.sampled_from(["service", "eventTypeCategory",
                                               "affectedEntities"]), _json)),
))  # fmt: skip
def test_no_body_raises_anything_but_a_parse_error(raw):
    with contextlib.suppress(MessageParseError):
        parse_message(raw)


def test_instance_id_of_reads_aws_provider_ids_only():
    assert instance_id_of(f"aws:///us-west-2a/{I}") == I
    assert instance_id_of("fake://test-zone-a/default-abc") is None
    assert instance_id_of("aws:///us-west-2a/") is None
