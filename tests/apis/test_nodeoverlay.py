"""NodeOverlay: parsing, precedence, and its CRD and runtime rules (price XOR
priceAdjustment, no capacity for resources the provider computes)."""

# ruff: noqa: E501 - expected messages are quoted whole, as kube-apiserver prints them

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.core import NodeSelectorRequirement
from karpy.apis.nodeoverlay import NodeOverlay, order_by_precedence
from tests.apis.builders import changed, nodeoverlay, rendered, requirement


def parse(obj: dict[str, Any]) -> NodeOverlay:
    return NodeOverlay.from_dict(obj)


def errors_of(obj: dict[str, Any]) -> list[str]:
    return rendered(parse(obj).validate())


def test_fields_are_read():
    obj = changed(nodeoverlay(), "spec.capacity", {"example.com/dongle": 2, "hugepages-2Mi": "1Gi"})
    obj = changed(obj, "spec.priceAdjustment", "-10%")
    obj = changed(obj, "spec.weight", 5)
    overlay = parse(obj)
    assert overlay.spec.requirements == (
        NodeSelectorRequirement("kubernetes.io/arch", "In", ("arm64",)),
    )
    assert overlay.spec.capacity == {"example.com/dongle": 2000, "hugepages-2Mi": 2**30 * 1000}
    assert overlay.spec.price is None
    assert overlay.spec.price_adjustment == "-10%"
    assert overlay.spec.weight == 5
    assert parse(overlay.to_dict()) == overlay


def test_min_values_is_not_part_of_an_overlay_requirement():
    obj = changed(
        nodeoverlay(),
        "spec.requirements",
        [requirement("kubernetes.io/arch", "In", "arm64", minValues=1)],
    )
    overlay = parse(obj)
    assert overlay.spec.requirements[0].min_values is None
    assert "minValues" not in overlay.to_dict()["spec"]["requirements"][0]


def test_precedence_is_weight_then_name_descending():
    def named(name: str, weight: int | None) -> NodeOverlay:
        obj = changed(nodeoverlay(name), "spec.weight", weight) if weight else nodeoverlay(name)
        return parse(obj)

    overlays = [named("a", None), named("b", 10), named("c", 10), named("d", 1)]
    assert [o.name for o in order_by_precedence(overlays)] == ["c", "b", "d", "a"]


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec.price", "0.25", []),
        (
            "spec.price",
            "$1",
            [
                "spec.price: Invalid value: \"$1\": spec.price in body should match '^\\d+(\\.\\d+)?$'"
            ],
        ),
        ("spec.priceAdjustment", "+0.1", []),
        ("spec.priceAdjustment", "-100%", []),
        ("spec.priceAdjustment", "-99.5%", []),
        (
            "spec.priceAdjustment",
            "-150%",
            [
                'spec.priceAdjustment: Invalid value: "-150%": spec.priceAdjustment in body should match '
                "'^(([+-]{1}(\\d*\\.?\\d+))|(\\+{1}\\d*\\.?\\d+%)|(^(-\\d{1,2}(\\.\\d+)?%)$)|(-100%))$'"
            ],
        ),
        (
            "spec.priceAdjustment",
            "10%",
            [
                'spec.priceAdjustment: Invalid value: "10%": spec.priceAdjustment in body should match '
                "'^(([+-]{1}(\\d*\\.?\\d+))|(\\+{1}\\d*\\.?\\d+%)|(^(-\\d{1,2}(\\.\\d+)?%)$)|(-100%))$'"
            ],
        ),
        (
            "spec.weight",
            10001,
            [
                "spec.weight: Invalid value: 10001: spec.weight in body should be less than or equal to 10000"
            ],
        ),
        (
            "spec.capacity",
            {"memory": "1Gi"},
            ["spec.capacity: Invalid value: invalid resource restricted"],
        ),
        # Absent values make the CEL rule fail to evaluate, which kube reports as such.
        (
            "spec.requirements",
            [requirement("a", "NotIn")],
            [
                'spec.requirements: Invalid value: "array": no such key: values evaluating rule: '
                "requirements with operator 'NotIn' must have a value defined"
            ],
        ),
        (
            "spec.requirements",
            [requirement("a", "Gte", "x")],
            [
                "spec.requirements: Invalid value: requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value"
            ],
        ),
        ("spec.requirements", [requirement("karpenter.sh/nodepool", "In", "x")], []),
        ("spec.requirements", [requirement("karpenter.k8s.aws/instance-family", "In", "m5")], []),
        (
            "spec.requirements",
            [requirement("karpenter.k8s.aws/instance-tenancy", "In", "default")],
            [
                'spec.requirements[0].key: Invalid value: "karpenter.k8s.aws/instance-tenancy": label domain "karpenter.k8s.aws" is restricted'
            ],
        ),
    ],
)
def test_schema_rules(path, value, expected):
    assert errors_of(changed(nodeoverlay(), path, value)) == expected


def test_price_and_price_adjustment_are_exclusive():
    obj = changed(changed(nodeoverlay(), "spec.price", "1"), "spec.priceAdjustment", "+1")
    assert errors_of(obj) == ["spec: Invalid value: cannot set both 'price' and 'priceAdjustment'"]


def test_runtime_refuses_capacity_the_aws_provider_computes():
    obj = changed(
        nodeoverlay(), "spec.capacity", {"vpc.amazonaws.com/pod-eni": 4, "example.com/x": 1}
    )
    assert errors_of(obj) == [
        'spec.capacity: Invalid value: "vpc.amazonaws.com/pod-eni": invalid capacity: '
        "vpc.amazonaws.com/pod-eni in resource, restricted"
    ]


def test_runtime_checks_requirements_like_nodepools_plus_not_in_values():
    overlay = parse(changed(nodeoverlay(), "spec.requirements", [requirement("a", "NotIn")]))
    assert rendered(overlay.validate_runtime()) == [
        "spec.requirements[0].values: Required value: key a with operator NotIn must have a value defined"
    ]
