"""Pods Karpenter sets aside before scheduling."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.labels import AWS_WELL_KNOWN_LABELS, CORE_WELL_KNOWN_LABELS
from karpy.scheduling.pods import pod_from_dict
from karpy.scheduling.validation import AVOIDS_KARPENTER, pod_problem
from tests import factories as f

WELL_KNOWN = CORE_WELL_KNOWN_LABELS | AWS_WELL_KNOWN_LABELS


def problem(**options: Any) -> str | None:
    return pod_problem(pod_from_dict(f.pod(**options)), WELL_KNOWN)


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
    assert "matchFields" in (pod_problem(pod_from_dict(pod), WELL_KNOWN) or "")
