# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go: Contexts "NodeTaintsPolicy" and "NodeAffinityPolicy".

The spread key ``fake-label`` is a custom label: its domains come from existing nodes
and from what NodePools can create. The existing nodes have only 100m cpu, so no 1-cpu
pod fits on them; they only contribute domains (or not, depending on the policy).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity.harness import CAPACITY_TYPE, provision
from tests.scheduling.parity.pools import topology_pool

LABELS = {"test": "test"}
SPREAD_LABEL = "fake-label"
TAINT_KEY = "taint-key"
pool_req = f.nodepool_requirement


def _spread(**policy: Any) -> dict[str, Any]:
    return f.topology_spread(SPREAD_LABEL, match_labels=LABELS, **policy)


def _small_nodes(
    *, tainted: bool = False, labels: dict[str, str] | None = None
) -> list[dict[str, Any]]:
    taints = [f.taint("taintname", "taintvalue")] if tainted else []
    return [
        f.node(
            labels={SPREAD_LABEL: domain, **(labels or {})},
            taints=taints,
            allocatable={"cpu": "100m"},
        )
        for domain in ("foo", "bar")
    ]


@pytest.mark.parametrize(
    ("policy", "expected"), [("Ignore", [1]), ("Honor", [5])], ids=["ignore", "honor"]
)
def test_tainted_nodes_count_as_domains_only_when_taints_are_ignored(
    policy: str, expected: list[int]
) -> None:
    # It: NodeTaintsPolicy / should balance pods across a label (NodeTaintsPolicy=ignore|honor)
    spread = _spread(node_taints_policy=policy)
    pool = topology_pool(labels={SPREAD_LABEL: "baz"})
    pods = f.unschedulable_pods(
        5, labels=LABELS, requests={"cpu": "1"}, topology_spread_constraints=[spread]
    )
    assert provision(pool, _small_nodes(tainted=True), pods).skew(spread) == expected


def _domain_pool(domains: list[str], taint_value: str | None = None) -> dict[str, Any]:
    requirements = [
        pool_req(CAPACITY_TYPE, "Exists"),
        pool_req(SPREAD_LABEL, "In", domains),
    ]
    taints = [f.taint(TAINT_KEY, taint_value)] if taint_value else []
    return topology_pool(requirements=requirements, taints=taints)


@pytest.mark.parametrize(
    ("policy", "expected"), [("Ignore", [1]), ("Honor", [2])], ids=["ignore", "honor"]
)
def test_domains_of_a_tainted_pool_count_only_when_taints_are_ignored(
    policy: str, expected: list[int]
) -> None:
    # It: NodeTaintsPolicy / should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=ignore|honor)
    spread = _spread(node_taints_policy=policy)
    pools = [_domain_pool(["foo"]), _domain_pool(["bar"], "taint-value")]
    pods = f.unschedulable_pods(2, labels=LABELS, topology_spread_constraints=[spread])
    assert provision(pools, pods).skew(spread) == expected


def test_pools_sharing_a_domain_but_tolerated_separately_spread_each_group() -> None:
    # It: NodeTaintsPolicy / should balance pods across a label when mutually exclusive NodePools (by taints) share domains (NodeTaintsPolicy=honor)
    spread = _spread(node_taints_policy="Honor")
    pools = [_domain_pool(["foo", "bar"], "nodepool-0"), _domain_pool(["foo", "baz"], "nodepool-1")]
    pods = [
        pod
        for i in range(2)
        for pod in f.unschedulable_pods(
            (i + 1) * 2,
            labels=LABELS,
            topology_spread_constraints=[spread],
            tolerations=[f.toleration(TAINT_KEY, value=f"nodepool-{i}", effect="NoSchedule")],
        )
    ]
    assert provision(pools, pods).skew(spread) == [1, 2, 3]


@pytest.mark.parametrize(
    ("policy", "expected"), [("Ignore", [1]), ("Honor", [5])], ids=["ignore", "honor"]
)
def test_nodes_the_pod_cannot_select_count_as_domains_only_when_affinity_is_ignored(
    policy: str, expected: list[int]
) -> None:
    # It: NodeAffinityPolicy / should balance pods across a label (NodeAffinityPolicy=ignore|honor)
    spread = _spread(node_affinity_policy=policy)
    pool = topology_pool(labels={SPREAD_LABEL: "baz", "selector": "value"})
    nodes = _small_nodes(labels={"selector": "mismatch"})
    pods = f.unschedulable_pods(
        5,
        labels=LABELS,
        requests={"cpu": "1"},
        node_selector={"selector": "value"},
        topology_spread_constraints=[spread],
    )
    assert provision(pool, nodes, pods).skew(spread) == expected
