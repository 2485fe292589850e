"""One scheduling cycle of the stand-in: how many nodes it looks at, how it scores them,
and that it is its own judge (nothing of karpy's solver in it)."""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from karpy.sandbox import cli
from karpy.sandbox.apiserver.store import Entry
from karpy.sandbox.cluster import SandboxCluster
from karpy.sandbox.cluster.kubepod import node_spec, pod_info
from karpy.sandbox.cluster.kubevolumes import VolumeView
from karpy.sandbox.cluster.scheduleone import Cycle, num_feasible_nodes_to_find
from karpy.sandbox.cluster.unschedulable import NoFit
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import cloud_node, node_ready

REPO = Path(__file__).resolve().parents[3]
STAND_IN = "karpy.sandbox.cluster.scheduler"
HOSTNAME = "kubernetes.io/hostname"


def node(name: str, cpu: str = "4") -> dict[str, Any]:
    return f.node(name, allocatable={"cpu": cpu, "memory": "16Gi", "pods": "110"})


@pytest.mark.parametrize(
    ("nodes", "found"),
    [(50, 50), (100, 100), (200, 100), (1000, 420), (5000, 500), (8000, 400), (40000, 2000)],
)
def test_feasible_nodes_to_find_follow_the_adaptive_percentage(nodes, found):
    # schedule_one.go numFeasibleNodesToFind with percentageOfNodesToScore unset:
    # all nodes below 100, else max(5, 50 - nodes/125) percent, at least 100.
    assert num_feasible_nodes_to_find(nodes) == found


def test_a_scan_stops_once_enough_nodes_fit_and_the_next_pod_starts_after_it():
    nodes = [node(f"n{i:03}") for i in range(300)]
    cycle = Cycle([node_spec(n) for n in nodes], [])
    cycle.schedule(pod_info(f.pod("p", requests={"cpu": "100m"})))
    # 300 nodes: 48% of them (144) is enough; the scan stopped there, where the next begins.
    assert cycle.next_start == 144


def _busy_and_idle(scoring: Any) -> Cycle:
    nodes = [node("busy"), node("idle")]
    occupant = f.pod("occupant", node_name="busy", requests={"cpu": "2", "memory": "1Gi"})
    return Cycle([node_spec(n) for n in nodes], [pod_info(occupant)], scoring=scoring)


def test_least_allocated_sends_a_pod_to_the_idle_node():
    cycle = _busy_and_idle("LeastAllocated")
    assert cycle.schedule(pod_info(f.pod("p", requests={"cpu": "1", "memory": "1Gi"}))) == "idle"


def test_most_allocated_packs_a_pod_onto_the_busy_node():
    cycle = _busy_and_idle("MostAllocated")
    assert cycle.schedule(pod_info(f.pod("p", requests={"cpu": "1", "memory": "1Gi"}))) == "busy"


def test_untolerated_prefer_no_schedule_taints_score_lower():
    nodes = [f.node("tainted", taints=[f.taint("spot", effect="PreferNoSchedule")],
                    allocatable={"cpu": "4", "memory": "16Gi", "pods": "110"}),
             node("plain")]  # fmt: skip
    cycle = Cycle([node_spec(n) for n in nodes], [])
    assert cycle.schedule(pod_info(f.pod("p"))) == "plain"


def test_pods_without_requests_are_scored_with_upstream_non_zero_defaults():
    info = pod_info(f.pod("p"))
    assert (info.nonzero_cpu, info.nonzero_memory) == (100, 200 * 1024 * 1024 * 1000)
    assert info.requests == {}


async def test_the_cluster_scores_with_most_allocated_when_asked():
    async with SandboxCluster(
        node_ready_delay=0.05, pod_start_delay=0.05, scheduler_debounce=0.02,
        scheduler_scoring="MostAllocated",
    ) as cluster:  # fmt: skip
        store = cluster.store
        for name in ("node-a", "node-b"):
            store.create("nodes", cloud_node(name, cpu="8"))
        await eventually(lambda: node_ready(cluster, "node-a") and node_ready(cluster, "node-b"))
        store.create("pods", f.pod("first", requests={"cpu": "1"}))
        first = await eventually(
            lambda: store.get("pods", "first", "default")["spec"].get("nodeName")
        )
        store.create("pods", f.pod("second", requests={"cpu": "1"}))
        second = await eventually(
            lambda: store.get("pods", "second", "default")["spec"].get("nodeName")
        )
        assert second == first  # packed, where LeastAllocated would pick the empty node


def test_the_scoring_flag_defaults_to_least_allocated_and_names_two_strategies():
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert parser.parse_args(["cluster"]).scheduler_scoring == "LeastAllocated"
    chosen = parser.parse_args(["cluster", "--scheduler-scoring", "MostAllocated"])
    assert chosen.scheduler_scoring == "MostAllocated"
    with pytest.raises(SystemExit):
        parser.parse_args(["cluster", "--scheduler-scoring", "Balanced"])


def _imports(module: str) -> set[str]:
    path = REPO / (module.replace(".", "/") + ".py")
    found = set()
    for stmt in ast.walk(ast.parse(path.read_text())):
        if isinstance(stmt, ast.ImportFrom) and stmt.module:
            found.add(stmt.module)
            found.update(f"{stmt.module}.{alias.name}" for alias in stmt.names)
        elif isinstance(stmt, ast.Import):
            found.update(alias.name for alias in stmt.names)
    return found


def test_the_stand_in_imports_nothing_of_karpys_scheduling():
    """The judge of karpy's plans must not share karpy's decisions: no module the
    kube-scheduler stand-in reaches (type-only imports included) is karpy.scheduling."""
    seen: set[str] = set()
    todo = [STAND_IN]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        for name in _imports(module):
            assert not name.startswith("karpy.scheduling"), f"{module} imports {name}"
            if (
                name.startswith("karpy.sandbox.cluster.")
                and (REPO / (name.replace(".", "/") + ".py")).is_file()
            ):
                todo.append(name)
    assert "karpy.sandbox.cluster.placement" in seen
    assert "karpy.sandbox.cluster.topologyspread" in seen


def test_preferred_pod_affinity_outweighs_least_allocated_and_sees_the_pass_placements():
    nodes = [node("node-a"), node("node-b")]
    cycle = Cycle([node_spec(n) for n in nodes], [])
    near_db = f.weighted(f.pod_affinity_term(HOSTNAME, match_labels={"app": "db"}), 100)
    db = pod_info(f.pod("db", labels={"app": "db"}, requests={"cpu": "2"}))
    where = cycle.schedule(db)
    web = pod_info(f.pod("web", requests={"cpu": "1"}, pod_affinity_preferred=[near_db]))
    # LeastAllocated alone would pick the empty node; InterPodAffinity (weight 2) wins.
    assert cycle.schedule(web) == where


def test_required_anti_affinity_of_a_pod_placed_earlier_in_the_pass_keeps_others_away():
    nodes = [node("node-a"), node("node-b")]
    cycle = Cycle([node_spec(n) for n in nodes], [])
    alone = [f.pod_affinity_term(HOSTNAME, match_labels={"app": "web"})]
    first = cycle.schedule(pod_info(f.pod("w1", labels={"app": "solo"}, pod_anti_affinity=alone)))
    second = cycle.schedule(pod_info(f.pod("w2", labels={"app": "web"})))
    assert {first, second} == {"node-a", "node-b"}


def _claim(name: str, **spec: Any) -> Entry:
    return Entry({"metadata": {"name": name, "namespace": "default"}, "spec": spec})


def test_a_bound_volume_keeps_its_pod_to_nodes_its_node_affinity_accepts():
    zone_b = {"required": {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "zone", "operator": "In", "values": ["b"]}]}]}}  # fmt: skip
    volumes = VolumeView.build(
        [_claim("data", volumeName="pv-1")],
        [Entry({"metadata": {"name": "pv-1"}, "spec": {"nodeAffinity": zone_b}})],
        [],
    )
    nodes = [f.node(n, labels={"zone": z}, allocatable={"cpu": "4", "pods": "9"})
             for n, z in (("node-a", "a"), ("node-b", "b"))]  # fmt: skip
    cycle = Cycle([node_spec(n) for n in nodes], [], volumes=volumes)
    assert cycle.schedule(pod_info(f.pod("p", pvcs=["data"]))) == "node-b"
    missing = cycle.schedule(pod_info(f.pod("q", pvcs=["nope"])))
    assert isinstance(missing, NoFit)
    assert missing.render(2, Counter()) == (
        '0/2 nodes are available: persistentvolumeclaim "nope" not found.'
    )
