# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go: combined constraints and node affinity.

Contexts "Combined Hostname and Zonal Topology", "MatchLabelKeys", "Combined Zonal and
Capacity Type Topology", "Combined Hostname, Zonal, and Capacity Type Topology",
"Combined Zonal Topology and Node Affinity" and "Combined Capacity Type Topology and
Node Affinity". Multi-round Its chain rounds with ``harness.materialize``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import (
    CAPACITY_TYPE,
    HOSTNAME,
    ZONE,
    Round,
    materialize,
    provision,
    replace,
)
from tests.scheduling.parity.pools import plain_pool, topology_pool

LABELS = {"test": "test"}
pool_req = f.nodepool_requirement
req = f.match_expression


def _pods(
    count: int, spreads: Sequence[dict[str, Any]] = (), **options: Any
) -> list[dict[str, Any]]:
    return f.unschedulable_pods(
        count, labels=LABELS, topology_spread_constraints=list(spreads), **options
    )


def _chain(
    pool: dict[str, Any], batches: Sequence[int], spreads: Sequence[dict[str, Any]], **kw: Any
) -> list[Round]:
    """Provision ``batches`` of spread pods one round after another; return every round."""
    rounds: list[Round] = []
    for count in batches:
        snapshot = materialize(rounds[-1]) if rounds else [pool]
        rounds.append(provision(snapshot, _pods(count, spreads), **kw))
    return rounds


def test_zonal_and_hostname_spreads_hold_together_over_rounds() -> None:
    # It: Combined Hostname and Zonal Topology / should spread pods while respecting both constraints (hostname and zonal)
    zonal = f.topology_spread(ZONE, match_labels=LABELS)
    hostname = f.topology_spread(HOSTNAME, match_labels=LABELS, max_skew=3)
    rounds = _chain(topology_pool(), [2, 3, 5, 11], [zonal, hostname])
    expected = [[1, 1], [1, 2, 2], [3, 3, 4], [7, 7, 7]]
    for done, skew in zip(rounds, expected, strict=True):
        assert done.skew(zonal) == skew
        assert max(done.skew(hostname)) <= 3


def test_spread_over_a_custom_key_splits_pods_across_pools() -> None:
    # It: Combined Hostname and Zonal Topology / should balance pods across NodePool requirements
    key = "capacity.spread.4-1"
    spot = plain_pool(
        requirements=[
            pool_req(CAPACITY_TYPE, "In", ["spot"]),
            pool_req(key, "In", ["2", "3", "4", "5"]),
        ]
    )
    on_demand = plain_pool(
        requirements=[pool_req(CAPACITY_TYPE, "In", ["on-demand"]), pool_req(key, "In", ["1"])]
    )
    spread = f.topology_spread(key, match_labels=LABELS)
    pods = _pods(20, [spread])
    done = provision(spot, on_demand, pods)
    for pod in pods:
        done.node(pod)
    assert done.skew(spread) == [4, 4, 4, 4, 4]
    assert done.skew(f.topology_spread(CAPACITY_TYPE, match_labels=LABELS)) == [4, 16]


def test_zone_of_a_pool_without_capacity_still_counts_as_a_domain() -> None:
    # It: Combined Hostname and Zonal Topology / should spread pods while respecting both constraints (1st of two with this name)
    zonal = f.topology_spread(ZONE, match_labels=LABELS)
    hostname = f.topology_spread(HOSTNAME, match_labels=LABELS, when_unsatisfiable="ScheduleAnyway")
    pool = topology_pool(requirements=[pool_req(ZONE, "In", ["test-zone-1", "test-zone-2"])])
    disabled = plain_pool(requirements=[pool_req(ZONE, "In", ["test-zone-3"])], limits={"cpu": "0"})
    done = provision(pool, disabled, _pods(10, [zonal, hostname]))
    assert done.skew(zonal) == [1, 1]
    assert done.skew(hostname) == [1, 1]


def test_capacity_type_and_hostname_spreads_hold_together_over_rounds() -> None:
    # It: Combined Hostname and Zonal Topology / should spread pods while respecting both constraints (2nd of two with this name)
    by_capacity = f.topology_spread(CAPACITY_TYPE, match_labels=LABELS)
    hostname = f.topology_spread(HOSTNAME, match_labels=LABELS, max_skew=3)
    rounds = _chain(topology_pool(), [2, 3, 5, 11], [by_capacity, hostname])
    expected = [[1, 1], [2, 3], [5, 5], [10, 11]]
    for done, skew in zip(rounds, expected, strict=True):
        assert done.skew(by_capacity) == skew
        assert max(done.skew(hostname)) <= 3


# --- MatchLabelKeys ------------------------------------------------------------------------


def test_match_label_keys_split_the_spread_per_label_value() -> None:
    # It: MatchLabelKeys / should support matchLabelKeys
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS, match_label_keys=["test-label"])
    pods = [
        *f.unschedulable_pods(
            2, labels={**LABELS, "test-label": "value-a"}, topology_spread_constraints=[spread]
        ),
        *f.unschedulable_pods(
            2, labels={**LABELS, "test-label": "value-b"}, topology_spread_constraints=[spread]
        ),
    ]
    assert provision(topology_pool(), pods).skew(spread) == [2, 2]


def test_match_label_keys_missing_from_the_pod_are_ignored() -> None:
    # It: MatchLabelKeys / should ignore unknown labels specified in matchLabelKeys
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS, match_label_keys=["test-label"])
    assert provision(topology_pool(), _pods(4, [spread])).skew(spread) == [1, 1, 1, 1]


# --- Combined Zonal and Capacity Type / all three ------------------------------------------


def test_zonal_and_capacity_type_spreads_hold_together_over_rounds() -> None:
    # It: Combined Zonal and Capacity Type Topology / should spread pods while respecting both constraints
    by_capacity = f.topology_spread(CAPACITY_TYPE, match_labels=LABELS)
    zonal = f.topology_spread(ZONE, match_labels=LABELS)
    rounds = _chain(topology_pool(), [2, 3, 3, 11], [by_capacity, zonal])
    limits = [(1, 1), (3, 2), (5, 4), (11, 7)]
    for done, (capacity_limit, zone_limit) in zip(rounds, limits, strict=True):
        assert max(done.skew(by_capacity)) <= capacity_limit
        assert max(done.skew(zonal)) <= zone_limit


ASSORTED_ROUNDS = range(1, 15)


@pytest.mark.slow
def test_three_spreads_hold_over_growing_batches() -> None:
    # It: Combined Hostname, Zonal, and Capacity Type Topology / should spread pods while respecting all constraints
    spreads = [
        f.topology_spread(CAPACITY_TYPE, match_labels=LABELS),
        f.topology_spread(ZONE, match_labels=LABELS, max_skew=2),
        f.topology_spread(HOSTNAME, match_labels=LABELS, max_skew=3),
    ]
    catalog = cat.catalog(cat.instance_types_assorted())
    snapshot: list[dict[str, Any]] = [topology_pool()]
    for count in ASSORTED_ROUNDS:
        pods = _pods(count, spreads)
        done = provision(snapshot, pods, catalog=catalog)
        for spread, limit in zip(spreads, (1, 2, 3), strict=True):
            assert done.max_skew(spread) <= limit
        for pod in pods:
            done.node(pod)
        snapshot = materialize(done)


# --- Combined Zonal Topology and Node Affinity ---------------------------------------------


def test_node_selectors_narrow_the_zonal_spread_domains() -> None:
    # It: Combined Zonal Topology and Node Affinity / should limit spread options by nodeSelector
    spread = f.topology_spread(ZONE, match_labels=LABELS)
    pods = [
        *_pods(5, [spread], node_selector={ZONE: "test-zone-1"}),
        *_pods(10, [spread], node_selector={ZONE: "test-zone-2"}),
    ]
    assert provision(topology_pool(), pods).skew(spread) == [5, 10]


def test_node_requirements_narrow_the_zonal_spread_domains() -> None:
    # It: Combined Zonal Topology and Node Affinity / should limit spread options by node requirements
    spread = f.topology_spread(ZONE, match_labels=LABELS)
    pods = _pods(10, [spread], node_requirements=[req(ZONE, "In", ["test-zone-1", "test-zone-2"])])
    assert provision(topology_pool(), pods).skew(spread) == [5, 5]


def test_required_node_affinity_narrows_the_spread_round_by_round() -> None:
    # It: Combined Zonal Topology and Node Affinity / should limit spread options by required node affinity
    spread = f.topology_spread(ZONE, match_labels=LABELS)
    first = provision(
        topology_pool("zonal"),
        _pods(6, [spread], node_requirements=[req(ZONE, "In", ["test-zone-1", "test-zone-2"])]),
    )
    assert first.skew(spread) == [3, 3]
    opened = topology_pool(
        "zonal",
        requirements=[pool_req(ZONE, "In", ["test-zone-1", "test-zone-2", "test-zone-3"])],
    )
    second = provision(
        replace(materialize(first), opened),
        _pods(1, [spread], node_requirements=[req(ZONE, "In", ["test-zone-2", "test-zone-3"])]),
    )
    assert second.skew(spread) == [1, 3, 3]
    third = provision(materialize(second), _pods(5, [spread]))
    assert third.skew(spread) == [4, 4, 4]


def test_preferred_node_affinity_does_not_narrow_the_spread() -> None:
    # It: Combined Zonal Topology and Node Affinity / should not limit spread options by preferred node affinity
    spread = f.topology_spread(ZONE, match_labels=LABELS)
    pods = _pods(6, [spread], node_preferences=[req(ZONE, "In", ["test-zone-1", "test-zone-2"])])
    assert provision(topology_pool(), pods).skew(spread) == [2, 2, 2]


# --- Combined Capacity Type Topology and Node Affinity -------------------------------------


def test_node_selectors_narrow_the_capacity_type_spread() -> None:
    # It: Combined Capacity Type Topology and Node Affinity / should limit spread options by nodeSelector
    spread = f.topology_spread(
        CAPACITY_TYPE, match_labels=LABELS, when_unsatisfiable="ScheduleAnyway"
    )
    pods = [
        *_pods(5, [spread], node_selector={CAPACITY_TYPE: "spot"}),
        *_pods(5, [spread], node_selector={CAPACITY_TYPE: "on-demand"}),
    ]
    assert provision(topology_pool(), pods).skew(spread) == [5, 5]


def test_capacity_type_affinity_narrows_the_spread_round_by_round() -> None:
    # It: Combined Capacity Type Topology and Node Affinity / should limit spread options by node affinity (capacity type)
    spread = f.topology_spread(CAPACITY_TYPE, match_labels=LABELS)
    first = provision(
        topology_pool(), _pods(3, [spread], node_requirements=[req(CAPACITY_TYPE, "In", ["spot"])])
    )
    assert first.skew(spread) == [3]
    second = provision(
        materialize(first),
        _pods(1, [spread], node_requirements=[req(CAPACITY_TYPE, "In", ["on-demand", "spot"])]),
    )
    assert second.skew(spread) == [1, 3]
    third = provision(materialize(second), _pods(5, [spread]))
    assert third.skew(spread) == [4, 5]
