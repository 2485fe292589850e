# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go: the top-level Its and Context "Zonal".

Multi-round Its chain simulate rounds: each round's decisions become the next snapshot
(``harness.materialize``), the NodePool is swapped where Karpenter's It changes it, and
the skew is checked after every round as the It checks it.
"""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.parity.harness import (
    HOSTNAME,
    ZONE,
    Round,
    materialize,
    provision,
    replace,
    without,
)
from tests.scheduling.parity.pools import plain_pool, topology_pool

LABELS = {"test": "test"}
RR = {"cpu": "1.1"}
pool_req = f.nodepool_requirement


def _spread(**options: Any) -> dict[str, Any]:
    return f.topology_spread(ZONE, match_labels=LABELS, **options)


def _pods(count: int, spread: dict[str, Any] | None = None, **options: Any) -> list[dict[str, Any]]:
    constraints = [spread] if spread is not None else []
    return f.unschedulable_pods(
        count, labels=LABELS, topology_spread_constraints=constraints, **options
    )


def _zones(*zones: str) -> list[dict[str, Any]]:
    return [pool_req(ZONE, "In", list(zones))]


def test_unknown_topology_key_makes_the_pod_unschedulable() -> None:
    # It: Topology / should ignore unknown topology keys
    spread = f.topology_spread("unknown", match_labels=LABELS)
    constrained = f.unschedulable_pod(labels=LABELS, topology_spread_constraints=[spread])
    plain = f.unschedulable_pod()
    done = provision(topology_pool(), constrained, plain)
    done.not_scheduled(constrained)
    done.node(plain)


def test_spread_without_selector_counts_nothing_and_packs() -> None:
    # It: Topology / should not spread when a nil label selector is defined
    spread = f.topology_spread(ZONE)
    done = provision(topology_pool(), _pods(2, spread))
    assert done.skew(spread) == [2]


def test_zonal_spread_with_match_labels_balances() -> None:
    # It: Zonal / should balance pods across zones (match labels)
    spread = _spread()
    assert provision(topology_pool(), _pods(4, spread)).skew(spread) == [1, 1, 2]


def test_zonal_spread_with_match_expressions_balances() -> None:
    # It: Zonal / should balance pods across zones (match expressions)
    spread = f.topology_spread(ZONE, match_expressions=[f.match_expression("test", "In", ["test"])])
    assert provision(topology_pool(), _pods(4, spread)).skew(spread) == [1, 1, 2]


def test_zonal_spread_over_pool_zones() -> None:
    # It: Zonal / should respect NodePool zonal constraints
    spread = _spread()
    pool = topology_pool(requirements=_zones("test-zone-1", "test-zone-2", "test-zone-3"))
    assert provision(pool, _pods(4, spread)).skew(spread) == [1, 1, 2]


def test_zonal_spread_over_a_pool_zone_subset() -> None:
    # It: Zonal / should respect NodePool zonal constraints (subset) with requirements
    spread = _spread()
    pool = topology_pool(requirements=_zones("test-zone-1", "test-zone-2"))
    assert provision(pool, _pods(4, spread)).skew(spread) == [2, 2]


def test_zonal_spread_over_a_pool_zone_label() -> None:
    # It: Zonal / should respect NodePool zonal constraints (subset) with labels
    spread = _spread()
    pool = topology_pool(labels={ZONE: "test-zone-1"})
    assert provision(pool, _pods(4, spread)).skew(spread) == [4]


def test_zonal_spread_over_pool_zone_label_within_requirements() -> None:
    # It: Zonal / should respect NodePool zonal constraints (subset) with requirements and labels
    spread = _spread()
    pool = topology_pool(
        requirements=_zones("test-zone-1", "test-zone-2"), labels={ZONE: "test-zone-1"}
    )
    assert provision(pool, _pods(4, spread)).skew(spread) == [4]


def test_zonal_spread_over_zone_labels_of_two_pools() -> None:
    # It: Zonal / should respect NodePool zonal constraints (subset) with labels across NodePools
    spread = _spread()
    first = topology_pool(
        requirements=_zones("test-zone-1", "test-zone-2"), labels={ZONE: "test-zone-1"}
    )
    second = plain_pool(labels={ZONE: "test-zone-2"})
    assert provision(first, second, _pods(4, spread)).skew(spread) == [2, 2]


def test_existing_pod_outside_the_pool_zones_caps_the_spread() -> None:
    # It: Zonal / should respect NodePool zonal constraints (existing pod)
    spread = _spread()
    pool = topology_pool("zonal")
    first = provision(pool, _pods(1, requests=RR, node_selector={ZONE: "test-zone-3"}))
    narrowed = topology_pool("zonal", requirements=_zones("test-zone-1", "test-zone-2"))
    second = provision(replace(materialize(first), narrowed), _pods(6, spread, requests=RR))
    assert second.skew(spread) == [1, 2, 2]


def _round_in_zones(previous: Round | None, zones: list[str], pods: list[dict[str, Any]]) -> Round:
    pool = topology_pool("zonal", requirements=_zones(*zones))
    objects = replace(materialize(previous), pool) if previous else [pool]
    return provision(objects, pods)


def test_spread_uses_the_only_domain_left_up_to_max_skew() -> None:
    # It: Zonal / should schedule to the non-minimum domain if its all that's available
    spread = _spread(max_skew=5)
    first = _round_in_zones(None, ["test-zone-1"], _pods(1, spread, requests=RR))
    assert first.skew(spread) == [1]
    second = _round_in_zones(first, ["test-zone-2"], _pods(1, spread, requests=RR))
    assert second.skew(spread) == [1, 1]
    third = _round_in_zones(second, ["test-zone-3"], _pods(10, spread, requests=RR))
    assert third.skew(spread) == [1, 1, 6]


def test_spread_already_over_max_skew_only_fills_the_smallest_domains() -> None:
    # It: Zonal / should only schedule to minimum domains if already violating max skew
    spread = _spread()
    first = provision(topology_pool(), _pods(9, spread, requests=RR))
    assert first.skew(spread) == [3, 3, 3]
    moved = [
        pod
        for pod in first.objects
        if pod["kind"] == "Pod" and first.node(pod).zone != "test-zone-1"
    ]
    snapshot = without(materialize(first), *moved)
    second = provision(snapshot, _pods(3, spread, requests=RR))
    assert Round.of_snapshot(snapshot).skew(spread) == [3]
    assert second.skew(spread) == [1, 2, 3]


def test_do_not_schedule_spread_leaves_pods_pending_rather_than_exceed_skew() -> None:
    # It: Zonal / should not violate max-skew when unsat = do not schedule
    spread = _spread()
    first = _round_in_zones(None, ["test-zone-1"], _pods(1, spread, requests=RR))
    assert first.skew(spread) == [1]
    second = _round_in_zones(first, ["test-zone-2", "test-zone-3"], _pods(10, spread, requests=RR))
    assert second.skew(spread) == [1, 2, 2]


def test_domain_of_an_existing_unconstrained_pod_counts_towards_the_spread() -> None:
    # It: Zonal / should not violate max-skew when unsat = do not schedule (discover domains)
    spread = _spread()
    first = _round_in_zones(None, ["test-zone-1"], _pods(1, requests=RR))
    second = _round_in_zones(first, ["test-zone-2", "test-zone-3"], _pods(10, spread, requests=RR))
    assert second.skew(spread) == [1, 2, 2]


def name(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["name"])


def test_only_bound_live_matching_pods_on_zoned_nodes_count() -> None:
    # It: Zonal / should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain
    spread = _spread()
    other = f.namespace()
    first = f.node(labels={ZONE: "test-zone-1"})
    second = f.node(labels={ZONE: "test-zone-2"})
    third = f.node()
    pods = [
        f.pod(node_name=name(first)),
        f.pod(labels=LABELS),
        f.pod(labels=LABELS, node_name=name(third)),
        f.pod(labels=LABELS, namespace=other["metadata"]["name"], node_name=name(first)),
        f.pod(labels=LABELS, deletion_timestamp=f.SOME_TIME, finalizers=["test/keep"]),
        f.pod(labels=LABELS, node_name=name(first), phase="Failed"),
        f.pod(labels=LABELS, node_name=name(first), phase="Succeeded"),
        f.pod(labels=LABELS, node_name=name(first)),
        f.pod(labels=LABELS, node_name=name(first)),
        f.pod(labels=LABELS, node_name=name(second)),
        *_pods(2, spread),
    ]
    done = provision(topology_pool(), first, second, third, other, pods)
    # Counting the ignored pods would not change this skew (they sit in the fullest
    # domain); tests/scheduling/test_topology_counting.py checks each kind on its own.
    assert done.skew(spread) == [1, 2, 2]


def test_spread_without_selector_counts_every_pod() -> None:
    # It: Zonal / should match all pods when labelSelector is not specified
    spread = f.topology_spread(ZONE)
    assert provision(topology_pool(), f.unschedulable_pod()).skew(spread) == [1]


def test_pods_outside_their_own_spread_selector_pack_together() -> None:
    # It: Zonal / should handle interdependent selectors
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS)
    pods = f.unschedulable_pods(5, topology_spread_constraints=[spread])
    assert len(provision(topology_pool(), pods).node_names(pods)) == 1


def test_min_domains_above_the_available_zones_limits_each_to_one() -> None:
    # It: Zonal / should respect minDomains constraints
    spread = _spread(min_domains=3)
    pool = topology_pool(requirements=_zones("test-zone-1", "test-zone-2"))
    assert provision(pool, _pods(3, spread)).skew(spread) == [1, 1]


def test_min_domains_equal_to_the_zones_spreads_normally() -> None:
    # It: Zonal / satisfied minDomains constraints (equal) should allow expected pod scheduling
    spread = _spread(min_domains=3)
    pool = topology_pool(requirements=_zones("test-zone-1", "test-zone-2", "test-zone-3"))
    assert provision(pool, _pods(11, spread)).skew(spread) == [3, 4, 4]


def test_min_domains_below_the_zones_spreads_normally() -> None:
    # It: Zonal / satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling
    spread = _spread(min_domains=2)
    pool = topology_pool(requirements=_zones("test-zone-1", "test-zone-2", "test-zone-3"))
    assert provision(pool, _pods(11, spread)).skew(spread) == [3, 4, 4]
