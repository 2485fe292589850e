"""The apimachinery validators and Karpenter's runtime checks, word for word."""

# ruff: noqa: E501 - expected messages are quoted whole, as kube-apiserver prints them

from __future__ import annotations

import pytest

from karpy.apis.core import NodeSelectorRequirement, Taint
from karpy.apis.validation import (
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    restricted_label_error,
    validate_requirement,
    validate_taints,
)
from tests.apis.builders import rendered

NAME_PART = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
PREFIX_PART = (
    "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
    "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. "
    "'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_VALUE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    ("key", "problems"),
    [
        ("team", []),
        ("example.com/team", []),
        ("a.b-c/My_Name.1", []),
        ("", ["name part must be non-empty", NAME_PART]),
        ("/team", ["prefix part must be non-empty"]),
        ("Example.com/team", [PREFIX_PART]),
        ("team-", [NAME_PART]),
        (
            "x" * 64,
            [
                "name part must be no more than 63 characters",
            ],
        ),
        ("example.com/", ["name part must be non-empty", NAME_PART]),
    ],
)
def test_is_qualified_name(key, problems):
    assert is_qualified_name(key) == problems


def test_long_prefixes_are_reported():
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        ("", True),
        ("v1.2_3-x", True),
        ("-x", False),
        ("x" * 63, True),
        ("x" * 64, False),
        ("a b", False),
    ],
)
def test_is_valid_label_value(value, valid):
    assert (is_valid_label_value(value) == []) is valid


@pytest.mark.parametrize(
    ("key", "restricted"),
    [
        ("karpenter.sh/capacity-type", False),
        ("karpenter.sh/nodepool", False),  # well-known: pods may select it
        ("karpenter.sh/anything", True),
        ("sub.karpenter.sh/anything", True),
        ("notkarpenter.sh/anything", False),
        ("karpenter.k8s.aws/instance-family", False),
        ("karpenter.k8s.aws/made-up", True),
        ("kubernetes.io/hostname", True),
        ("topology.kubernetes.io/zone", False),
        ("example.com/team", False),
    ],
)
def test_restricted_labels(key, restricted):
    assert (restricted_label_error(key) is not None) is restricted


def req(
    key: str, operator: str, *values: str, min_values: int | None = None
) -> NodeSelectorRequirement:
    return NodeSelectorRequirement(key, operator, values, min_values)


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (req("kubernetes.io/arch", "In", "arm64"), []),
        (req("kubernetes.io/arch", "Exists"), []),
        (
            req("a", "Approx", "1"),
            [
                'r.operator: Unsupported value: "Approx": supported values: "In", "NotIn", "Exists", '
                '"DoesNotExist", "Gt", "Lt", "Gte", "Lte"'
            ],
        ),
        (
            req("a", "In"),
            ["r.values: Required value: key a with operator In must have a value defined"],
        ),
        (
            req("a", "In", "x", min_values=2),
            [
                'r.values: Invalid value: ["x"]: key a with operator In must have at least minimum '
                "number of values defined in 'values' field"
            ],
        ),
        (
            req("a", "Gt", "1", "2"),
            [
                'r.values: Invalid value: ["1","2"]: key a with operator Gt must have a single '
                "positive integer value"
            ],
        ),
        (
            req("a", "Lte", "-3"),
            [
                'r.values[0]: Invalid value: "-3": invalid value -3 for key a, ' + LABEL_VALUE,
                'r.values: Invalid value: ["-3"]: key a with operator Lte must have a single '
                "positive integer value",
            ],
        ),
        (req("a", "Gte", "3"), []),
        (req("a", "NotIn"), []),
        (
            req("Bad Key", "Exists"),
            [f'r.key: Invalid value: "Bad Key": key Bad Key is not a qualified name, {NAME_PART}'],
        ),
    ],
)
def test_validate_requirement(requirement, expected):
    assert rendered(validate_requirement(requirement, "r")) == expected


def test_overlays_also_need_values_for_not_in():
    errors = validate_requirement(req("a", "NotIn"), "r", values_required_for_not_in=True)
    assert rendered(errors) == [
        "r.values: Required value: key a with operator NotIn must have a value defined"
    ]


def test_taints_are_checked_for_syntax_and_duplicates():
    taints = (
        Taint("ok", "NoSchedule"),
        Taint("bad key!", "NoSchedule", value="v"),
        Taint("ok", "NoSchedule"),
        Taint("ok", "Sometimes"),
        Taint("v", "NoExecute", value="-"),
    )
    assert rendered(validate_taints([("t", taints)])) == [
        f't[1].key: Invalid value: "bad key!": {NAME_PART}',
        't[2]: Duplicate value: "ok": duplicate taint Key/Effect pair ok=NoSchedule',
        't[3].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", '
        '"PreferNoSchedule", "NoExecute"',
        f't[4].value: Invalid value: "-": {NAME_PART}',
    ]
