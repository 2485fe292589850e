"""Label selectors as apimachinery evaluates them."""

from __future__ import annotations

import pytest

from karpy.scheduling.selectors import selector_from_dict


def test_an_absent_selector_matches_nothing_and_an_empty_one_everything() -> None:
    assert not selector_from_dict(None).matches({"app": "web"})
    assert selector_from_dict({}).matches({"app": "web"})
    assert selector_from_dict({}).matches({})


@pytest.mark.parametrize(
    ("expression", "labels", "matches"),
    [
        ({"key": "app", "operator": "In", "values": ["web"]}, {"app": "web"}, True),
        ({"key": "app", "operator": "In", "values": ["web"]}, {}, False),
        ({"key": "app", "operator": "NotIn", "values": ["web"]}, {}, True),
        ({"key": "app", "operator": "NotIn", "values": ["web"]}, {"app": "web"}, False),
        ({"key": "app", "operator": "Exists"}, {"app": "x"}, True),
        ({"key": "app", "operator": "DoesNotExist"}, {"app": "x"}, False),
    ],
)
def test_match_expressions(
    expression: dict[str, object], labels: dict[str, str], matches: bool
) -> None:
    assert selector_from_dict({"matchExpressions": [expression]}).matches(labels) is matches


def test_match_labels_and_expressions_are_anded() -> None:
    selector = selector_from_dict(
        {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    )
    assert selector.matches({"app": "web", "tier": "front"})
    assert not selector.matches({"app": "web"})


@pytest.mark.parametrize(
    "expression",
    [
        {"key": "app", "operator": "Bogus", "values": ["x"]},
        {"key": "app", "operator": "In", "values": []},
        {"key": "app", "operator": "Exists", "values": ["x"]},
    ],
)
def test_invalid_selectors_match_nothing(expression: dict[str, object]) -> None:
    assert not selector_from_dict({"matchExpressions": [expression]}).matches({"app": "x"})


def test_equal_selectors_are_equal_values() -> None:
    a = selector_from_dict({"matchLabels": {"a": "1", "b": "2"}})
    b = selector_from_dict({"matchLabels": {"b": "2", "a": "1"}})
    assert a == b
    assert hash(a) == hash(b)
