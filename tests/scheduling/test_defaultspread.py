"""Cluster-wide default topology spread constraints (Karpenter's ``--scheduler-config``)."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.errors import UsageError
from karpy.scheduling.defaultspread import (
    SchedulerConfigError,
    Workloads,
    owner_selector_from_dict,
    parse_scheduler_config,
    service_selector_from_dict,
)
from karpy.scheduling.pods import pod_from_dict
from karpy.simulate import simulate
from tests import factories as f
from tests.scheduling.scenario import HOSTNAME, ZONE, Round, catalog

APP = {"app": "web"}


def config(*constraints: dict[str, Any]) -> dict[str, Any]:
    return {"podTopologySpread": {"defaultConstraints": list(constraints)}}


def zone_default(**options: Any) -> dict[str, Any]:
    return f.topology_spread(ZONE, **options)


def service(
    selector: dict[str, str] | None, name: str = "svc", namespace: str = "default"
) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def replica_set(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return f.replica_set(name, template=f.pod(labels=labels))


def replication_controller(name: str, selector: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": selector, "template": {"metadata": {"labels": selector}}},
    }


def owned(
    owner: dict[str, Any], count: int, labels: dict[str, str], prefix: str = "p"
) -> list[dict[str, Any]]:
    return [
        f.pod(
            f"{prefix}-{i}",
            labels=labels,
            owner_references=[f.owned_by(owner)],
            requests={"cpu": "100m"},
        )
        for i in range(count)
    ]


def deduce(*objects: dict[str, Any], pod: dict[str, Any]) -> str | None:
    workloads = Workloads.build(
        [service_selector_from_dict(o) for o in objects if o["kind"] == "Service"],
        [owner_selector_from_dict(o) for o in objects if o["kind"] != "Service"],
    )
    selector = workloads.selector_for(pod_from_dict(pod))
    return None if selector is None else selector.render()


# -- the configuration --------------------------------------------------------------------


def test_a_config_yields_its_default_constraints() -> None:
    (constraint,) = parse_scheduler_config(config(zone_default(max_skew=2, min_domains=3)))
    assert (constraint.topology_key, constraint.max_skew, constraint.min_domains) == (ZONE, 2, 3)
    assert parse_scheduler_config(None) == ()
    assert parse_scheduler_config({"podTopologySpread": {}}) == ()


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"other": {}}, 'unknown field "other"'),
        (config({**zone_default(), "extra": 1}), 'unknown field "extra"'),
        (
            config(zone_default(max_skew=0)),
            r"defaultConstraints\[0\]\.maxSkew must be greater than 0",
        ),
        (config({"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}), "topologyKey must be set"),
        (config(f.topology_spread("bad key!")), "is not a valid label name"),
        (config(zone_default(when_unsatisfiable="Sometimes")), "must be one of"),
        (config(zone_default(match_labels=APP)), "labelSelector must not be set"),
        (config(zone_default(match_label_keys=["app"])), "matchLabelKeys must not be set"),
        (config(zone_default(), zone_default(max_skew=2)), r"\[1\] is a duplicate of \[0\]"),
    ],
)
def test_configs_kube_scheduler_would_refuse_are_refused(
    document: dict[str, Any], message: str
) -> None:
    with pytest.raises(SchedulerConfigError, match=message):
        parse_scheduler_config(document)


def test_simulate_reports_an_unusable_config_as_usage_error() -> None:
    with pytest.raises(UsageError, match="scheduler config"):
        simulate([], catalog(), scheduler_config=config(zone_default(max_skew=0)))


# -- deducing the selector ------------------------------------------------------------------


def test_a_replica_set_contributes_its_selector_not_the_pod_labels() -> None:
    rs = replica_set("web", {"app": "web", "pod-template-hash": "abc"})
    pod = f.pod(
        labels={"app": "web", "pod-template-hash": "abc", "extra": "x"},
        owner_references=[f.owned_by(rs)],
    )
    assert deduce(rs, pod=pod) == "app=web,pod-template-hash=abc"


def test_a_replica_set_selector_expressions_are_kept() -> None:
    rs = replica_set("web", APP)
    rs["spec"]["selector"] = {"matchExpressions": [f.match_expression("app", "NotIn", ["other"])]}
    pod = f.pod(labels=APP, owner_references=[f.owned_by(rs)])
    assert deduce(rs, pod=pod) == "app NotIn [other]"


def test_matching_services_contribute_their_selectors() -> None:
    pod = f.pod(labels={"app": "web", "tier": "front", "extra": "x"})
    services = (service(APP, "a"), service({"tier": "front"}, "b"), service({"app": "other"}, "c"))
    assert deduce(*services, pod=pod) == "app=web,tier=front"


@pytest.mark.parametrize(
    "svc",
    [service(None), service({}), service(APP, namespace="elsewhere")],
    ids=["no-selector", "empty-selector", "other-namespace"],
)
def test_services_that_contribute_nothing(svc: dict[str, Any]) -> None:
    assert deduce(svc, pod=f.pod(labels=APP)) is None


def test_unsupported_or_missing_owners_contribute_nothing() -> None:
    job = f.pod(
        labels=APP, owner_references=[f.owner_reference("Job", "j", api_version="batch/v1")]
    )
    assert deduce(pod=job) is None
    gone = f.pod(labels=APP, owner_references=[f.owner_reference("ReplicaSet", "gone")])
    assert deduce(pod=gone) is None
    rs = replica_set("web", APP)
    not_controller = f.pod(labels=APP, owner_references=[f.owned_by(rs, controller=False)])
    assert deduce(rs, pod=not_controller) is None


def test_a_replication_controller_selector_overrides_a_service_label() -> None:
    rc = replication_controller("legacy", {"app": "legacy"})
    pod = f.pod(labels=APP, owner_references=[f.owned_by(rc)])
    assert deduce(rc, service(APP), pod=pod) == "app=legacy"


def test_a_replica_set_selector_conflicting_with_a_service_selects_nothing() -> None:
    rs = replica_set("web", {"app": "other"})
    pod = f.pod(labels=APP, owner_references=[f.owned_by(rs)])
    workloads = Workloads.build(
        [service_selector_from_dict(service(APP))], [owner_selector_from_dict(rs)]
    )
    selector = workloads.selector_for(pod_from_dict(pod))
    assert selector is not None
    assert not selector.matches(APP)
    assert not selector.matches({"app": "other"})


# -- scheduling with defaults ---------------------------------------------------------------


def test_pods_without_constraints_spread_by_the_default() -> None:
    rs = replica_set("web", APP)
    pods = owned(rs, 4, APP)
    done = Round(rs, pods, scheduler_config=config(zone_default()))
    assert done.counts(pods, ZONE) == [1, 1, 2]


def test_a_hostname_default_puts_each_pod_on_its_own_node() -> None:
    rs = replica_set("web", APP)
    pods = owned(rs, 3, APP)
    done = Round(rs, pods, scheduler_config=config(f.topology_spread(HOSTNAME)))
    assert len({done.node_of(p) for p in pods}) == 3


def test_without_a_config_nothing_is_spread() -> None:
    rs = replica_set("web", APP)
    pods = owned(rs, 3, APP)
    done = Round(rs, pods)
    assert len({done.node_of(p) for p in pods}) == 1


def test_a_pod_with_its_own_constraints_keeps_them() -> None:
    rs = replica_set("web", APP)
    own = [f.topology_spread(HOSTNAME, max_skew=3, match_labels=APP)]
    pods = [
        f.pod(
            f"p-{i}", labels=APP, owner_references=[f.owned_by(rs)], topology_spread_constraints=own
        )
        for i in range(3)
    ]
    done = Round(rs, pods, scheduler_config=config(f.topology_spread(HOSTNAME)))
    assert len({done.node_of(p) for p in pods}) == 1


def test_a_pod_with_nothing_to_deduce_from_is_not_defaulted() -> None:
    pods = f.pods(3, labels=APP, requests={"cpu": "100m"})
    done = Round(pods, scheduler_config=config(f.topology_spread(HOSTNAME)))
    assert len({done.node_of(p) for p in pods}) == 1


def test_each_workload_spreads_on_its_own() -> None:
    web, other = replica_set("web", APP), replica_set("other", {"app": "other"})
    web_pods, other_pods = owned(web, 3, APP, "w"), owned(other, 3, {"app": "other"}, "o")
    done = Round(web, other, web_pods, other_pods, scheduler_config=config(zone_default()))
    assert done.counts(web_pods, ZONE) == [1, 1, 1]
    assert done.counts(other_pods, ZONE) == [1, 1, 1]


def test_existing_pods_are_counted_through_the_deduced_selector() -> None:
    rs = replica_set("web", APP)
    pool = f.nodepool(
        "default", requirements=[f.match_expression(ZONE, "In", ["zone-a", "zone-b"])]
    )
    node = f.node("n1", labels={ZONE: "zone-a"}, allocatable={"cpu": "1", "pods": "10"})
    bound = [
        f.pod(f"old-{i}", labels=APP, owner_references=[f.owned_by(rs)], node_name="n1")
        for i in range(2)
    ]
    pods = owned(rs, 2, APP)
    done = Round(pool, rs, node, bound, pods, scheduler_config=config(zone_default()))
    assert {done.label(p, ZONE) for p in pods} == {"zone-b"}


def test_a_service_gives_a_job_pod_a_selector() -> None:
    job = f.owner_reference("Job", "batch", api_version="batch/v1")
    pods = [
        f.pod(f"p-{i}", labels=APP, owner_references=[job], requests={"cpu": "100m"})
        for i in range(4)
    ]
    done = Round(service(APP), pods, scheduler_config=config(zone_default()))
    assert done.counts(pods, ZONE) == [1, 1, 2]


def test_an_unsatisfiable_required_default_leaves_pods_unschedulable() -> None:
    rs = replica_set("web", APP)
    pool = f.nodepool("default", requirements=[f.match_expression(ZONE, "In", ["zone-a"])])
    pods = owned(rs, 3, APP)
    required = Round(pool, rs, pods, scheduler_config=config(zone_default(min_domains=3)))
    assert len(required.reasons) == 2
    anyway = zone_default(min_domains=3, when_unsatisfiable="ScheduleAnyway")
    relaxed = Round(pool, rs, pods, scheduler_config=config(anyway))
    assert not relaxed.reasons
