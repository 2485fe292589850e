# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go, Context "Pod Affinity/Anti-Affinity": affinity.

The anti-affinity Its of the same context are in ``test_topology_pod_anti_affinity.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity.harness import (
    ARCH,
    HOSTNAME,
    ZONE,
    materialize,
    provision,
)
from tests.scheduling.parity.pools import topology_pool

LABELS = {"test": "test"}
S2 = {"security": "s2"}
req = f.match_expression


def _hostname_spread_pods(count: int = 10) -> list[dict[str, Any]]:
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS)
    return f.unschedulable_pods(count, labels=LABELS, topology_spread_constraints=[spread])


def _affine(key: str, target: dict[str, str] = S2, **options: Any) -> dict[str, Any]:
    """A pending pod with required affinity to pods labelled ``target`` within ``key``."""
    return f.unschedulable_pod(
        pod_affinity=[f.pod_affinity_term(key, match_labels=target)], **options
    )


def test_empty_affinity_lists_do_not_stop_scheduling() -> None:
    # It: Pod Affinity/Anti-Affinity / should schedule a pod with empty pod affinity and anti-affinity
    pod = f.unschedulable_pod(pod_affinity=[], pod_anti_affinity=[])
    provision(topology_pool(), pod).node(pod)


def test_hostname_affinity_puts_the_pod_next_to_its_target() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect pod affinity (hostname)
    target = f.unschedulable_pod(labels=S2)
    follower = _affine(HOSTNAME)
    done = provision(topology_pool(), _hostname_spread_pods(), target, follower)
    assert done.node(target).name == done.node(follower).name


def test_arch_affinity_matches_the_arch_while_the_spread_separates_nodes() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect pod affinity (arch)
    spread = f.topology_spread(HOSTNAME, match_labels=S2)
    target = f.unschedulable_pod(
        labels=S2,
        topology_spread_constraints=[spread],
        requests={"cpu": "2"},
        node_selector={ARCH: "arm64"},
    )
    follower = _affine(ARCH, labels=S2, topology_spread_constraints=[spread], requests={"cpu": "1"})
    done = provision(topology_pool(), target, follower)
    first, second = done.node(target), done.node(follower)
    assert first.labels[ARCH] == second.labels[ARCH]
    assert first.name != second.name


def _self_affine(count: int, key: str, **options: Any) -> list[dict[str, Any]]:
    term = f.pod_affinity_term(key, match_labels=S2)
    return f.unschedulable_pods(count, labels=S2, pod_affinity=[term], **options)


def test_self_affine_pods_share_a_host() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect self pod affinity (hostname)
    pods = _self_affine(3, HOSTNAME)
    assert len(provision(topology_pool(), pods).node_names(pods)) == 1


def test_self_affinity_fills_only_the_first_host() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect self pod affinity for first empty topology domain only (hostname)
    pods = _self_affine(10, HOSTNAME)
    first = provision(topology_pool(), pods)
    scheduled = [p for p in pods if first.scheduled(p)]
    assert len(scheduled) == 5
    assert len(first.node_names(scheduled)) == 1
    for pod in pods:
        if not first.scheduled(pod):
            first.not_scheduled(pod)
    later = _self_affine(10, HOSTNAME)
    second = provision(materialize(first), later)
    for pod in later:
        second.not_scheduled(pod)


def test_self_affinity_cannot_start_a_new_host_once_one_pod_runs() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect self pod affinity for first empty topology domain only (hostname/constrained zones)
    first = provision(
        topology_pool(), _self_affine(1, HOSTNAME, node_selector={ZONE: "test-zone-1"})
    )
    later = _self_affine(
        10, HOSTNAME, node_requirements=[req(ZONE, "In", ["test-zone-2", "test-zone-3"])]
    )
    second = provision(materialize(first), later)
    for pod in later:
        second.not_scheduled(pod)


def test_self_affine_pods_share_a_zone() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect self pod affinity (zone)
    pods = _self_affine(3, ZONE)
    assert len(provision(topology_pool(), pods).node_names(pods)) == 1


def test_self_affine_pods_share_the_zone_they_are_limited_to() -> None:
    # It: Pod Affinity/Anti-Affinity / should respect self pod affinity (zone w/ constraint)
    pods = _self_affine(3, ZONE, node_requirements=[req(ZONE, "In", ["test-zone-3"])])
    done = provision(topology_pool(), pods)
    assert len(done.node_names(pods)) == 1
    assert all(done.node(p).zone == "test-zone-3" for p in pods)


def test_matching_self_affine_pods_in_disjoint_zones_get_two_nodes() -> None:
    # It: Pod Affinity/Anti-Affinity / should allow two nodes to be created when two pods with matching affinities have incompatible selectors
    labels = {"security": "s1"}
    term = f.pod_affinity_term(ZONE, match_labels=labels)
    pods = [
        f.unschedulable_pod(
            labels=labels, pod_affinity=[term], node_requirements=[req(ZONE, "In", [zone])]
        )
        for zone in ("test-zone-2", "test-zone-3")
    ]
    done = provision(topology_pool(), pods)
    assert done.node(pods[0]).zone == "test-zone-2"
    assert done.node(pods[1]).zone == "test-zone-3"
    assert len(done.node_names(pods)) == 2


def test_preferred_affinity_to_a_missing_pod_is_relaxed() -> None:
    # It: Pod Affinity/Anti-Affinity / should allow violation of preferred pod affinity
    pod = f.unschedulable_pod(
        pod_affinity_preferred=[f.weighted(f.pod_affinity_term(HOSTNAME, match_labels=S2), 50)]
    )
    done = provision(topology_pool(), _hostname_spread_pods(), pod)
    done.node(pod)


def test_preferred_anti_affinity_is_relaxed_when_every_zone_is_taken() -> None:
    # It: Pod Affinity/Anti-Affinity / should allow violation of preferred pod anti-affinity
    zonal = f.topology_spread(ZONE, match_labels=LABELS)
    spread = f.unschedulable_pods(3, labels=LABELS, topology_spread_constraints=[zonal])
    avoiding = f.unschedulable_pods(
        10,
        pod_anti_affinity_preferred=[
            f.weighted(f.pod_affinity_term(ZONE, match_labels=LABELS), 50)
        ],
    )
    done = provision(topology_pool(), spread, avoiding)
    for pod in avoiding:
        done.node(pod)


def test_affinity_preference_yields_to_a_required_spread() -> None:
    # It: Pod Affinity/Anti-Affinity / should allow violation of a pod affinity preference with a conflicting required constraint
    spread = f.topology_spread(HOSTNAME, match_labels=LABELS)
    target = f.unschedulable_pod(labels=S2)
    pods = f.unschedulable_pods(
        3,
        labels=LABELS,
        topology_spread_constraints=[spread],
        pod_affinity_preferred=[f.weighted(f.pod_affinity_term(HOSTNAME, match_labels=S2), 50)],
    )
    done = provision(topology_pool(), pods, target)
    for pod in [*pods, target]:
        done.node(pod)
    assert done.skew(spread, namespace="") == [1, 1, 1]


def test_affinity_to_a_pod_that_does_not_exist_is_unschedulable() -> None:
    # It: Pod Affinity/Anti-Affinity / should not schedule pods with affinity to a non-existent pod
    pods = [_affine(ZONE) for _ in range(10)]
    done = provision(topology_pool(), pods)
    for pod in pods:
        done.not_scheduled(pod)


def test_zone_affinity_waits_until_the_target_zone_is_known() -> None:
    # It: Pod Affinity/Anti-Affinity / should support pod affinity with zone topology (unconstrained target)
    zones = f.topology_spread(ZONE)
    target = f.unschedulable_pod(labels=S2)
    followers = [_affine(ZONE) for _ in range(10)]
    first = provision(topology_pool(), followers, target)
    for pod in followers:
        first.not_scheduled(pod)
    assert first.skew(zones) == [1]
    second = provision(materialize(first))
    for pod in followers:
        second.node(pod)
    assert second.skew(zones) == [11]


def test_zone_affinity_to_a_zone_pinned_target_schedules_at_once() -> None:
    # It: Pod Affinity/Anti-Affinity / should support pod affinity with zone topology (constrained target)
    target = f.unschedulable_pod(labels=S2, node_requirements=[req(ZONE, "In", ["test-zone-1"])])
    followers = [_affine(ZONE) for _ in range(10)]
    done = provision(topology_pool(), followers, target)
    assert done.skew(f.topology_spread(ZONE)) == [11]


def _dependent_chain() -> list[dict[str, Any]]:
    kinds = ["db", "web", "cache", "ui"]
    labels = [{"type": kind, "spread": "spread"} for kind in kinds]
    pods = [f.unschedulable_pod(labels=labels[0])]
    for i in range(1, len(kinds)):
        term = f.pod_affinity_term(HOSTNAME, match_labels=labels[i - 1])
        pods.append(f.unschedulable_pod(labels=labels[i], pod_affinity=[term]))
    return pods


@pytest.mark.parametrize("reverse", [False, True], ids=["db-first", "ui-first"])
def test_chain_of_hostname_affinities_all_schedules(reverse: bool) -> None:
    # It: Pod Affinity/Anti-Affinity / should handle multiple dependent affinities
    # (Karpenter repeats its round 50 times on fresh clusters; here two input orders.)
    pods = _dependent_chain()
    done = provision(topology_pool(), list(reversed(pods)) if reverse else pods)
    for pod in pods:
        done.node(pod)


def test_affinity_to_a_missing_dependency_is_unschedulable() -> None:
    # It: Pod Affinity/Anti-Affinity / should fail to schedule pods with unsatisfiable dependencies
    pod = f.unschedulable_pod(
        labels={"type": "db", "spread": "spread"},
        pod_affinity=[
            f.pod_affinity_term(HOSTNAME, match_labels={"type": "web", "spread": "spread"})
        ],
    )
    provision(topology_pool(), pod).not_scheduled(pod)


def test_affinity_ignores_matching_pods_in_other_namespaces() -> None:
    # It: Pod Affinity/Anti-Affinity / should filter pod affinity topologies by namespace, no matching pods
    ns = f.namespace("other-ns-no-match")
    target = f.unschedulable_pod(labels=S2, namespace="other-ns-no-match")
    follower = _affine(HOSTNAME)
    done = provision(topology_pool(), ns, _hostname_spread_pods(), target, follower)
    done.node(target)
    done.not_scheduled(follower)


def test_affinity_finds_pods_in_listed_namespaces() -> None:
    # It: Pod Affinity/Anti-Affinity / should filter pod affinity topologies by namespace, matching pods namespace list
    ns = f.namespace("other-ns-list")
    target = f.unschedulable_pod(labels=S2, namespace="other-ns-list")
    follower = f.unschedulable_pod(
        pod_affinity=[f.pod_affinity_term(HOSTNAME, match_labels=S2, namespaces=["other-ns-list"])]
    )
    done = provision(topology_pool(), ns, _hostname_spread_pods(), target, follower)
    assert done.node(target).name == done.node(follower).name


def test_empty_namespace_selector_finds_pods_in_every_namespace() -> None:
    # It: Pod Affinity/Anti-Affinity / should filter pod affinity topologies by namespace, empty namespace selector
    ns = f.namespace("empty-ns-selector", labels={"foo": "bar"})
    target = f.unschedulable_pod(labels=S2, namespace="empty-ns-selector")
    follower = f.unschedulable_pod(
        pod_affinity=[
            f.pod_affinity_term(
                HOSTNAME, match_labels=S2, namespace_selector=f.label_selector(match_labels={})
            )
        ]
    )
    done = provision(topology_pool(), ns, _hostname_spread_pods(), target, follower)
    assert done.node(target).name == done.node(follower).name
