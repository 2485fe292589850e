"""The stand-in's PodTopologySpread filter, case by case against kube-scheduler's own tests.

Each case mirrors one of ``pkg/scheduler/framework/plugins/podtopologyspread/
filtering_test.go`` (named in ``upstream``): the same nodes, existing pods and incoming
pod, and the same candidate nodes — the nodes that pass every filter, as upstream's
table lists them after the NodeAffinity and TaintToleration plugins have run too.
"""

from __future__ import annotations

from typing import Any

import pytest

from karpy.sandbox.cluster.kubepod import node_spec, pod_info
from karpy.sandbox.cluster.scheduleone import Cycle
from tests import factories as f

# Upstream's ``taints``: the node is cordoned in taint form.
CORDON = f.taint("node.kubernetes.io/unschedulable", effect="NoSchedule")
FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def node(name: str, *, taints: Any = (), **labels: str) -> dict[str, Any]:
    return f.node(name, labels={"node": name, **labels}, taints=taints, hostname_label=False,
                  allocatable={"cpu": "4", "memory": "8Gi", "pods": "110"})  # fmt: skip


def spread(key: str, max_skew: int = 1, *, when: str = "DoNotSchedule", **extra: Any) -> Any:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": FOO, **extra}  # fmt: skip


def existing(name: str, on: str, **options: Any) -> dict[str, Any]:
    options.setdefault("labels", {"foo": ""})
    return f.pod(name, node_name=on, phase="Running", **options)


def candidates(nodes: list[dict[str, Any]], pods: list[dict[str, Any]], incoming: Any) -> list[str]:
    cycle = Cycle([node_spec(n) for n in nodes], [pod_info(p) for p in pods])
    return cycle.feasible(pod_info(incoming))


def incoming(*constraints: Any, **options: Any) -> dict[str, Any]:
    options.setdefault("labels", {"foo": ""})
    return f.pod("p", topology_spread_constraints=list(constraints), **options)


# filtering_test.go's defaultNodes: two zones of two nodes.
DEFAULT_NODES = [
    node("node-0", zone="zone-1"),
    node("node-1", zone="zone-1"),
    node("node-2", zone="zone-2"),
    node("node-3", zone="zone-2"),
]
NOT_NODE_0 = [{"key": "node", "operator": "NotIn", "values": ["node-0"]}]
TWO_TWO_ONE = [existing("p1a", "node-1"), existing("p1b", "node-1"), existing("p2a", "node-2"),
               existing("p2b", "node-2"), existing("p3", "node-3")]  # fmt: skip
FOO_NODES = [
    node("node-1", zone="zone-1", foo=""),
    node("node-2", zone="zone-1", foo=""),
    node("node-3", zone="zone-2"),
    node("node-4", zone="zone-2", foo=""),
]
ONE_EACH = [existing(f"p{i}a", f"node-{i}") for i in range(1, 5)]
TAINTED_3 = [
    node("node-1", zone="zone-1", foo=""),
    node("node-2", zone="zone-1", foo=""),
    node("node-3", zone="zone-2", taints=[CORDON]),
    node("node-4", zone="zone-2", foo=""),
]

CASES = [
    pytest.param(
        DEFAULT_NODES, TWO_TWO_ONE,
        incoming(spread("node", 2, minDomains=4), node_requirements=NOT_NODE_0),
        ["node-3"],
        id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < "
           "minDomains, then the third node fits",
    ),
    pytest.param(
        DEFAULT_NODES, TWO_TWO_ONE,
        incoming(spread("node", 2, minDomains=2), node_requirements=NOT_NODE_0),
        ["node-1", "node-2", "node-3"],
        id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > "
           "minDomains, then the all nodes fit",
    ),
    pytest.param(
        DEFAULT_NODES,
        [existing("p1a", "node-0"), existing("p2a", "node-1"), existing("p3a", "node-2")],
        incoming(spread("zone", 2, minDomains=3)),
        ["node-2", "node-3"],
        id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < "
           "minDomains, then the third and fourth nodes fit",
    ),
    pytest.param(
        DEFAULT_NODES,
        [existing("p1a", "node-1"), existing("p2a", "node-2"), existing("p3a", "node-3")],
        incoming(spread("zone", 2, minDomains=1)),
        ["node-0", "node-1", "node-2", "node-3"],
        id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < "
           "minDomains, then the all nodes fit",
    ),
    pytest.param(
        FOO_NODES, ONE_EACH,
        incoming(spread("zone"), node_selector={"foo": ""}),
        ["node-4"],
        id="NodeAffinityPolicy honored with labelSelectors, pods spread across zone as 2/1",
    ),
    pytest.param(
        FOO_NODES,
        [existing("p1a", "node-1"), existing("p3a", "node-3"), existing("p4a", "node-4")],
        incoming(spread("zone", nodeAffinityPolicy="Ignore"),
                 node_requirements=[{"key": "foo", "operator": "In", "values": [""]}]),
        ["node-1", "node-2"],
        id="NodeAffinityPolicy ignored with nodeAffinity, pods spread across zone as 1/~2~",
    ),
    pytest.param(
        TAINTED_3, ONE_EACH,
        incoming(spread("zone", nodeTaintsPolicy="Honor")),
        ["node-4"],
        id="NodeTaintsPolicy honored, pods spread across zone as 2/1",
    ),
    pytest.param(
        TAINTED_3, ONE_EACH,
        incoming(spread("zone")),
        ["node-1", "node-2", "node-4"],
        id="NodeTaintsPolicy ignored, pods spread across zone as 2/2",
    ),
    pytest.param(
        [node("node-a"), node("node-b")],
        [existing("p-a", "node-a", deletion_timestamp="2024-01-01T00:00:00Z"),
         existing("p-b", "node-b")],
        incoming(spread("node")),
        ["node-a"],
        id="terminating Pods should be excluded",
    ),
    pytest.param(
        [node("node-a", zone="zone1"), node("node-b"), node("node-x", zone="zone2"),
         node("node-y", zone="zone2")],
        [existing("p-a1", "node-a"), existing("p-b1", "node-b"), existing("p-b2", "node-b"),
         existing("p-x1", "node-x"), existing("p-y1", "node-y")],
        incoming(spread("zone")),
        ["node-a"],
        id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
    ),
    pytest.param(
        [node("node-a"), node("node-b")],
        [existing("p-a1", "node-a", namespace="ns1"), existing("p-a2", "node-a"),
         existing("p-b1", "node-b"), existing("p-b2", "node-b"), existing("p-b3", "node-b")],
        incoming(spread("node")),
        ["node-a"],
        id="existing pods in a different namespace do not count",
    ),
    pytest.param(
        [node("node-a"), node("node-b")],
        [existing("v1-a", "node-a", labels={"foo": "", "version": "v1"}),
         existing("v1-b", "node-a", labels={"foo": "", "version": "v1"}),
         existing("v2-a", "node-b", labels={"foo": "", "version": "v2"})],
        incoming(spread("node", matchLabelKeys=["version"]), labels={"foo": "", "version": "v2"}),
        ["node-a"],
        id="matchLabelKeys: only pods with the incoming pod's value count (2 v1 pods ignored)",
    ),
    pytest.param(
        [node("node-a"), node("node-b")],
        [existing("p-a1", "node-a"), existing("p-a2", "node-a"), existing("p-a3", "node-a")],
        incoming(spread("node", when="ScheduleAnyway")),
        ["node-a", "node-b"],
        id="ScheduleAnyway only scores: a skewed node still fits",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("nodes", "pods", "pod", "fits"), CASES)
def test_filter_follows_kube_scheduler(nodes, pods, pod, fits):
    assert candidates(nodes, pods, pod) == fits


def test_pods_on_not_ready_nodes_count_toward_the_spread():
    # calPreFilterState counts over every node of the snapshot, schedulable or not.
    nodes = [node("node-a"), f.node("node-b", labels={"node": "node-b"}, ready="False")]
    pods = [existing("p-b1", "node-b"), existing("p-b2", "node-b")]
    # node-b's two pods raise its domain; node-a (0) stays the minimum: node-a fits.
    assert candidates(nodes, pods, incoming(spread("node"))) == ["node-a"]
    many = [existing(f"p-a{i}", "node-a") for i in range(3)]
    # node-a now holds 3 against node-b's 2: 3 + 1 - 2 = 2 > 1, so nothing fits.
    assert candidates(nodes, pods + many, incoming(spread("node"))) == []


def test_the_pass_counts_its_own_placements_like_prefilter_add_pod():
    nodes = [node(f"node-{i}") for i in range(3)]
    cycle = Cycle([node_spec(n) for n in nodes], [])
    placed = [cycle.schedule(pod_info(incoming(spread("node")))) for _ in range(9)]
    assert sorted(placed.count(f"node-{i}") for i in range(3)) == [3, 3, 3]


def test_schedule_anyway_scores_the_emptier_node_higher():
    # scoring_test.go "terminating Pods should be excluded": node-a scores 100, node-b 0.
    nodes = [node("node-a"), node("node-b")]
    pods = [existing("p-a", "node-a", deletion_timestamp="2024-01-01T00:00:00Z"),
            existing("p-b", "node-b")]  # fmt: skip
    cycle = Cycle([node_spec(n) for n in nodes], [pod_info(p) for p in pods])
    assert cycle.schedule(pod_info(incoming(spread("node", when="ScheduleAnyway")))) == "node-a"
