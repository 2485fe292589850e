"""NodePool validation: every OpenAPI, CEL and runtime rule, with the messages a
cluster running Karpenter gives (table rows change one field of a valid pool)."""

# ruff: noqa: E501 - expected messages are quoted whole, as kube-apiserver prints them

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.nodepool import NodePool, cron_schedule_error
from tests.apis.builders import NOT_CHECKED, changed, nodepool, rendered, requirement

TEMPLATE = "spec.template.spec"


def parse(obj: dict[str, Any]) -> NodePool:
    return NodePool.from_dict(obj)


def errors_of(obj: dict[str, Any]) -> list[str]:
    return rendered(parse(obj).validate())


# --- validation ---------------------------------------------------------------------------

HOSTNAME_KEY_MSG = 'label "kubernetes.io/hostname" is restricted'


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        # OpenAPI bounds and enums
        (
            "spec.weight",
            0,
            [
                "spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1"
            ],
        ),
        (
            "spec.weight",
            500,
            [
                "spec.weight: Invalid value: 500: spec.weight in body should be less than or equal to 100"
            ],
        ),
        (
            "spec.replicas",
            -1,
            [
                "spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"
            ],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "0s", "consolidationPolicy": "Sometimes"},
            [
                'spec.disruption.consolidationPolicy: Unsupported value: "Sometimes": supported values: '
                '"WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"',
                '<nil>: Invalid value: "null": some validation rules were not checked because the '
                "object was invalid; correct the existing errors to complete validation",
            ],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "1.5h"},
            [
                'spec.disruption.consolidateAfter: Invalid value: "1.5h": spec.disruption.consolidateAfter '
                "in body should match '^(([0-9]+(s|m|h))+|Never)$'"
            ],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "0s", "budgets": [{"nodes": "101%"}]},
            [
                'spec.disruption.budgets[0].nodes: Invalid value: "101%": spec.disruption.budgets[0].nodes '
                "in body should match '^((100|[0-9]{1,2})%|[0-9]+)$'"
            ],
        ),
        (
            "spec.disruption",
            {
                "consolidateAfter": "0s",
                "budgets": [{"nodes": "1", "schedule": "@daily", "duration": "30s"}],
            },
            [
                'spec.disruption.budgets[0].duration: Invalid value: "30s": spec.disruption.budgets[0].duration '
                "in body should match '^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$'"
            ],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Expired"]}]},
            [
                'spec.disruption.budgets[0].reasons[0]: Unsupported value: "Expired": supported values: '
                '"Underutilized", "Empty", "Drifted", "Unhealthy"',
                '<nil>: Invalid value: "null": some validation rules were not checked because the '
                "object was invalid; correct the existing errors to complete validation",
            ],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "reasons": ["Empty", "Empty"]}]},
            ['spec.disruption.budgets[0].reasons[1]: Duplicate value: "Empty"'],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "0s", "budgets": [{"nodes": "1"}] * 51},
            ["spec.disruption.budgets: Too many: 51: must have at most 50 items", NOT_CHECKED],
        ),
        (
            f"{TEMPLATE}.requirements",
            [requirement("kubernetes.io/arch", "In", "amd64")] * 101,
            [f"{TEMPLATE}.requirements: Too many: 101: must have at most 100 items", NOT_CHECKED],
        ),
        (
            f"{TEMPLATE}.requirements[0].minValues",
            51,
            [
                f"{TEMPLATE}.requirements[0].minValues: Invalid value: 51: {TEMPLATE}.requirements[0].minValues "
                "in body should be less than or equal to 50",
                f"{TEMPLATE}.requirements: Invalid value: requirements with 'minValues' must have at "
                "least that many values specified in the 'values' field",
            ],
        ),
        (
            f"{TEMPLATE}.requirements[0].operator",
            "Near",
            [
                f'{TEMPLATE}.requirements[0].operator: Unsupported value: "Near": supported values: '
                '"Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
                '<nil>: Invalid value: "null": some validation rules were not checked because the '
                "object was invalid; correct the existing errors to complete validation",
            ],
        ),
        (
            f"{TEMPLATE}.requirements[0].key",
            "-bad-",
            [
                f'{TEMPLATE}.requirements[0].key: Invalid value: "-bad-": {TEMPLATE}.requirements[0].key in body '
                "should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?"
                "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$'"
            ],
        ),
        (
            f"{TEMPLATE}.taints",
            [{"key": "a", "effect": "Sometimes"}],
            [
                f'{TEMPLATE}.taints[0].effect: Unsupported value: "Sometimes": supported values: '
                '"NoSchedule", "PreferNoSchedule", "NoExecute"',
                '<nil>: Invalid value: "null": some validation rules were not checked because the '
                "object was invalid; correct the existing errors to complete validation",
            ],
        ),
        (
            f"{TEMPLATE}.taints",
            [{"key": "a", "value": "not valid!", "effect": "NoSchedule"}],
            [
                f'{TEMPLATE}.taints[0].value: Invalid value: "not valid!": {TEMPLATE}.taints[0].value in body '
                "should match '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\\/))?"
                "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$'"
            ],
        ),
        (
            "spec.template.metadata.labels",
            {"team": "x" * 64},
            [
                "spec.template.metadata.labels.team: Too long: may not be more than 63 bytes",
                NOT_CHECKED,
            ],
        ),
        (
            "spec.template.metadata.labels",
            {f"k{i}": "v" for i in range(101)},
            [
                "spec.template.metadata.labels: Too many: 101: must have at most 100 items",
                NOT_CHECKED,
            ],
        ),
        # CEL rules
        (
            f"{TEMPLATE}.requirements[0].key",
            "karpenter.sh/nodepool",
            [
                f'{TEMPLATE}.requirements[0].key: Invalid value: "karpenter.sh/nodepool": '
                'label "karpenter.sh/nodepool" is restricted'
            ],
        ),
        (
            f"{TEMPLATE}.requirements[0].key",
            "karpenter.sh/custom",
            [
                f'{TEMPLATE}.requirements[0].key: Invalid value: "karpenter.sh/custom": '
                'label domain "karpenter.sh" is restricted'
            ],
        ),
        (
            f"{TEMPLATE}.requirements[0].key",
            "sub.karpenter.sh/custom",
            [
                f'{TEMPLATE}.requirements[0].key: Invalid value: "sub.karpenter.sh/custom": '
                'label domain "karpenter.sh" is restricted'
            ],
        ),
        (
            f"{TEMPLATE}.requirements[0].key",
            "kubernetes.io/hostname",
            [
                f'{TEMPLATE}.requirements[0].key: Invalid value: "kubernetes.io/hostname": {HOSTNAME_KEY_MSG}'
            ],
        ),
        (
            f"{TEMPLATE}.requirements[0].key",
            "karpenter.k8s.aws/secret-sauce",
            [
                f'{TEMPLATE}.requirements[0].key: Invalid value: "karpenter.k8s.aws/secret-sauce": '
                'label domain "karpenter.k8s.aws" is restricted'
            ],
        ),
        (
            f"{TEMPLATE}.requirements",
            [requirement("kubernetes.io/arch", "In")],
            [
                f'{TEMPLATE}.requirements: Invalid value: "array": no such key: values evaluating rule: '
                "requirements with operator 'In' must have a value defined"
            ],
        ),
        (
            f"{TEMPLATE}.requirements",
            [requirement("karpenter.k8s.aws/instance-cpu", "Gt", "-1")],
            [
                f"{TEMPLATE}.requirements: Invalid value: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' "
                "must have a single positive integer value"
            ],
        ),
        (
            f"{TEMPLATE}.requirements",
            [requirement("karpenter.k8s.aws/instance-cpu", "Lte", "1", "2")],
            [
                f"{TEMPLATE}.requirements: Invalid value: requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' "
                "must have a single positive integer value"
            ],
        ),
        (
            f"{TEMPLATE}.requirements",
            [requirement("kubernetes.io/arch", "In", "amd64", minValues=2)],
            [
                f"{TEMPLATE}.requirements: Invalid value: requirements with 'minValues' must have at least "
                "that many values specified in the 'values' field"
            ],
        ),
        (
            "spec.template.metadata.labels",
            {"karpenter.sh/nodepool": "x"},
            [
                'spec.template.metadata.labels: Invalid value: label "karpenter.sh/nodepool" is restricted'
            ],
        ),
        (
            "spec.template.metadata.labels",
            {"karpenter.sh/team": "x"},
            [
                'spec.template.metadata.labels: Invalid value: label domain "karpenter.sh" is restricted'
            ],
        ),
        (
            "spec.template.metadata.labels",
            {"kubernetes.io/hostname": "x"},
            [
                'spec.template.metadata.labels: Invalid value: label "kubernetes.io/hostname" is restricted'
            ],
        ),
        (
            "spec.template.metadata.labels",
            {"karpenter.k8s.aws/team": "x"},
            [
                'spec.template.metadata.labels: Invalid value: label domain "karpenter.k8s.aws" is restricted'
            ],
        ),
        (
            f"{TEMPLATE}.nodeClassRef.name",
            "",
            [f'{TEMPLATE}.nodeClassRef.name: Invalid value: "": name may not be empty'],
        ),
        (
            f"{TEMPLATE}.nodeClassRef.group",
            "a/b",
            [
                f'{TEMPLATE}.nodeClassRef.group: Invalid value: "a/b": {TEMPLATE}.nodeClassRef.group in body '
                "should match '^[^/]*$'"
            ],
        ),
        (
            "spec.disruption",
            {"consolidateAfter": "0s", "budgets": [{"nodes": "1", "schedule": "@daily"}]},
            ["spec.disruption.budgets: Invalid value: 'schedule' must be set with 'duration'"],
        ),
        ("spec.replicas", 2, []),
    ],
)
def test_schema_rules(path, value, expected):
    assert errors_of(changed(nodepool(), path, value)) == expected


def test_static_pools_allow_only_a_node_limit_and_no_weight():
    static = changed(nodepool(), "spec.replicas", 3)
    assert errors_of(changed(static, "spec.limits", {"nodes": 5})) == []
    assert errors_of(changed(static, "spec.limits", {"cpu": 5})) == [
        "spec: Invalid value: only 'limits.nodes' is supported on static NodePools"
    ]
    assert errors_of(changed(static, "spec.weight", 5)) == [
        "spec: Invalid value: 'weight' is not supported on static NodePools"
    ]
    assert parse(static).is_static and not parse(nodepool()).is_static


def test_update_rules_guard_node_class_kind_and_static_mode():
    old = parse(nodepool())
    renamed = parse(changed(nodepool(), f"{TEMPLATE}.nodeClassRef.name", "other"))
    assert renamed.validate(old) == []
    regrouped = parse(changed(nodepool(), f"{TEMPLATE}.nodeClassRef.group", "example.com"))
    assert rendered(regrouped.validate(old)) == [
        f"{TEMPLATE}.nodeClassRef: Invalid value: nodeClassRef.group is immutable"
    ]
    rekinded = parse(changed(nodepool(), f"{TEMPLATE}.nodeClassRef.kind", "Other"))
    assert rendered(rekinded.validate(old)) == [
        f"{TEMPLATE}.nodeClassRef: Invalid value: nodeClassRef.kind is immutable"
    ]
    static = parse(changed(nodepool(), "spec.replicas", 1))
    assert rendered(static.validate(old)) == [
        "spec: Invalid value: Cannot transition NodePool between static (replicas set) and "
        "dynamic (replicas unset) provisioning modes"
    ]
    assert rendered(old.validate(static)) == rendered(static.validate(old))


# --- runtime validation (Karpenter's controllers) ------------------------------------------


def runtime_errors(obj: dict[str, Any]) -> list[str]:
    return rendered(parse(obj).validate_runtime())


def test_capacity_type_requirement_needs_a_known_value():
    obj = changed(
        nodepool(),
        f"{TEMPLATE}.requirements",
        [requirement("karpenter.sh/capacity-type", "In", "cheap", "spot")],
    )
    assert runtime_errors(obj) == []
    obj = changed(
        nodepool(),
        f"{TEMPLATE}.requirements",
        [requirement("karpenter.sh/capacity-type", "In", "cheap")],
    )
    assert runtime_errors(obj) == [
        f'{TEMPLATE}.requirements[0].values: Invalid value: ["cheap"]: no valid values found in '
        "[cheap] for karpenter.sh/capacity-type, expected one of: [on-demand reserved spot], "
        "got: [cheap]"
    ]
    assert errors_of(obj) == runtime_errors(obj)


def test_min_values_counts_only_known_values():
    obj = changed(
        nodepool(),
        f"{TEMPLATE}.requirements",
        [requirement("karpenter.k8s.aws/instance-tenancy", "In", "default", "shared", minValues=2)],
    )
    assert runtime_errors(obj) == [
        f'{TEMPLATE}.requirements[0].values: Invalid value: ["default","shared"]: not enough valid '
        "values found in [default shared] for karpenter.k8s.aws/instance-tenancy, expected at "
        "least 2 valid values from: [dedicated default], got: 1"
    ]


def test_requirement_values_must_be_label_values():
    obj = changed(
        nodepool(), f"{TEMPLATE}.requirements", [requirement("example.com/team", "In", "a b")]
    )
    assert runtime_errors(obj) == [
        f'{TEMPLATE}.requirements[0].values[0]: Invalid value: "a b": invalid value a b for key '
        "example.com/team, a valid label must be an empty string or consist of alphanumeric "
        "characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ]


def test_aliased_keys_are_checked_under_their_current_name():
    obj = changed(
        nodepool(),
        f"{TEMPLATE}.requirements",
        [requirement("failure-domain.beta.kubernetes.io/zone", "In", "us-west-2a")],
    )
    assert runtime_errors(obj) == []


def test_nodepool_key_in_requirements_is_restricted_at_runtime_too():
    obj = changed(
        nodepool(), f"{TEMPLATE}.requirements", [requirement("karpenter.sh/nodepool", "In", "x")]
    )
    assert runtime_errors(obj) == [
        f'{TEMPLATE}.requirements[0].key: Invalid value: "karpenter.sh/nodepool": invalid key: '
        '"karpenter.sh/nodepool" in requirements, restricted'
    ]
    # Reported once: the CEL rule already caught it.
    assert errors_of(obj) == [
        f'{TEMPLATE}.requirements[0].key: Invalid value: "karpenter.sh/nodepool": '
        'label "karpenter.sh/nodepool" is restricted'
    ]


def test_restricted_template_labels_explain_the_allowed_labels():
    obj = changed(nodepool(), "spec.template.metadata.labels", {"karpenter.k8s.aws/foo": "x"})
    [message] = runtime_errors(obj)
    assert message.startswith(
        'spec.template.metadata.labels: Invalid value: "karpenter.k8s.aws/foo": using label '
        "karpenter.k8s.aws/foo is not allowed as it might interfere with the internal "
        "provisioning logic; specify a well known label: [karpenter.k8s.aws/capacity-reservation-id "
    )
    assert message.endswith(
        "or a custom label that does not use a restricted domain: [karpenter.k8s.aws karpenter.sh]"
    )


def test_template_label_keys_and_values_are_checked():
    obj = changed(nodepool(), "spec.template.metadata.labels", {"a/b/c": "ok", "team": "-x"})
    errors = runtime_errors(obj)
    assert errors[0] == (
        'spec.template.metadata.labels: Invalid value: "a/b/c": a qualified name must consist '
        "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
        "subdomain prefix and '/' (e.g. 'example.com/MyName')"
    )
    assert errors[1].startswith(
        'spec.template.metadata.labels: Invalid value: "-x": a valid label must be an empty string'
    )


def test_taints_may_not_repeat_a_key_and_effect_across_taints_and_startup_taints():
    obj = changed(nodepool(), f"{TEMPLATE}.taints", [{"key": "a", "effect": "NoSchedule"}])
    obj = changed(
        obj,
        f"{TEMPLATE}.startupTaints",
        [{"key": "a", "effect": "NoExecute"}, {"key": "a", "effect": "NoSchedule"}],
    )
    assert errors_of(obj) == [
        f'{TEMPLATE}.startupTaints[1]: Duplicate value: "a": duplicate taint Key/Effect pair '
        "a=NoSchedule"
    ]


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("@daily", None),
        ("@midnight", None),
        ("0 9 * * mon-fri", None),
        ("*/15 0-6 1,15 * *", None),
        ("0 0 * * * *", "invalid cron schedule: expected exactly 5 fields, found 6"),
        ("0 0 L * *", "invalid cron schedule: L, W and # are not supported"),
        ("61 * * * *", "invalid cron schedule: '61 * * * *' does not parse"),
        ("a b c d e", "invalid cron schedule: 'a b c d e' does not parse"),
        ("0 0 * * 0-6/2", None),
        ("0 0 * * 7", "invalid cron schedule: day of week 7 is above the maximum (6)"),
        ("0 0 * * 1,5-7", "invalid cron schedule: day of week 7 is above the maximum (6)"),
    ],
)
def test_budget_schedules_must_be_standard_cron(schedule, problem):
    assert cron_schedule_error(schedule) == problem


def test_invalid_budget_schedule_is_a_runtime_error():
    obj = changed(
        nodepool(),
        "spec.disruption",
        {
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "0", "schedule": "61 * * * *", "duration": "1h"}],
        },
    )
    assert errors_of(obj) == [
        'spec.disruption.budgets[0].schedule: Invalid value: "61 * * * *": invalid cron '
        "schedule: '61 * * * *' does not parse"
    ]
