"""Durations and resource lists as the models read and print them."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpy.apis import InvalidObject
from karpy.apis.duration import (
    DURATION_PATTERN,
    NILLABLE_DURATION_PATTERN,
    duration_text,
    parse_duration_field,
)
from karpy.apis.resources import format_resource_list, parse_resource_list
from tests.apis.builders import rendered


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("720h", timedelta(hours=720)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("0s", timedelta(0)),
        ("90s", timedelta(seconds=90)),
        ("1.5h", timedelta(hours=1, minutes=30)),  # Go reads it; the CRD pattern does not
        ("Never", None),
    ],
)
def test_nillable_durations(text, value):
    assert parse_duration_field(text, "f", NILLABLE_DURATION_PATTERN, nillable=True) == value


def test_never_is_only_allowed_where_the_field_is_nillable():
    with pytest.raises(InvalidObject) as caught:
        parse_duration_field("Never", "spec.x", DURATION_PATTERN)
    assert rendered(caught.value.errors) == [
        "spec.x: Invalid value: \"Never\": spec.x in body should match '^([0-9]+(s|m|h))+$'"
    ]


def test_durations_beyond_gos_range_cannot_be_represented():
    with pytest.raises(InvalidObject) as caught:
        parse_duration_field("3000000h", "spec.x", DURATION_PATTERN)
    assert rendered(caught.value.errors) == [
        'spec.x: Invalid value: "3000000h": time: invalid duration "3000000h"'
    ]


def test_duration_text_prefers_what_was_written():
    assert duration_text(timedelta(hours=1), "60m") == "60m"
    assert duration_text(timedelta(hours=1), None) == "1h0m0s"
    assert duration_text(None, None) == "Never"
    assert duration_text(timedelta(0), None) == "0s"


def test_resource_lists_are_milli_units_and_print_readably():
    parsed = parse_resource_list(
        {"cpu": "250m", "memory": "1Gi", "nvidia.com/gpu": 2, "pods": "110"}, "x"
    )
    assert parsed == {"cpu": 250, "memory": 2**30 * 1000, "nvidia.com/gpu": 2000, "pods": 110_000}
    assert format_resource_list(parsed) == {
        "cpu": "250m",
        "memory": "1Gi",
        "nvidia.com/gpu": "2",
        "pods": "110",
    }
    assert parse_resource_list(None, "x") == {}


def test_every_bad_quantity_is_reported():
    with pytest.raises(InvalidObject) as caught:
        parse_resource_list({"cpu": "1.2.3", "memory": "4Gi", "x": "a"}, "spec.limits")
    assert [e.path for e in caught.value.errors] == ["spec.limits.cpu", "spec.limits.x"]
