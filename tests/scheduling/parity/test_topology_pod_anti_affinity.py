# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go, Context "Pod Affinity/Anti-Affinity": anti-affinity.

Zone anti-affinity is resolved late: a new node's zone is fixed only when it launches, so
a pod avoiding a zone-flexible pod cannot schedule in the same round, and Karpenter's Its
need a second round to see it placed (chained here with ``harness.materialize``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity.harness import (
    ARCH,
    HOSTNAME,
    ZONE,
    Round,
    materialize,
    provision,
    without,
)
from tests.scheduling.parity.pools import topology_pool

S2 = {"security": "s2"}
TWO_CPU = {"cpu": "2"}
ZONES = ("test-zone-1", "test-zone-2", "test-zone-3")


def _zone_term() -> dict[str, Any]:
    return f.pod_affinity_term(ZONE, match_labels=S2)


@pytest.mark.parametrize("avoider_first", [True, False], ids=["avoider-first", "target-first"])
def test_hostname_anti_affinity_separates_nodes(avoider_first: bool) -> None:
    # It: Pod Affinity/Anti-Affinity / should separate nodes using simple pod anti-affinity on hostname
    target = f.unschedulable_pod(labels=S2)
    avoider = f.unschedulable_pod(
        pod_anti_affinity=[f.pod_affinity_term(HOSTNAME, match_labels=S2)]
    )
    order = [avoider, target] if avoider_first else [target, avoider]
    done = provision(topology_pool(), order)
    assert done.node(target).name != done.node(avoider).name


def test_zone_anti_affinity_blocks_when_every_zone_has_a_target() -> None:
    # It: Pod Affinity/Anti-Affinity / should not violate pod anti-affinity on zone
    targets = [
        f.unschedulable_pod(labels=S2, requests=TWO_CPU, node_selector={ZONE: zone})
        for zone in ZONES
    ]
    avoider = f.unschedulable_pod(pod_anti_affinity=[_zone_term()])
    done = provision(topology_pool(), targets, avoider)
    for pod in targets:
        done.node(pod)
    done.not_scheduled(avoider)


def test_zone_anti_affinity_blocks_while_the_target_zone_is_undecided() -> None:
    # It: Pod Affinity/Anti-Affinity / should not violate pod anti-affinity on zone (other schedules first)
    target = f.unschedulable_pod(labels=S2, requests=TWO_CPU)
    avoider = f.unschedulable_pod(pod_anti_affinity=[_zone_term()])
    done = provision(topology_pool(), target, avoider)
    done.node(target)
    done.not_scheduled(avoider)


def test_arch_anti_affinity_picks_the_other_arch() -> None:
    # It: Pod Affinity/Anti-Affinity / should not violate pod anti-affinity (arch)
    spread = f.topology_spread(HOSTNAME, match_labels=S2)
    target = f.unschedulable_pod(
        labels=S2,
        topology_spread_constraints=[spread],
        requests=TWO_CPU,
        node_selector={ARCH: "arm64"},
    )
    avoider = f.unschedulable_pod(
        labels=S2,
        topology_spread_constraints=[spread],
        requests={"cpu": "1"},
        pod_anti_affinity=[f.pod_affinity_term(ARCH, match_labels=S2)],
    )
    done = provision(topology_pool(), target, avoider)
    assert done.node(target).labels[ARCH] != done.node(avoider).labels[ARCH]


def _zone_pinned_avoiders(*, required: bool) -> list[dict[str, Any]]:
    anti: dict[str, Any] = (
        {"pod_anti_affinity": [_zone_term()]}
        if required
        else {"pod_anti_affinity_preferred": [f.weighted(_zone_term(), 10)]}
    )
    return [
        f.unschedulable_pod(requests=TWO_CPU, node_selector={ZONE: zone}, **anti) for zone in ZONES
    ]


@pytest.mark.parametrize(
    "required", [False, True], ids=["preferred-is-violated", "required-is-respected"]
)
def test_anti_affinity_of_other_pods_in_every_zone(required: bool) -> None:
    # It: Pod Affinity/Anti-Affinity / should violate preferred pod anti-affinity on zone (inverse)
    # It: Pod Affinity/Anti-Affinity / should not violate pod anti-affinity on zone (inverse)
    avoiders = _zone_pinned_avoiders(required=required)
    target = f.unschedulable_pod(labels=S2)
    done = provision(topology_pool(), avoiders, target)
    for pod in avoiders:
        done.node(pod)
    if required:
        done.not_scheduled(target)
    else:
        done.node(target)


def test_zone_anti_affinity_resolves_once_the_other_pod_has_a_zone() -> None:
    # It: Pod Affinity/Anti-Affinity / should not violate pod anti-affinity on zone (Schrödinger)
    anywhere = f.unschedulable_pod(pod_anti_affinity=[_zone_term()], requests=TWO_CPU)
    target = f.unschedulable_pod(labels=S2)
    first = provision(topology_pool(), anywhere, target)
    first_zone = first.node(anywhere).zone
    first.not_scheduled(target)
    second = provision(materialize(first))
    assert second.node(target).zone != first_zone


@pytest.mark.parametrize(
    "required", [False, True], ids=["preferred-is-violated", "required-is-respected"]
)
def test_anti_affinity_of_bound_pods_in_every_zone(required: bool) -> None:
    # It: Pod Affinity/Anti-Affinity / should violate preferred pod anti-affinity on zone (inverse w/existing nodes)
    # It: Pod Affinity/Anti-Affinity / should not violate pod anti-affinity on zone (inverse w/existing nodes)
    avoiders = _zone_pinned_avoiders(required=required)
    first = provision(topology_pool(), avoiders)
    for pod in avoiders:
        first.node(pod)
    target = f.unschedulable_pod(labels=S2)
    second = provision(materialize(first), target)
    if required:
        second.not_scheduled(target)
    else:
        second.node(target)


def _drop_unscheduled(done: Round) -> list[dict[str, Any]]:
    pending = [o for o in done.objects if o["kind"] == "Pod" and not done.scheduled(o)]
    return without(materialize(done), *pending)


def test_self_anti_affinity_on_zone_places_one_pod_per_round() -> None:
    # It: Pod Affinity/Anti-Affinity / should support pod anti-affinity with a zone topology
    zones = f.topology_spread(ZONE)

    def batch() -> list[dict[str, Any]]:
        return f.unschedulable_pods(3, labels=S2, pod_anti_affinity=[_zone_term()])

    snapshot: list[dict[str, Any]] = [topology_pool()]
    for expected in ([1], [1, 1], [1, 1, 1], [1, 1, 1]):
        done = provision(snapshot, batch())
        assert done.skew(zones) == expected
        snapshot = _drop_unscheduled(done)
