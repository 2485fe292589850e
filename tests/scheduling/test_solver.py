"""The solver's order of capacity, packing, pools, limits, relaxation and time bound."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.solver import Scheduler
from karpy.simulate import simulate
from tests import factories as f
from tests.scheduling.builders import context, instance_type, pod
from tests.scheduling.scenario import ZONE, Round, catalog, entry

CPU = {"cpu": "1"}


def existing_node(name: str, cpu: str = "4", **options: Any) -> dict[str, Any]:
    labels = {"kubernetes.io/arch": "amd64", ZONE: "zone-a", **options.pop("labels", {})}
    return f.node(
        name, labels=labels, allocatable={"cpu": cpu, "memory": "16Gi", "pods": "110"}, **options
    )


def test_pods_go_to_existing_nodes_before_new_ones() -> None:
    web = f.pod("web", requests=CPU)
    done = Round(existing_node("n1"), web)
    assert done.node_of(web) == "n1"
    assert done.doc["nodeClaims"] == []


def test_bound_pods_use_up_existing_capacity() -> None:
    bound = f.pod("old", requests={"cpu": "3500m"}, node_name="n1")
    web = f.pod("web", requests=CPU)
    done = Round(existing_node("n1"), bound, web)
    assert done.node_of(web) != "n1"


def test_initialized_nodes_are_tried_before_uninitialized_ones() -> None:
    claim = f.nodeclaim(
        "a-claim", nodepool="default", capacity={"cpu": "4"}, allocatable={"cpu": "4", "pods": "10"}
    )
    web = f.pod("web", requests=CPU)
    done = Round(claim, existing_node("z-node"), web)
    assert done.node_of(web) == "z-node"


def test_pods_that_fit_together_share_one_new_node() -> None:
    pods = f.pods(3, requests={"cpu": "500m"})
    done = Round(pods)
    assert len(done.doc["nodeClaims"]) == 1
    assert done.doc["nodeClaims"][0]["instanceType"] == "small"


def test_planned_nodes_are_filled_fewest_pods_first() -> None:
    lonely: dict[str, Any] = {
        "labels": {"app": "lonely"},
        "pod_anti_affinity": [
            f.pod_affinity_term("kubernetes.io/hostname", match_labels={"app": "lonely"})
        ],
    }
    big = [f.pod(f"big-{i}", requests={"cpu": "3"}, **lonely) for i in range(2)]
    small = [f.pod(f"small-{i}", requests={"cpu": "100m"}) for i in range(2)]
    done = Round(big, small)
    assert len(done.claims) == 2
    assert {done.node_of(p) for p in small} == set(done.claims)


def test_the_heaviest_nodepool_is_tried_first_and_lighter_ones_catch_the_rest() -> None:
    heavy = f.nodepool(
        "heavy",
        weight=10,
        requirements=[f.nodepool_requirement("kubernetes.io/arch", "In", ["amd64"])],
    )
    light = f.nodepool("light")
    amd = f.pod("amd", requests=CPU)
    arm = f.pod("arm", requests=CPU, node_selector={"kubernetes.io/arch": "arm64"})
    types = catalog(
        entry("amd", 4, 16), entry("arm", 4, 16, labels={"kubernetes.io/arch": "arm64"})
    )
    done = Round(heavy, light, amd, arm, types=types)
    assert done.claim_of(amd)["nodePool"] == "heavy"
    assert done.claim_of(arm)["nodePool"] == "light"


def test_nodepool_limits_are_never_exceeded() -> None:
    pool = f.nodepool("default", limits={"cpu": "20"})
    pods = [f.pod(f"p{i}", requests={"cpu": "10"}) for i in range(3)]
    done = Round(pool, pods)
    # a 16-cpu node counts as 16 of the 20: the second big pod has nowhere to go
    assert len(done.claims) == 1
    assert sum(1 for p in pods if done.reason(p)) == 2
    assert "limits" in (done.reason(pods[2]) or "")


def test_a_node_limit_counts_planned_nodes() -> None:
    pool = f.nodepool("default", limits={"nodes": "1"})
    lonely: dict[str, Any] = {
        "labels": {"app": "x"},
        "pod_anti_affinity": [
            f.pod_affinity_term("kubernetes.io/hostname", match_labels={"app": "x"})
        ],
    }
    pods = [f.pod(f"p{i}", requests=CPU, **lonely) for i in range(2)]
    done = Round(pool, pods)
    assert len(done.claims) == 1


def test_existing_nodes_of_a_pool_count_against_its_limits() -> None:
    pool = f.nodepool("default", limits={"cpu": "10"})
    node = existing_node("n1", cpu="1", labels={"karpenter.sh/nodepool": "default"})
    node["status"]["capacity"] = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    web = f.pod("web", requests={"cpu": "3"})
    done = Round(pool, node, web)
    assert done.reason(web) is not None


def test_daemonset_overhead_sizes_new_nodes() -> None:
    daemon = f.daemonset("agent", template=f.pod(requests={"cpu": "1500m"}))
    web = f.pod("web", requests={"cpu": "1"})
    done = Round(daemon, web)
    claim = done.claim_of(web)
    assert claim["instanceType"] == "medium"
    assert claim["requests"]["cpu"] == "2500m"
    assert claim["requests"]["pods"] == "2"


def test_daemonsets_that_would_not_run_on_a_pool_add_nothing() -> None:
    daemon = f.daemonset(
        "gpu-agent", template=f.pod(requests={"cpu": "1500m"}, node_selector={"gpu": "true"})
    )
    web = f.pod("web", requests={"cpu": "1"})
    done = Round(daemon, web)
    assert done.claim_of(web)["instanceType"] == "small"


def test_preferences_are_relaxed_when_they_cannot_be_met() -> None:
    preferring = f.pod(
        "p", requests=CPU, node_preferences=[f.match_expression(ZONE, "In", ["nowhere"])]
    )
    done = Round(preferring)
    assert done.node_of(preferring) is not None


def test_required_node_affinity_terms_are_alternatives() -> None:
    either = f.pod(
        "either",
        requests=CPU,
        node_affinity_terms=[
            [f.match_expression(ZONE, "In", ["nowhere"])],
            [f.match_expression(ZONE, "In", ["zone-b"])],
        ],
    )
    done = Round(either)
    assert done.label(either, ZONE) == "zone-b"


def test_prefer_no_schedule_taints_are_tolerated_as_a_last_resort() -> None:
    pool = f.nodepool("default", taints=[f.taint("soft", effect="PreferNoSchedule")])
    web = f.pod("web", requests=CPU)
    assert Round(pool, web).node_of(web) is not None


def test_ignoring_preferences_drops_them_up_front() -> None:
    anti: dict[str, Any] = {
        "labels": {"app": "web"},
        "pod_anti_affinity_preferred": [
            f.weighted(f.pod_affinity_term("kubernetes.io/hostname", match_labels={"app": "web"}))
        ],
    }
    pods = [f.pod(f"w{i}", requests={"cpu": "100m"}, **anti) for i in range(4)]
    assert len(Round(pods).claims) == 4
    assert len(Round(pods, preference_policy="Ignore").claims) == 1


def test_pods_with_the_same_host_port_get_different_nodes() -> None:
    pods = [f.pod(f"p{i}", requests={"cpu": "100m"}, host_ports=[8080]) for i in range(2)]
    done = Round(pods)
    assert done.node_of(pods[0]) != done.node_of(pods[1])


def test_unavailable_offerings_are_not_launched() -> None:
    cheap = entry("cheap", 4, 16, price=0.01)
    for offering in cheap["offerings"]:
        offering["available"] = False
    web = f.pod("web", requests=CPU)
    done = Round(web, types=catalog(cheap, entry("dear", 4, 16, price=1.0)))
    assert done.claim_of(web)["instanceType"] == "dear"


def test_the_cheapest_offering_is_launched_and_spot_wins_ties() -> None:
    web = f.pod("web", requests=CPU)
    types = catalog(
        entry(
            "m", 4, 16, price=0.1, capacity_types=("on-demand", "spot"), zones=("zone-b", "zone-a")
        )
    )
    claim = Round(web, types=types).claim_of(web)
    assert (claim["capacityType"], claim["zone"], claim["price"]) == ("spot", "zone-a", 0.1)


def test_every_compatible_type_stays_an_option_cheapest_first() -> None:
    web = f.pod("web", requests={"cpu": "3"})
    claim = Round(web).claim_of(web)
    assert claim["instanceTypeOptions"] == ["medium", "large"]


def test_results_are_deterministic() -> None:
    spread = f.topology_spread(ZONE, match_labels={"app": "web"})
    pods = [
        f.pod(
            f"w{i}",
            labels={"app": "web"},
            requests={"cpu": "300m"},
            topology_spread_constraints=[spread],
        )
        for i in range(9)
    ]
    objects = [f.nodepool("default"), *pods]
    first, second = simulate(objects, catalog()), simulate(list(reversed(objects)), catalog())
    first["stats"].pop("seconds")
    second["stats"].pop("seconds")
    assert first == second


def test_the_time_budget_defers_the_remaining_pods() -> None:
    ctx = context([instance_type("m")])
    ticks = itertools.count()
    pods = [pod(f"p{i}", requests={"cpu": "100m"}) for i in range(5)]
    results = Scheduler(ctx, ClusterSnapshot()).solve(
        pods, clock=lambda: float(next(ticks)), budget=3.0
    )
    assert results.scheduled == 2
    assert len(results.deferred) == 3
    assert results.unschedulable == ()


def test_pods_on_a_deleting_node_are_rescheduled() -> None:
    node = existing_node("old", deletion_timestamp="2024-01-01T00:00:00Z")
    moving = f.pod("moving", requests=CPU, node_name="old")
    done = Round(node, moving)
    assert done.node_of(moving) in done.claims


def test_pods_blocked_by_a_pdb_are_not_rescheduled() -> None:
    node = existing_node("old", deletion_timestamp="2024-01-01T00:00:00Z")
    moving = f.pod("moving", labels={"app": "db"}, requests=CPU, node_name="old")
    pdb = f.pod_disruption_budget("db", match_labels={"app": "db"}, max_unavailable=0)
    done = Round(node, moving, pdb)
    assert done.doc["stats"]["pendingPods"] == 0


def test_best_effort_min_values_launches_what_it_can() -> None:
    pool = f.nodepool(
        "default",
        requirements=[
            f.nodepool_requirement("node.kubernetes.io/instance-type", "Exists", min_values=5)
        ],
    )
    web = f.pod("web", requests=CPU)
    assert Round(pool, web).reason(web) is not None
    assert Round(pool, web, min_values_policy="BestEffort").node_of(web) is not None


def test_full_nodes_are_skipped_without_changing_decisions() -> None:
    # 4-cpu nodes take three 1-cpu pods; later pods must open new nodes, never overfill.
    types = catalog(entry("four", 4, 16))
    pods = [f.pod(f"p{i:02d}", requests={"cpu": "1"}) for i in range(10)]
    done = Round(pods, types=types)
    assert len(done.claims) == 4
    per_claim = sorted(len(c["pods"]) for c in done.claims.values())
    assert per_claim == [1, 3, 3, 3]


def test_a_preferred_hostname_that_no_node_has_is_relaxed() -> None:
    big = f.pod("big", labels={"app": "foo"}, requests={"cpu": "2"})
    picky = f.pod(
        "picky",
        requests={"cpu": "1"},
        node_preferences=[f.match_expression("kubernetes.io/hostname", "In", ["value-1"])],
    )
    done = Round(big, picky)
    assert done.node_of(big) == done.node_of(picky)


def test_a_running_daemonset_pod_sizes_the_overhead() -> None:
    daemon = f.daemonset("agent", template=f.pod(requests={"cpu": "3"}))
    running = f.pod(
        "agent-x",
        requests={"cpu": "500m"},
        node_name="elsewhere",
        owner_references=[f.owner_reference("DaemonSet", "agent")],
    )
    web = f.pod("web", requests={"cpu": "1"})
    claim = Round(daemon, running, web).claim_of(web)
    assert claim["requests"]["cpu"] == "1500m"
    assert claim["instanceType"] == "small"


@pytest.mark.parametrize("naming", ["random", "deployment", "reverse"])
def test_claim_lanes_skip_claims_without_changing_decisions(naming: str) -> None:
    """The benchmark's diverse pods, however named: walking only the planned claims in
    zones topology allows decides what walking every claim decides."""
    from karpy.apis.labels import AWS_WELL_KNOWN_LABELS
    from karpy.apis.nodepool import NodePool
    from karpy.scheduling.catalog import parse_catalog
    from karpy.scheduling.context import build_context
    from karpy.scheduling.pods import pod_from_dict
    from tests.bench.bench_scheduling import Workload, nodepool
    from tests.bench.bench_scheduling import catalog as bench_catalog

    workload = Workload()
    objects = workload.diverse(1_000) if naming == "random" else workload.named(1_000, naming)
    parsed = parse_catalog(bench_catalog(40))
    built = build_context(
        [NodePool.from_dict(nodepool())],
        parsed.instance_types,
        provider_labels=AWS_WELL_KNOWN_LABELS | parsed.well_known_labels,
    )

    def solve(*, lanes: bool) -> list[tuple[str, tuple[str, ...]]]:
        scheduler = Scheduler(built, ClusterSnapshot(), lanes=lanes)
        results = scheduler.solve([pod_from_dict(o) for o in objects])
        assert not results.unschedulable and not results.deferred
        return sorted(
            (c.instance_type.name, tuple(sorted(p.name for p in c.pods)))
            for c in results.new_nodeclaims
        )

    assert solve(lanes=True) == solve(lanes=False)
