# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "Custom Constraints".

Contexts: NodePool with Labels, Well Known Labels, Constraints Validation, Scheduling
Logic. Karpenter's file repeats the last three contexts; each repeated It is covered by
the same test here (see README.md).
"""

from __future__ import annotations

import pytest

from karpy.apis.labels import CORE_RESTRICTED_LABEL_DOMAINS, RESTRICTED_LABELS
from tests import factories as f
from tests.scheduling.parity.catalog import INTEGER
from tests.scheduling.parity.harness import ARCH, CAPACITY_TYPE, INSTANCE_TYPE, OS, ZONE, provision
from tests.scheduling.parity.pools import suite_pool

req = f.match_expression
pool_req = f.nodepool_requirement
HOSTNAME = "kubernetes.io/hostname"


def test_with_template_labels_unconstrained_pod_gets_them() -> None:
    # It: NodePool with Labels / should schedule unconstrained pods that don't have matching node selectors
    pod = f.unschedulable_pod()
    done = provision(suite_pool(labels={"test-key": "test-value"}), pod)
    assert done.node(pod).labels["test-key"] == "test-value"


def test_with_template_labels_conflicting_node_selector_is_not_scheduled() -> None:
    # It: NodePool with Labels / should not schedule pods that have conflicting node selectors
    pod = f.unschedulable_pod(node_selector={"test-key": "different-value"})
    provision(suite_pool(labels={"test-key": "test-value"}), pod).not_scheduled(pod)


def test_node_selector_with_undefined_key_is_not_scheduled() -> None:
    # It: NodePool with Labels / should not schedule pods that have node selectors with undefined key
    pod = f.unschedulable_pod(node_selector={"test-key": "test-value"})
    provision(suite_pool(), pod).not_scheduled(pod)


def test_requirement_matching_template_label_is_scheduled() -> None:
    # It: NodePool with Labels / should schedule pods that have matching requirements
    pod = f.unschedulable_pod(
        node_requirements=[req("test-key", "In", ["test-value", "another-value"])]
    )
    done = provision(suite_pool(labels={"test-key": "test-value"}), pod)
    assert done.node(pod).labels["test-key"] == "test-value"


def test_requirement_conflicting_with_template_label_is_not_scheduled() -> None:
    # It: NodePool with Labels / should not schedule pods that have conflicting requirements
    pod = f.unschedulable_pod(node_requirements=[req("test-key", "In", ["another-value"])])
    provision(suite_pool(labels={"test-key": "test-value"}), pod).not_scheduled(pod)


# --- Well Known Labels --------------------------------------------------------------------


def test_pool_zone_requirement_decides_the_zone() -> None:
    # It: Well Known Labels / should use NodePool constraints
    pool = suite_pool(requirements=[pool_req(ZONE, "In", ["test-zone-2"])])
    pod = f.unschedulable_pod()
    assert provision(pool, pod).node(pod).zone == "test-zone-2"


def test_node_selector_picks_a_zone_within_the_pool() -> None:
    # It: Well Known Labels / should use node selectors
    pool = suite_pool(requirements=[pool_req(ZONE, "In", ["test-zone-1", "test-zone-2"])])
    pod = f.unschedulable_pod(node_selector={ZONE: "test-zone-2"})
    assert provision(pool, pod).node(pod).zone == "test-zone-2"


def test_hostname_node_selector_is_not_scheduled() -> None:
    # It: Well Known Labels / should not schedule nodes with a hostname selector
    pod = f.unschedulable_pod(node_selector={HOSTNAME: "red-node"})
    provision(suite_pool(), pod).not_scheduled(pod)


def test_unknown_zone_node_selector_is_not_scheduled() -> None:
    # It: Well Known Labels / should not schedule the pod if nodeselector unknown
    pool = suite_pool(requirements=[pool_req(ZONE, "In", ["test-zone-1"])])
    pod = f.unschedulable_pod(node_selector={ZONE: "unknown"})
    provision(pool, pod).not_scheduled(pod)


def test_node_selector_outside_pool_zones_is_not_scheduled() -> None:
    # It: Well Known Labels / should not schedule if node selector outside of NodePool constraints
    pool = suite_pool(requirements=[pool_req(ZONE, "In", ["test-zone-1"])])
    pod = f.unschedulable_pod(node_selector={ZONE: "test-zone-2"})
    provision(pool, pod).not_scheduled(pod)


def test_zone_requirement_in_is_honoured() -> None:
    # It: Well Known Labels / should schedule compatible requirements with Operator=In
    pod = f.unschedulable_pod(node_requirements=[req(ZONE, "In", ["test-zone-3"])])
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-3"


@pytest.mark.parametrize(
    ("operator", "value", "expected"),
    [("Gt", "8", "16"), ("Lt", "8", "2"), ("Gte", "16", "16"), ("Lte", "2", "2")],
    ids=["Gt", "Lt", "Gte", "Lte"],
)
def test_numeric_pool_requirement_selects_the_cheapest_matching_type(
    operator: str, value: str, expected: str
) -> None:
    # It: Well Known Labels / should schedule compatible requirements with Operator=Gt|Lt|Gte|Lte
    pool = suite_pool(requirements=[pool_req(INTEGER, operator, [value])])
    pod = f.unschedulable_pod()
    assert provision(pool, pod).node(pod).labels[INTEGER] == expected


def test_zone_requirement_in_unknown_is_not_scheduled() -> None:
    # It: Well Known Labels / should not schedule incompatible preferences and requirements with Operator=In
    pod = f.unschedulable_pod(node_requirements=[req(ZONE, "In", ["unknown"])])
    provision(suite_pool(), pod).not_scheduled(pod)


def test_zone_requirement_not_in_leaves_the_remaining_zone() -> None:
    # It: Well Known Labels / should schedule compatible requirements with Operator=NotIn
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "NotIn", ["test-zone-1", "test-zone-2", "unknown"])]
    )
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-3"


def test_zone_requirement_not_in_every_zone_is_not_scheduled() -> None:
    # It: Well Known Labels / should not schedule incompatible preferences and requirements with Operator=NotIn
    zones = ["test-zone-1", "test-zone-2", "test-zone-3", "unknown"]
    pod = f.unschedulable_pod(node_requirements=[req(ZONE, "NotIn", zones)])
    provision(suite_pool(), pod).not_scheduled(pod)


ALL_ZONES_AND_UNKNOWN = ["test-zone-1", "test-zone-2", "test-zone-3", "unknown"]


def test_compatible_zone_preference_in_is_followed() -> None:
    # It: Well Known Labels / should schedule compatible preferences and requirements with Operator=In
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "In", ALL_ZONES_AND_UNKNOWN)],
        node_preferences=[req(ZONE, "In", ["test-zone-2", "unknown"])],
    )
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-2"


def test_incompatible_zone_preference_in_is_relaxed() -> None:
    # It: Well Known Labels / should schedule incompatible preferences and requirements with Operator=In
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "In", ALL_ZONES_AND_UNKNOWN)],
        node_preferences=[req(ZONE, "In", ["unknown"])],
    )
    provision(suite_pool(), pod).node(pod)


def test_compatible_zone_preference_not_in_is_followed() -> None:
    # It: Well Known Labels / should schedule compatible preferences and requirements with Operator=NotIn
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "In", ALL_ZONES_AND_UNKNOWN)],
        node_preferences=[req(ZONE, "NotIn", ["test-zone-1", "test-zone-3"])],
    )
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-2"


def test_incompatible_zone_preference_not_in_is_relaxed() -> None:
    # It: Well Known Labels / should schedule incompatible preferences and requirements with Operator=NotIn
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "In", ALL_ZONES_AND_UNKNOWN)],
        node_preferences=[req(ZONE, "NotIn", ["test-zone-1", "test-zone-2", "test-zone-3"])],
    )
    provision(suite_pool(), pod).node(pod)


def test_node_selector_requirements_and_preferences_combine() -> None:
    # It: Well Known Labels / should schedule compatible node selectors, preferences and requirements
    zones = ["test-zone-1", "test-zone-2", "test-zone-3"]
    pod = f.unschedulable_pod(
        node_selector={ZONE: "test-zone-3"},
        node_requirements=[req(ZONE, "In", zones)],
        node_preferences=[req(ZONE, "In", zones)],
    )
    assert provision(suite_pool(), pod).node(pod).zone == "test-zone-3"


def test_multidimensional_selectors_requirements_and_preferences_combine() -> None:
    # It: Well Known Labels / should combine multidimensional node selectors, preferences and requirements
    pod = f.unschedulable_pod(
        node_selector={ZONE: "test-zone-3", INSTANCE_TYPE: "arm-instance-type"},
        node_requirements=[
            req(ZONE, "In", ["test-zone-1", "test-zone-3"]),
            req(INSTANCE_TYPE, "In", ["default-instance-type", "arm-instance-type"]),
        ],
        node_preferences=[
            req(ZONE, "NotIn", ["unknown"]),
            req(INSTANCE_TYPE, "NotIn", ["unknown"]),
        ],
    )
    node = provision(suite_pool(), pod).node(pod)
    assert node.zone == "test-zone-3"
    assert node.instance_type == "arm-instance-type"


# --- Constraints Validation ---------------------------------------------------------------


def test_requirements_on_restricted_labels_are_not_scheduled() -> None:
    # It: Constraints Validation / should not schedule pods that have node selectors with restricted labels
    pods = [
        f.unschedulable_pod(node_requirements=[req(label, "In", ["test"])])
        for label in sorted(RESTRICTED_LABELS)
    ]
    done = provision(suite_pool(), pods)
    for pod in pods:
        done.not_scheduled(pod)


def test_requirements_on_restricted_domains_are_not_scheduled() -> None:
    # It: Constraints Validation / should not schedule pods that have node selectors with restricted domains
    pods = [
        f.unschedulable_pod(node_requirements=[req(f"{domain}/test", "In", ["test"])])
        for domain in sorted(CORE_RESTRICTED_LABEL_DOMAINS)
    ]
    done = provision(suite_pool(), pods)
    for pod in pods:
        done.not_scheduled(pod)


@pytest.mark.parametrize("prefix", ["", "subdomain."], ids=["domain", "subdomain"])
def test_pool_requirements_in_kubernetes_domains_become_node_labels(prefix: str) -> None:
    # It: Constraints Validation / should schedule pods that have node selectors with label in (subdomain from) kubernetes domains
    domains = ["kubernetes.io", "k8s.io"]
    pool = suite_pool(
        requirements=[pool_req(f"{prefix}{d}/test", "In", ["test-value"]) for d in domains]
    )
    pods = f.unschedulable_pods(len(domains))
    done = provision(pool, pods)
    for pod in pods:
        for domain in domains:
            assert done.node(pod).labels[f"{prefix}{domain}/test"] == "test-value"


def test_node_selectors_on_well_known_labels_are_scheduled() -> None:
    # It: Constraints Validation / should schedule pods that have node selectors with label in wellknown label list
    pods = [
        f.unschedulable_pod(node_selector={ZONE: "test-zone-1"}),
        f.unschedulable_pod(node_selector={INSTANCE_TYPE: "default-instance-type"}),
        f.unschedulable_pod(node_selector={ARCH: "arm64"}),
        f.unschedulable_pod(node_selector={OS: "linux"}),
        f.unschedulable_pod(node_selector={CAPACITY_TYPE: "spot"}),
    ]
    done = provision(suite_pool(), pods)
    for pod in pods:
        done.node(pod)


# --- Scheduling Logic ---------------------------------------------------------------------


def test_pool_that_is_not_ready_schedules_nothing() -> None:
    # It: Scheduling Logic / should not schedule pods with nodePool which is not ready
    pod = f.unschedulable_pod()
    provision(suite_pool(ready=False), pod).not_scheduled(pod)


@pytest.mark.parametrize(
    ("operator", "values", "expect"),
    [
        ("In", ["test-value"], "unschedulable"),
        ("NotIn", ["test-value"], "no test-value label"),
        ("Exists", [], "unschedulable"),
        ("DoesNotExist", [], "no test-key label"),
    ],
    ids=["In", "NotIn", "Exists", "DoesNotExist"],
)
def test_requirement_on_undefined_key(operator: str, values: list[str], expect: str) -> None:
    # It: Scheduling Logic / should (not) schedule pods that have node selectors with In|NotIn|Exists|DoesNotExists operator and undefined key
    pod = f.unschedulable_pod(node_requirements=[req("test-key", operator, values)])
    done = provision(suite_pool(), pod)
    if expect == "unschedulable":
        done.not_scheduled(pod)
    elif expect == "no test-value label":
        assert done.node(pod).labels.get("test-key") != "test-value"
    else:
        assert "test-key" not in done.node(pod).labels


TEST_KEY_POOL = [pool_req("test-key", "In", ["test-value"])]


def test_unconstrained_pod_gets_single_valued_pool_requirement_as_label() -> None:
    # It: Scheduling Logic / should schedule unconstrained pods that don't have matching node selectors
    pod = f.unschedulable_pod()
    done = provision(suite_pool(requirements=TEST_KEY_POOL), pod)
    assert done.node(pod).labels["test-key"] == "test-value"


@pytest.mark.parametrize(
    ("operator", "values", "expect"),
    [
        ("In", ["test-value"], "label"),
        ("NotIn", ["test-value"], "unschedulable"),
        ("Exists", [], "scheduled"),
        ("DoesNotExist", [], "unschedulable"),
        ("In", ["another-value"], "unschedulable"),
        ("NotIn", ["another-value"], "label"),
    ],
    ids=["In-match", "NotIn-match", "Exists", "DoesNotExist", "In-different", "NotIn-different"],
)
def test_requirement_on_key_defined_by_pool(operator: str, values: list[str], expect: str) -> None:
    # It: Scheduling Logic / should (not) schedule ... with matching|different value and In|NotIn operator, Exists/DoesNotExists operator and defined key
    pod = f.unschedulable_pod(node_requirements=[req("test-key", operator, values)])
    done = provision(suite_pool(requirements=TEST_KEY_POOL), pod)
    if expect == "unschedulable":
        done.not_scheduled(pod)
    elif expect == "label":
        assert done.node(pod).labels["test-key"] == "test-value"
    else:
        done.node(pod)


TWO_VALUE_POOL = [pool_req("test-key", "In", ["test-value", "another-value"])]


def test_compatible_pods_share_a_node() -> None:
    # It: Scheduling Logic / should schedule compatible pods to the same node
    pods = [
        f.unschedulable_pod(node_requirements=[req("test-key", "In", ["test-value"])]),
        f.unschedulable_pod(node_requirements=[req("test-key", "NotIn", ["another-value"])]),
    ]
    done = provision(suite_pool(requirements=TWO_VALUE_POOL), pods)
    first, second = (done.node(p) for p in pods)
    assert first.labels["test-key"] == second.labels["test-key"] == "test-value"
    assert first.name == second.name


def test_incompatible_pods_get_different_nodes() -> None:
    # It: Scheduling Logic / should schedule incompatible pods to the different node
    pods = [
        f.unschedulable_pod(node_requirements=[req("test-key", "In", ["test-value"])]),
        f.unschedulable_pod(node_requirements=[req("test-key", "In", ["another-value"])]),
    ]
    done = provision(suite_pool(requirements=TWO_VALUE_POOL), pods)
    first, second = (done.node(p) for p in pods)
    assert first.labels["test-key"] == "test-value"
    assert second.labels["test-key"] == "another-value"
    assert first.name != second.name


def test_exists_does_not_widen_an_impossible_in() -> None:
    # It: Scheduling Logic / Exists operator should not overwrite the existing value
    pod = f.unschedulable_pod(
        node_requirements=[req(ZONE, "In", ["non-existent-zone"]), req(ZONE, "Exists")]
    )
    provision(suite_pool(), pod).not_scheduled(pod)
