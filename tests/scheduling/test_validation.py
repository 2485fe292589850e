"""Pods Karpenter sets aside before scheduling."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.labels import (
    AWS_RESTRICTED_LABEL_DOMAINS,
    AWS_WELL_KNOWN_LABELS,
    CORE_RESTRICTED_LABEL_DOMAINS,
    CORE_WELL_KNOWN_LABELS,
)
from karpy.scheduling.pods import pod_from_dict
from karpy.scheduling.validation import AVOIDS_KARPENTER, pod_problem
from tests import factories as f

# The labels and restricted domains of Karpenter with the AWS provider.
WELL_KNOWN = CORE_WELL_KNOWN_LABELS | AWS_WELL_KNOWN_LABELS
RESTRICTED = CORE_RESTRICTED_LABEL_DOMAINS | AWS_RESTRICTED_LABEL_DOMAINS


def problem(**options: Any) -> str | None:
    return pod_problem(pod_from_dict(f.pod(**options)), WELL_KNOWN, RESTRICTED)


@pytest.mark.parametrize(
    "selector",
    [
        {"kubernetes.io/hostname": "n1"},
        {"karpenter.sh/custom": "x"},
        {"sub.karpenter.sh/custom": "x"},
        {"karpenter.k8s.aws/not-a-label": "x"},
        {"karpenter.sh/capacity-type": "cheap"},
        {"bad key!": "x"},
        {"ok": "bad value!"},
    ],
)
def test_unusable_node_selectors(selector: dict[str, str]) -> None:
    assert problem(node_selector=selector) is not None


@pytest.mark.parametrize(
    "selector",
    [
        {"karpenter.sh/capacity-type": "spot"},
        {"karpenter.k8s.aws/instance-family": "m5"},
        {"kubernetes.io/test": "x"},
        {"subdomain.k8s.io/test": "x"},
        {"failure-domain.beta.kubernetes.io/zone": "a"},
    ],
)
def test_usable_node_selectors(selector: dict[str, str]) -> None:
    assert problem(node_selector=selector) is None


@pytest.mark.parametrize(
    "expression",
    [
        f.match_expression("zone", "Near", ["a"]),
        f.match_expression("zone", "In", []),
        f.match_expression("cpus", "Gt", ["many"]),
        f.match_expression("cpus", "Lt", ["1", "2"]),
    ],
)
def test_unusable_node_affinity(expression: dict[str, Any]) -> None:
    assert problem(node_requirements=[expression]) is not None


def test_pods_avoiding_karpenter_nodes_are_ignored() -> None:
    avoid = f.match_expression("karpenter.sh/nodepool", "DoesNotExist")
    assert problem(node_requirements=[avoid]) == AVOIDS_KARPENTER


def test_match_fields_are_not_supported() -> None:
    pod = f.pod()
    pod["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
                ]
            }
        }
    }
    assert "matchFields" in (pod_problem(pod_from_dict(pod), WELL_KNOWN, RESTRICTED) or "")


def test_a_domain_is_restricted_only_when_the_provider_restricts_it() -> None:
    """Karpenter restricts its own domain; a provider adds its own (the AWS provider
    karpenter.k8s.aws), so the same selector is set aside under one provider only."""
    pod = pod_from_dict(f.pod(node_selector={"karpenter.k8s.aws/not-a-label": "x"}))
    assert pod_problem(pod, WELL_KNOWN, RESTRICTED) == (
        "invalid node selector: label karpenter.k8s.aws/not-a-label is restricted: it might "
        "interfere with karpenter's provisioning"
    )
    assert pod_problem(pod, WELL_KNOWN, CORE_RESTRICTED_LABEL_DOMAINS) is None
    core = pod_from_dict(f.pod(node_selector={"karpenter.sh/custom": "x"}))
    assert pod_problem(core, WELL_KNOWN, CORE_RESTRICTED_LABEL_DOMAINS) is not None
