"""NodePool: parsing with Karpenter's defaults, printing back, and every validation rule
(OpenAPI, CEL and runtime) with the messages a cluster running Karpenter gives."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from karpy.apis import InvalidObject
from karpy.apis.core import NodeClassReference, NodeSelectorRequirement, Taint
from karpy.apis.disruption import ConsolidationPolicy, DisruptionReason
from karpy.apis.nodepool import Budget, Disruption, NodePool
from karpy.apis.nodepool_schema import BUDGET_REASONS, CONSOLIDATION_POLICIES
from tests.apis.builders import DELETE, changed, nodepool, rendered

TEMPLATE = "spec.template.spec"


def parse(obj: dict[str, Any]) -> NodePool:
    return NodePool.from_dict(obj)


def errors_of(obj: dict[str, Any]) -> list[str]:
    return rendered(parse(obj).validate())


# --- parsing and defaults -----------------------------------------------------------------


def test_minimal_nodepool_gets_karpenters_defaults():
    pool = parse(nodepool())
    assert pool.spec.disruption == Disruption(
        consolidation_policy="WhenEmptyOrUnderutilized",
        consolidate_after=timedelta(0),
        budgets=(Budget(nodes="10%"),),
    )
    assert pool.spec.template.spec.expire_after == timedelta(hours=720)
    assert pool.spec.template.spec.termination_grace_period is None
    assert pool.spec.weight is None
    assert pool.spec.replicas is None
    assert pool.spec.limits == {}
    assert pool.status.nodes == 0
    assert pool.to_dict()["spec"]["disruption"] == {
        "budgets": [{"nodes": "10%"}],
        "consolidateAfter": "0s",
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
    }


def test_partial_disruption_is_completed_and_budget_nodes_default():
    pool = parse(
        changed(
            nodepool(),
            "spec.disruption",
            {"consolidateAfter": "Never", "budgets": [{"schedule": "@daily", "duration": "1h"}]},
        )
    )
    disruption = pool.spec.disruption
    assert disruption.consolidation_policy == "WhenEmptyOrUnderutilized"
    assert disruption.consolidate_after is None
    assert disruption.budgets == (
        Budget(nodes="10%", schedule="@daily", duration=timedelta(hours=1)),
    )


def test_fields_read_as_the_scheduler_and_disruption_expect():
    obj = changed(nodepool(), "spec.limits", {"cpu": "1500m", "memory": "4Gi", "nodes": 10})
    obj = changed(obj, "spec.weight", 50)
    obj = changed(
        obj, "spec.template.metadata", {"labels": {"team": "a"}, "annotations": {"x": "y"}}
    )
    obj = changed(
        obj, f"{TEMPLATE}.taints", [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    )
    obj = changed(obj, f"{TEMPLATE}.startupTaints", [{"key": "init", "effect": "NoExecute"}])
    obj = changed(obj, f"{TEMPLATE}.expireAfter", "Never")
    obj = changed(obj, f"{TEMPLATE}.terminationGracePeriod", "1h30m")
    obj = changed(
        obj,
        "spec.disruption",
        {
            "consolidateAfter": "5m",
            "consolidationPolicy": "WhenEmpty",
            "budgets": [{"nodes": "0", "reasons": ["Drifted"]}],
        },
    )
    pool = parse(obj)
    spec = pool.spec
    assert spec.limits == {"cpu": 1500, "memory": 4 * 2**30 * 1000, "nodes": 10_000}
    assert spec.weight == 50
    assert spec.template.metadata.labels == {"team": "a"}
    assert spec.template.metadata.annotations == {"x": "y"}
    template = spec.template.spec
    assert template.requirements == (
        NodeSelectorRequirement("kubernetes.io/arch", "In", ("amd64",)),
    )
    assert template.taints == (Taint(key="gpu", value="true", effect="NoSchedule"),)
    assert template.startup_taints == (Taint(key="init", effect="NoExecute"),)
    assert template.node_class_ref == NodeClassReference(
        "karpenter.k8s.aws", "EC2NodeClass", "default"
    )
    assert template.expire_after is None
    assert template.termination_grace_period == timedelta(hours=1, minutes=30)
    assert spec.disruption.consolidation_policy == "WhenEmpty"
    assert spec.disruption.consolidate_after == timedelta(minutes=5)
    assert spec.disruption.budgets[0].reasons == ("Drifted",)
    assert spec.disruption.budgets[0].schedule is None
    assert spec.disruption.budgets[0].duration is None


def with_policy(policy: str) -> dict[str, Any]:
    disruption = {"consolidateAfter": "0s", "consolidationPolicy": policy}
    return changed(nodepool(), "spec.disruption", disruption)


@pytest.mark.parametrize("policy", list(ConsolidationPolicy))
def test_the_consolidation_policy_is_read_as_its_enum_and_printed_as_given(policy):
    pool = parse(with_policy(str(policy)))
    assert pool.spec.disruption.policy is policy
    assert pool.to_dict()["spec"]["disruption"]["consolidationPolicy"] == str(policy)


def test_a_policy_the_schema_refuses_is_kept_as_text_and_is_no_policy():
    pool = parse(with_policy("Sometimes"))
    assert pool.spec.disruption.policy is None
    assert pool.to_dict()["spec"]["disruption"]["consolidationPolicy"] == "Sometimes"


def test_a_budget_applies_to_the_reasons_it_names_or_all_when_it_names_none():
    assert all(Budget().applies_to(reason) for reason in DisruptionReason)
    drift_only = Budget(reasons=("Drifted",))
    assert [r for r in DisruptionReason if drift_only.applies_to(r)] == [DisruptionReason.DRIFTED]
    unknown = Budget(reasons=("Expired",))  # the schema refuses it; it limits nothing
    assert not any(unknown.applies_to(reason) for reason in DisruptionReason)


def test_the_crd_enums_are_the_enums_values_in_karpenters_order():
    assert CONSOLIDATION_POLICIES == ("WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced")
    # Unhealthy: node repair's reason since v1.15 (RFC kubernetes-sigs/karpenter#3192)
    assert BUDGET_REASONS == ("Underutilized", "Empty", "Drifted", "Unhealthy")
    assert all(type(value) is str for value in CONSOLIDATION_POLICIES + BUDGET_REASONS)


def test_status_is_read():
    obj = changed(
        nodepool(),
        "status",
        {
            "nodes": 3,
            "resources": {"cpu": "12", "memory": "48Gi", "nodes": "3"},
            "nodeClassObservedGeneration": 2,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "Ready",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ],
        },
    )
    status = parse(obj).status
    assert status.nodes == 3
    assert status.resources == {"cpu": 12_000, "memory": 48 * 2**30 * 1000, "nodes": 3000}
    assert status.node_class_observed_generation == 2
    ready = status.condition("Ready")
    assert ready is not None and ready.is_true
    assert status.condition("NodeClassReady") is None


def test_durations_print_back_as_written():
    obj = changed(nodepool(), f"{TEMPLATE}.expireAfter", "90m")
    obj = changed(obj, "spec.disruption", {"consolidateAfter": "1h0m0s"})
    printed = parse(obj).to_dict()
    assert printed["spec"]["template"]["spec"]["expireAfter"] == "90m"
    assert printed["spec"]["disruption"]["consolidateAfter"] == "1h0m0s"


def test_models_built_in_code_print_canonical_durations():
    pool = parse(nodepool())
    template = pool.spec.template
    built = pool.spec.template.spec.__class__(
        requirements=template.spec.requirements,
        node_class_ref=template.spec.node_class_ref,
        expire_after=timedelta(hours=2, minutes=30),
        termination_grace_period=timedelta(seconds=45),
    )
    printed = built.to_dict()
    assert printed["expireAfter"] == "2h30m0s"
    assert printed["terminationGracePeriod"] == "45s"
    no_expiry = built.__class__(
        requirements=built.requirements, node_class_ref=built.node_class_ref, expire_after=None
    )
    assert no_expiry.to_dict()["expireAfter"] == "Never"


def test_round_trip_is_exact():
    obj = changed(nodepool(), "spec.limits", {"cpu": 100, "memory": "1000Gi"})
    obj = changed(
        obj,
        "metadata",
        {"name": "a", "uid": "u-1", "resourceVersion": "7", "labels": {"x": "y"}, "generation": 3},
    )
    pool = parse(obj)
    assert parse(pool.to_dict()) == pool
    assert parse(pool.to_dict()).to_dict() == pool.to_dict()


def test_a_disruption_without_consolidate_after_means_0s():
    """Karpenter v1.15 (core#3220) defaults it instead of requiring it."""
    pool = parse(changed(nodepool(), "spec.disruption", {"consolidationPolicy": "WhenEmpty"}))
    assert pool.spec.disruption.consolidate_after == timedelta(0)


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("spec", DELETE, ["spec: Required value"]),
        ("spec.template", DELETE, ["spec.template: Required value"]),
        (f"{TEMPLATE}.nodeClassRef", DELETE, [f"{TEMPLATE}.nodeClassRef: Required value"]),
        (f"{TEMPLATE}.requirements", DELETE, [f"{TEMPLATE}.requirements: Required value"]),
        (
            f"{TEMPLATE}.requirements[0].operator",
            DELETE,
            [f"{TEMPLATE}.requirements[0].operator: Required value"],
        ),
        (
            "spec.weight",
            "10",
            [
                'spec.weight: Invalid value: "string": spec.weight in body '
                'must be of type integer: "string"'
            ],
        ),
        (
            "spec.limits",
            {"cpu": 1.5},
            [
                'spec.limits.cpu: Invalid value: "number": '
                "spec.limits.cpu in body must be of type "
                'integer,string: "number"'
            ],
        ),
        (
            "spec.limits",
            {"cpu": "lots"},
            [
                'spec.limits.cpu: Invalid value: "lots": spec.limits.cpu in body should match '
                "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'"
            ],
        ),
        (
            f"{TEMPLATE}.expireAfter",
            "soon",
            [
                f'{TEMPLATE}.expireAfter: Invalid value: "soon": {TEMPLATE}.expireAfter in body '
                "should match '^(([0-9]+(s|m|h))+|Never)$'"
            ],
        ),
        (
            f"{TEMPLATE}.terminationGracePeriod",
            "Never",
            [
                f'{TEMPLATE}.terminationGracePeriod: Invalid value: "Never": '
                f"{TEMPLATE}.terminationGracePeriod in body should match '^([0-9]+(s|m|h))+$'"
            ],
        ),
    ],
)
def test_objects_that_cannot_be_represented_raise(path, value, expected):
    with pytest.raises(InvalidObject) as caught:
        parse(changed(nodepool(), path, value))
    assert rendered(caught.value.errors) == expected


def test_wrong_kind_is_refused():
    with pytest.raises(InvalidObject) as caught:
        parse(changed(nodepool(), "kind", "NodeClaim"))
    assert rendered(caught.value.errors) == [
        'kind: Unsupported value: "NodeClaim": supported values: "NodePool"'
    ]


def test_unknown_fields_are_ignored_as_pruning_would():
    pool = parse(changed(nodepool(), "spec.surprise", {"a": 1}))
    assert "surprise" not in pool.to_dict()["spec"]
