# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's topology_test.go: Context "DefaultConstraints".

Cluster-wide default spread constraints come from Karpenter's ``--scheduler-config``
(here: ``simulate(..., scheduler_config=...)``). As in kube-scheduler, a default applies
only to a pod that declares no spread constraints of its own, and its label selector is
deduced per pod from the Services and the ReplicaSet/StatefulSet/ReplicationController
that select it; a pod nothing selects gets no default at all.
"""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.parity.harness import HOSTNAME, ZONE, Round, bind, provision
from tests.scheduling.parity.pools import topology_pool

LABELS = {"test": "test"}
ZONE_DEFAULT = {"topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1}
HOSTNAME_DEFAULT = {"topologyKey": HOSTNAME, "whenUnsatisfiable": "DoNotSchedule", "maxSkew": 1}


def defaults(*constraints: dict[str, Any]) -> dict[str, Any]:
    """Karpenter's ``--scheduler-config`` document with these default constraints."""
    return {"podTopologySpread": {"defaultConstraints": list(constraints)}}


def selecting(constraint: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    """``constraint`` with the selector kube-scheduler deduces, to measure skew with."""
    return {**constraint, "labelSelector": {"matchLabels": dict(labels)}}


def owner(labels: dict[str, str] = LABELS) -> dict[str, Any]:
    """A ReplicaSet selecting ``labels`` (the suite's BeforeEach applies one)."""
    return f.replica_set(template=f.pod(labels=labels))


def owned_pods(count: int, replica_set: dict[str, Any], **options: Any) -> list[dict[str, Any]]:
    labels = replica_set["spec"]["selector"]["matchLabels"]
    return f.unschedulable_pods(
        count, labels=labels, owner_references=[f.owned_by(replica_set)], **options
    )


def zones_pool(*zones: str) -> dict[str, Any]:
    return topology_pool(requirements=[f.nodepool_requirement(ZONE, "In", list(zones))])


def share_one_node(done: Round, pods: list[dict[str, Any]]) -> bool:
    return len(done.node_names(pods)) == 1


def test_default_zonal_spread_applies_to_a_pod_without_constraints() -> None:
    # It: DefaultConstraints / should apply default zonal spread to a pod that declares no constraints of its own
    rs = owner()
    done = provision(
        topology_pool(), rs, owned_pods(4, rs), scheduler_config=defaults(ZONE_DEFAULT)
    )
    assert done.skew(selecting(ZONE_DEFAULT, LABELS)) == [1, 1, 2]


def test_default_hostname_spread_applies_to_a_pod_without_constraints() -> None:
    # It: DefaultConstraints / should apply default hostname spread to a pod that declares no constraints of its own
    rs = owner()
    done = provision(
        topology_pool(), rs, owned_pods(3, rs), scheduler_config=defaults(HOSTNAME_DEFAULT)
    )
    assert done.skew(selecting(HOSTNAME_DEFAULT, LABELS)) == [1, 1, 1]


def test_default_does_not_apply_to_a_pod_with_its_own_constraints() -> None:
    # It: DefaultConstraints / should NOT apply the default to a pod that declares its own constraints
    rs = owner()
    own = f.topology_spread(HOSTNAME, max_skew=3, match_labels=LABELS)
    pods = owned_pods(3, rs, topology_spread_constraints=[own])
    done = provision(topology_pool(), rs, pods, scheduler_config=defaults(HOSTNAME_DEFAULT))
    assert share_one_node(done, pods)


def test_default_carries_min_domains() -> None:
    # It: DefaultConstraints / should carry minDomains through a synthesized default
    rs = owner()
    constraint = {**ZONE_DEFAULT, "minDomains": 3}
    done = provision(
        zones_pool("test-zone-1", "test-zone-2"),
        rs,
        owned_pods(3, rs),
        scheduler_config=defaults(constraint),
    )
    assert done.skew(selecting(constraint, LABELS)) == [1, 1]


def test_unsatisfiable_do_not_schedule_default_is_not_relaxed() -> None:
    # It: DefaultConstraints / should NOT schedule past a synthesized DoNotSchedule default that can't be satisfied
    rs = owner()
    constraint = {**ZONE_DEFAULT, "minDomains": 3}
    pods = owned_pods(3, rs)
    done = provision(zones_pool("test-zone-1"), rs, pods, scheduler_config=defaults(constraint))
    assert sum(done.scheduled(pod) for pod in pods) == 1


def test_unsatisfiable_schedule_anyway_default_is_relaxed() -> None:
    # It: DefaultConstraints / should relax a synthesized ScheduleAnyway default when it can't be satisfied
    rs = owner()
    constraint = {**ZONE_DEFAULT, "minDomains": 3, "whenUnsatisfiable": "ScheduleAnyway"}
    pods = owned_pods(3, rs)
    done = provision(zones_pool("test-zone-1"), rs, pods, scheduler_config=defaults(constraint))
    for pod in pods:
        done.node(pod)


def test_default_does_not_apply_to_a_pod_nothing_selects() -> None:
    # It: DefaultConstraints / should not apply the default to a pod with no owner and no matching service
    pods = f.unschedulable_pods(3, labels=LABELS)
    done = provision(topology_pool(), owner(), pods, scheduler_config=defaults(HOSTNAME_DEFAULT))
    assert share_one_node(done, pods)


def test_deduced_selector_counts_pods_already_in_the_cluster() -> None:
    # It: DefaultConstraints / should count pre-existing cluster pods through the deduced selector
    rs = owner()
    existing = f.node(labels={ZONE: "test-zone-1"})
    name = existing["metadata"]["name"]
    running = [
        bind(f.pod(labels=LABELS, owner_references=[f.owned_by(rs)]), name) for _ in range(2)
    ]
    new = owned_pods(2, rs)
    done = provision(
        zones_pool("test-zone-1", "test-zone-2"),
        rs,
        existing,
        running,
        new,
        scheduler_config=defaults(ZONE_DEFAULT),
    )
    for pod in new:
        assert done.node(pod).zone == "test-zone-2"
    assert done.skew(selecting(ZONE_DEFAULT, LABELS)) == [2, 2]


def test_each_workload_spreads_on_its_own() -> None:
    # It: DefaultConstraints / should spread each workload independently
    other_labels = {"test": "other"}
    rs, other = owner(), owner(other_labels)
    pods = [*owned_pods(3, rs), *owned_pods(3, other)]
    done = provision(topology_pool(), rs, other, pods, scheduler_config=defaults(ZONE_DEFAULT))
    for pod in pods:
        done.node(pod)
    assert done.skew(selecting(ZONE_DEFAULT, LABELS)) == [1, 1, 1]
    assert done.skew(selecting(ZONE_DEFAULT, other_labels)) == [1, 1, 1]


def test_each_deployment_revision_spreads_on_its_own() -> None:
    # It: DefaultConstraints / should spread each Deployment revision independently
    old_labels = {"test": "test", "pod-template-hash": "old"}
    new_labels = {"test": "test", "pod-template-hash": "new"}
    old_rs, new_rs = owner(old_labels), owner(new_labels)
    pods = [*owned_pods(3, old_rs), *owned_pods(3, new_rs)]
    done = provision(topology_pool(), old_rs, new_rs, pods, scheduler_config=defaults(ZONE_DEFAULT))
    for pod in pods:
        done.node(pod)
    assert done.skew(selecting(ZONE_DEFAULT, old_labels)) == [1, 1, 1]
    assert done.skew(selecting(ZONE_DEFAULT, new_labels)) == [1, 1, 1]


def test_selector_deduced_from_a_service_when_the_owner_is_unsupported() -> None:
    # It: DefaultConstraints / should deduce a selector from a matching service for a pod with no supported owner
    job = f.owner_reference("Job", "test-job", api_version="batch/v1", uid="test-job-uid")
    pods = f.unschedulable_pods(4, labels=LABELS, owner_references=[job])
    done = provision(
        topology_pool(),
        f.service(selector=LABELS),
        pods,
        scheduler_config=defaults(ZONE_DEFAULT),
    )
    assert done.skew(selecting(ZONE_DEFAULT, LABELS)) == [1, 1, 2]


def test_without_default_constraints_owned_pods_pack_together() -> None:
    # It: DefaultConstraints / should be a no-op when no default constraints are configured
    rs = owner()
    pods = owned_pods(3, rs)
    done = provision(topology_pool(), rs, pods)
    assert share_one_node(done, pods)
