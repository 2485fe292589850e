# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go: Contexts "Hostname" and "CapacityType"."""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.parity.harness import (
    ARCH,
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    ZONE,
    materialize,
    provision,
    replace,
)
from tests.scheduling.parity.pools import topology_pool

LABELS = {"test": "test"}
RR = {"cpu": "1.1"}
pool_req = f.nodepool_requirement
req = f.match_expression


def _pods(count: int, spread: dict[str, Any] | None = None, **options: Any) -> list[dict[str, Any]]:
    constraints = [spread] if spread is not None else []
    return f.unschedulable_pods(
        count, labels=LABELS, topology_spread_constraints=constraints, **options
    )


# --- Hostname ------------------------------------------------------------------------------


def test_hostname_spread_puts_one_pod_per_node() -> None:
    # It: Hostname / should balance pods across nodes
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS)
    assert provision(topology_pool(), _pods(4, spread)).skew(spread) == [1, 1, 1, 1]


def test_hostname_spread_stacks_up_to_max_skew() -> None:
    # It: Hostname / should balance pods on the same hostname up to maxskew
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS, max_skew=4)
    assert provision(topology_pool(), _pods(4, spread)).skew(spread) == [4]


def _app_pods(app: str, *, arch: str | None = None) -> list[dict[str, Any]]:
    spread = f.topology_spread(HOSTNAME, match_labels={"app": app})
    requirements = [req(ARCH, "In", [arch])] if arch else None
    return f.unschedulable_pods(
        2, labels={"app": app}, node_requirements=requirements, topology_spread_constraints=[spread]
    )


def test_two_spread_deployments_share_the_minimum_of_nodes() -> None:
    # It: Hostname / balance multiple deployments with hostname topology spread
    pods = _app_pods("app1") + _app_pods("app2")
    done = provision(topology_pool(), pods)
    for pod in pods:
        done.node(pod)
    assert len(done.nodes()) == 2


def test_two_spread_deployments_of_different_arches_need_four_nodes() -> None:
    # It: Hostname / balance multiple deployments with hostname topology spread & varying arch
    pods = _app_pods("app1", arch="amd64") + _app_pods("app2", arch="arm64")
    done = provision(topology_pool(), pods)
    for pod in pods:
        done.node(pod)
    assert len(done.nodes()) == 4


# --- CapacityType --------------------------------------------------------------------------


def _capacity_spread(**options: Any) -> dict[str, Any]:
    return f.topology_spread(CAPACITY_TYPE, match_labels=LABELS, **options)


def _only(*capacity_types: str) -> dict[str, Any]:
    return topology_pool("ct", requirements=[pool_req(CAPACITY_TYPE, "In", list(capacity_types))])


def test_capacity_type_spread_balances() -> None:
    # It: CapacityType / should balance pods across capacity types
    spread = _capacity_spread()
    assert provision(topology_pool(), _pods(4, spread)).skew(spread) == [2, 2]


def test_capacity_type_spread_over_pool_capacity_types() -> None:
    # It: CapacityType / should respect NodePool capacity type constraints
    spread = _capacity_spread()
    done = provision(_only("spot", "on-demand"), _pods(4, spread))
    assert done.skew(spread) == [2, 2]


def test_capacity_type_do_not_schedule_spread_leaves_pods_pending() -> None:
    # It: CapacityType / should not violate max-skew when unsat = do not schedule (capacity type)
    spread = _capacity_spread()
    first = provision(_only("spot"), _pods(1, spread, requests=RR))
    assert first.skew(spread) == [1]
    second = provision(
        replace(materialize(first), _only("on-demand")), _pods(5, spread, requests=RR)
    )
    assert second.skew(spread) == [1, 2]


def test_capacity_type_schedule_anyway_spread_exceeds_skew() -> None:
    # It: CapacityType / should violate max-skew when unsat = schedule anyway (capacity type)
    spread = _capacity_spread(when_unsatisfiable="ScheduleAnyway")
    first = provision(_only("spot"), _pods(1, spread, requests=RR))
    assert first.skew(spread) == [1]
    second = provision(
        replace(materialize(first), _only("on-demand")), _pods(5, spread, requests=RR)
    )
    assert second.skew(spread) == [1, 5]


def test_only_bound_live_matching_pods_on_labelled_nodes_count() -> None:
    # It: CapacityType / should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain
    spread = _capacity_spread()
    other = f.namespace()
    spot = f.node(labels={CAPACITY_TYPE: "spot"})
    on_demand = f.node(labels={CAPACITY_TYPE: "on-demand"})
    unlabelled = f.node()

    def on(node: dict[str, Any], **options: Any) -> dict[str, Any]:
        return f.pod(node_name=node["metadata"]["name"], **options)

    pods = [
        on(spot),
        f.pod(labels=LABELS),
        on(unlabelled, labels=LABELS),
        on(spot, labels=LABELS, namespace=other["metadata"]["name"]),
        f.pod(labels=LABELS, deletion_timestamp=f.SOME_TIME, finalizers=["test/keep"]),
        on(spot, labels=LABELS, phase="Failed"),
        on(spot, labels=LABELS, phase="Succeeded"),
        on(spot, labels=LABELS),
        on(spot, labels=LABELS),
        on(on_demand, labels=LABELS),
        *_pods(2, spread),
    ]
    done = provision(topology_pool(), spot, on_demand, unlabelled, other, pods)
    # Counting the ignored pods would not change this skew (they sit in the fullest
    # domain); tests/scheduling/test_topology_counting.py checks each kind on its own.
    assert done.skew(spread) == [2, 3]


def test_capacity_type_spread_without_selector_counts_every_pod() -> None:
    # It: CapacityType / should match all pods when labelSelector is not specified
    spread = f.topology_spread(CAPACITY_TYPE)
    assert provision(topology_pool(), f.unschedulable_pod()).skew(spread) == [1]


def test_pods_outside_their_own_spread_selector_pack_together() -> None:
    # It: CapacityType / should handle interdependent selectors
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS)
    pods = f.unschedulable_pods(5, topology_spread_constraints=[spread])
    assert len(provision(topology_pool(), pods).node_names(pods)) == 1


def test_node_affinity_excludes_other_capacity_types_from_the_spread() -> None:
    # It: CapacityType / should balance pods across capacity-types (node required affinity constrained)
    spread = _capacity_spread()
    pool = topology_pool("ct")
    first = provision(
        pool,
        _pods(
            1,
            node_requirements=[
                req(ZONE, "In", ["test-zone-1"]),
                req(CAPACITY_TYPE, "In", ["on-demand"]),
            ],
        ),
    )
    pods = _pods(
        5,
        spread,
        node_requirements=[req(ZONE, "In", ["test-zone-2"]), req(CAPACITY_TYPE, "In", ["spot"])],
    )
    second = provision(materialize(first), pods)
    assert second.skew(spread) == [1, 5]


def test_existing_node_domain_counts_when_pods_are_unconstrained() -> None:
    # It: CapacityType / should balance pods across capacity-types (no constraints)
    spread = _capacity_spread()
    first = provision(
        topology_pool("ct"),
        _pods(
            1,
            node_selector={INSTANCE_TYPE: "single-pod-instance-type"},
            node_requirements=[req(CAPACITY_TYPE, "In", ["on-demand"])],
        ),
    )
    second = provision(
        replace(materialize(first), _only("spot")), _pods(5, spread, requests={"cpu": "2"})
    )
    assert second.skew(spread) == [1, 2]


def test_existing_node_arch_counts_when_pods_are_unconstrained() -> None:
    # It: CapacityType / should balance pods across arch (no constraints)
    spread = f.topology_spread(ARCH, match_labels=LABELS)
    first = provision(
        topology_pool("ct"),
        _pods(
            1,
            node_selector={INSTANCE_TYPE: "single-pod-instance-type"},
            node_requirements=[req(ARCH, "In", ["amd64"])],
        ),
    )
    arm_only = topology_pool("ct", requirements=[pool_req(ARCH, "In", ["arm64"])])
    second = provision(
        replace(materialize(first), arm_only), _pods(5, spread, requests={"cpu": "2"})
    )
    assert second.skew(spread) == [1, 2]
