"""Topology spread, pod affinity and anti-affinity through whole rounds."""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.scenario import HOSTNAME, ZONE, Round, catalog, entry

WEB = {"app": "web"}


def spread_pods(count: int, key: str = ZONE, **spread: Any) -> list[dict[str, Any]]:
    tsc = f.topology_spread(key, match_labels=WEB, **spread)
    return [
        f.pod(f"w{i}", labels=WEB, requests={"cpu": "100m"}, topology_spread_constraints=[tsc])
        for i in range(count)
    ]


def zone_node(name: str, zone: str, **options: Any) -> dict[str, Any]:
    return f.node(
        name,
        labels={ZONE: zone, "kubernetes.io/arch": "amd64"},
        allocatable={"cpu": "1", "pods": "1"},
        **options,
    )


def test_zonal_spread_balances_across_zones() -> None:
    pods = spread_pods(7)
    done = Round(pods)
    assert done.counts(pods, ZONE) == [2, 2, 3]


def test_hostname_spread_puts_one_pod_per_node_at_skew_one() -> None:
    pods = spread_pods(4, HOSTNAME)
    done = Round(pods)
    assert len(done.claims) == 4


def test_hostname_spread_allows_max_skew_pods_per_node() -> None:
    pods = spread_pods(4, HOSTNAME, max_skew=2)
    assert len(Round(pods).claims) == 2


def test_existing_pods_count_towards_the_spread() -> None:
    # zone-a already holds two matching pods on a full node: new pods avoid it
    nodes = [zone_node("a1", "zone-a"), zone_node("a2", "zone-a")]
    bound = [f.pod(f"old{i}", labels=WEB, node_name=f"a{i + 1}") for i in range(2)]
    pods = spread_pods(2)
    done = Round(nodes, bound, pods)
    assert sorted(done.label(p, ZONE) or "" for p in pods) == ["zone-b", "zone-c"]


def test_min_domains_counts_missing_domains_as_empty() -> None:
    pool = f.nodepool(
        "default", requirements=[f.nodepool_requirement(ZONE, "In", ["zone-a", "zone-b"])]
    )
    pods = spread_pods(4, min_domains=3)
    done = Round(pool, pods)
    # only two zones exist, so the global minimum stays 0 and each zone takes one pod
    assert done.counts(pods, ZONE) == [1, 1]
    assert len(done.reasons) == 2


def test_schedule_anyway_spread_is_relaxed_when_unsatisfiable() -> None:
    pool = f.nodepool("default", requirements=[f.nodepool_requirement(ZONE, "In", ["zone-a"])])
    tsc = f.topology_spread(HOSTNAME, match_labels=WEB, when_unsatisfiable="ScheduleAnyway")
    pods = [
        f.pod(f"w{i}", labels=WEB, requests={"cpu": "100m"}, topology_spread_constraints=[tsc])
        for i in range(3)
    ]
    done = Round(pool, pods)
    assert not done.reasons


def test_match_label_keys_spread_each_revision_separately() -> None:
    tsc = f.topology_spread(HOSTNAME, match_labels=WEB, match_label_keys=["rev"])
    pods = [
        f.pod(
            f"{rev}{i}",
            labels={**WEB, "rev": rev},
            requests={"cpu": "100m"},
            topology_spread_constraints=[tsc],
        )
        for rev in ("a", "b")
        for i in range(2)
    ]
    # two revisions, each one pod per node: two nodes with one pod of each revision
    assert len(Round(pods).claims) == 2


def test_node_taints_policy_honor_ignores_domains_of_untolerated_pools() -> None:
    tainted = f.nodepool(
        "tainted",
        taints=[f.taint("dedicated", "x")],
        requirements=[f.nodepool_requirement(ZONE, "In", ["zone-c"])],
    )
    plain = f.nodepool(
        "plain", requirements=[f.nodepool_requirement(ZONE, "In", ["zone-a", "zone-b"])]
    )
    honor = spread_pods(4, node_taints_policy="Honor")
    ignore = spread_pods(4)
    assert not Round(tainted, plain, honor).reasons
    # with Ignore, zone-c counts as an empty domain nobody can reach
    assert len(Round(tainted, plain, ignore).reasons) == 2


def test_self_affinity_keeps_pods_in_one_zone() -> None:
    term = f.pod_affinity_term(ZONE, match_labels=WEB)
    pods = [
        f.pod(f"w{i}", labels=WEB, requests={"cpu": "3"}, pod_affinity=[term]) for i in range(3)
    ]
    done = Round(pods)
    assert len({done.label(p, ZONE) for p in pods}) == 1


def test_affinity_follows_an_existing_pod() -> None:
    node = zone_node("b1", "zone-b")
    target = f.pod("db", labels={"app": "db"}, node_name="b1")
    follower = f.pod(
        "app",
        requests={"cpu": "100m"},
        pod_affinity=[f.pod_affinity_term(ZONE, match_labels={"app": "db"})],
    )
    done = Round(node, target, follower)
    assert done.label(follower, ZONE) == "zone-b"


def test_affinity_to_a_missing_pod_is_unschedulable() -> None:
    follower = f.pod("app", pod_affinity=[f.pod_affinity_term(ZONE, match_labels={"app": "db"})])
    done = Round(follower)
    assert "pod affinity" in (done.reason(follower) or "")


def test_hostname_anti_affinity_gives_each_pod_a_node() -> None:
    term = f.pod_affinity_term(HOSTNAME, match_labels=WEB)
    pods = [
        f.pod(f"w{i}", labels=WEB, requests={"cpu": "100m"}, pod_anti_affinity=[term])
        for i in range(5)
    ]
    assert len(Round(pods).claims) == 5


def test_zone_anti_affinity_blocks_every_zone_a_planned_node_might_land_in() -> None:
    # Karpenter's "Schrödinger" rule: until launch picks a zone, the first pod could be in
    # any of them, so the others wait for the next round.
    term = f.pod_affinity_term(ZONE, match_labels=WEB)
    pods = [
        f.pod(f"w{i}", labels=WEB, requests={"cpu": "100m"}, pod_anti_affinity=[term])
        for i in range(3)
    ]
    done = Round(pods)
    assert len(done.claims) == 1
    assert len(done.reasons) == 2


def test_zone_anti_affinity_with_pinned_zones_uses_each_zone_once() -> None:
    term = f.pod_affinity_term(ZONE, match_labels=WEB)
    pods = [
        f.pod(
            f"w{i}",
            labels=WEB,
            requests={"cpu": "100m"},
            pod_anti_affinity=[term],
            node_selector={ZONE: z},
        )
        for i, z in enumerate(("zone-a", "zone-b", "zone-c", "zone-a"))
    ]
    done = Round(pods)
    assert done.counts(pods, ZONE) == [1, 1, 1]
    assert len(done.reasons) == 1


def test_an_existing_pods_anti_affinity_keeps_selected_pods_away() -> None:
    node = zone_node("a1", "zone-a")
    guard = f.pod(
        "guard", node_name="a1", pod_anti_affinity=[f.pod_affinity_term(ZONE, match_labels=WEB)]
    )
    pods = [
        f.pod(f"w{i}", labels=WEB, requests={"cpu": "100m"}, node_selector={ZONE: "zone-a"})
        for i in range(1)
    ]
    other = f.pod("other", labels=WEB, requests={"cpu": "100m"})
    done = Round(node, guard, pods, other)
    assert done.reason(pods[0]) is not None
    assert done.label(other, ZONE) != "zone-a"


def test_namespace_selectors_widen_affinity_to_other_namespaces() -> None:
    node = zone_node("c1", "zone-c")
    target = f.pod("db", namespace="data", labels={"app": "db"}, node_name="c1")
    namespace = f.namespace("data", labels={"team": "data"})
    term = f.pod_affinity_term(
        ZONE, match_labels={"app": "db"}, namespace_selector={"matchLabels": {"team": "data"}}
    )
    follower = f.pod("app", requests={"cpu": "100m"}, pod_affinity=[term])
    done = Round(node, namespace, target, follower)
    assert done.label(follower, ZONE) == "zone-c"


def test_spread_on_a_custom_label_from_nodepool_labels() -> None:
    racks = [f.nodepool(f"rack-{r}", labels={"rack": r}) for r in ("1", "2")]
    pods = spread_pods(4, "rack")
    done = Round(racks, pods, types=catalog(entry("m", 4, 16)))
    assert done.counts(pods, "rack") == [2, 2]
