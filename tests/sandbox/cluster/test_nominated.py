"""``status.nominatedNodeName`` in the kube-scheduler stand-in, as kube-scheduler 1.35+
treats it (KEP-5278): the nominated node is tried first, nominations hold room against
pods of lower or equal priority, the scheduler never clears them, and a nomination that
ends frees its node for the pods that failed there."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from karpy.sandbox.apiserver.store import Entry
from karpy.sandbox.cluster import SandboxCluster
from karpy.sandbox.cluster.kubepod import PodInfo, node_spec, pod_info
from karpy.sandbox.cluster.nominated import Reservations
from karpy.sandbox.cluster.placement import Planner, Surroundings
from karpy.sandbox.cluster.scheduleone import Cycle
from karpy.sandbox.cluster.schedulingstate import PassInput
from karpy.sandbox.cluster.unschedulable import NoFit
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.sandbox.cluster.helpers import cloud_node, node_ready, unschedulable

HOSTNAME = "kubernetes.io/hostname"


def _node(name: str, cpu: str = "4") -> dict[str, Any]:
    return f.node(name, allocatable={"cpu": cpu, "memory": "16Gi", "pods": "110"})


def _nominate(cluster: SandboxCluster, pod: str, node: str | None) -> None:
    """What karpy (or any autoscaler) writes: the status subresource only."""
    cluster.store.patch(
        "pods", pod, {"status": {"nominatedNodeName": node}}, "default", subresource="status"
    )


def _pod(cluster: SandboxCluster, name: str) -> dict[str, Any]:
    return cluster.store.get("pods", name, "default")


def _node_of(cluster: SandboxCluster, name: str) -> str | None:
    found: str | None = _pod(cluster, name)["spec"].get("nodeName")
    return found


async def _ready(cluster: SandboxCluster, *names: str) -> None:
    await eventually(lambda: all(node_ready(cluster, n) for n in names), what="nodes Ready")


# -- the nominated node first ----------------------------------------------------------


async def test_a_pod_binds_to_its_nominated_node_where_scoring_prefers_another(cluster):
    cluster.store.create("nodes", cloud_node("busy"))
    cluster.store.create("nodes", cloud_node("idle"))
    await _ready(cluster, "busy", "idle")
    cluster.store.create("pods", f.pod("occupant", node_name="busy", requests={"cpu": "2"}))
    gated = f.pod("planned", requests={"cpu": "1", "memory": "1Gi"})
    gated["spec"]["schedulingGates"] = [{"name": "wait"}]
    cluster.store.create("pods", gated)
    _nominate(cluster, "planned", "busy")  # LeastAllocated alone would pick "idle"
    cluster.store.patch("pods", "planned", {"spec": {"schedulingGates": None}}, "default")

    assert await eventually(lambda: _node_of(cluster, "planned")) == "busy"
    # The API server's binding ended the nomination (ClearingNominatedNodeNameAfterBinding).
    assert "nominatedNodeName" not in _pod(cluster, "planned")["status"]


async def test_a_pod_its_nominated_node_cannot_take_goes_to_another(cluster):
    cluster.store.create("nodes", cloud_node("small", cpu="1"))
    cluster.store.create("nodes", cloud_node("large", cpu="8"))
    await _ready(cluster, "small", "large")
    gated = f.pod("big", requests={"cpu": "2"})
    gated["spec"]["schedulingGates"] = [{"name": "wait"}]
    cluster.store.create("pods", gated)
    _nominate(cluster, "big", "small")
    cluster.store.patch("pods", "big", {"spec": {"schedulingGates": None}}, "default")

    assert await eventually(lambda: _node_of(cluster, "big")) == "large"


def test_a_pod_whose_nominated_room_is_held_for_a_higher_priority_pod_goes_elsewhere():
    first = pod_info(f.pod("first", requests={"cpu": "6"}, priority=100,
                           nominated_node_name="planned"))  # fmt: skip
    second = pod_info(f.pod("second", requests={"cpu": "4"}, nominated_node_name="planned"))
    cycle = Cycle(
        [node_spec(_node("planned", cpu="8")), node_spec(_node("busy", cpu="8"))],
        [pod_info(f.pod("occupant", node_name="busy", requests={"cpu": "4"}))],
        nominated=Reservations([first, second]),
    )
    # LeastAllocated prefers the empty "planned", but "first" holds 6 of its 8 CPUs.
    assert cycle.schedule(second) == "busy"


def test_the_nominated_node_is_chosen_unscored_and_leaves_the_scan_where_it_was():
    nodes = [_node(f"n{i:03}") for i in range(300)]
    cycle = Cycle([node_spec(n) for n in nodes], [])
    pod = pod_info(f.pod("p", requests={"cpu": "100m"}, nominated_node_name="n250"))
    assert cycle.schedule(pod) == "n250"
    assert cycle.next_start == 0


# -- nominations hold room -------------------------------------------------------------


def _holder(priority: int = 0, **options: Any) -> PodInfo:
    """A pending pod asking 3 CPUs, nominated to node "planned"."""
    return pod_info(
        f.pod("holder", requests={"cpu": "3"}, priority=priority,
              nominated_node_name="planned", **options)
    )  # fmt: skip


def _cycle(holder: PodInfo, *nodes: dict[str, Any]) -> Cycle:
    return Cycle([node_spec(n) for n in nodes], [], nominated=Reservations([holder]))


def test_room_held_by_a_nomination_is_refused_to_a_pod_of_equal_priority():
    cycle = _cycle(_holder(), _node("planned"))
    outcome = cycle.schedule(pod_info(f.pod("other", requests={"cpu": "2"})))
    assert isinstance(outcome, NoFit)
    assert outcome.reasons == {"Insufficient cpu": 1}


def test_a_pod_of_equal_priority_goes_around_held_room_even_to_a_busier_node():
    cycle = _cycle(_holder(), _node("planned"), _node("busy"))
    cycle.assume(pod_info(f.pod("occupant", requests={"cpu": "1"})), "busy")
    assert cycle.schedule(pod_info(f.pod("other", requests={"cpu": "2"}))) == "busy"


@pytest.mark.parametrize(("holder_priority", "fits"), [(0, False), (100, False), (-1, True)])
def test_only_a_higher_priority_pod_may_take_held_room(holder_priority, fits):
    cycle = _cycle(_holder(holder_priority), _node("planned"))
    outcome = cycle.schedule(pod_info(f.pod("other", requests={"cpu": "2"}, priority=0)))
    assert (outcome == "planned") is fits


def test_held_host_ports_and_pod_count_count_too():
    holder = _holder(host_ports=[8080])
    cycle = _cycle(holder, f.node("planned", allocatable={"cpu": "8", "pods": "1"}))
    outcome = cycle.schedule(pod_info(f.pod("other", host_ports=[8080])))
    assert isinstance(outcome, NoFit)
    assert outcome.reasons == {"node(s) didn't have free ports for the requested pod ports": 1}
    outcome = cycle.schedule(pod_info(f.pod("third")))
    assert isinstance(outcome, NoFit)
    assert outcome.reasons == {"Too many pods": 1}


def test_a_nominated_pod_bound_to_its_node_holds_its_room_once():
    holder = _holder()
    cycle = _cycle(holder, _node("planned"))
    assert cycle.schedule(holder) == "planned"  # its own nomination does not keep it out
    assert cycle.schedule(pod_info(f.pod("small", requests={"cpu": "1"}))) == "planned"


def test_a_nominated_pod_placed_elsewhere_holds_nothing_on_its_node():
    holder = _holder(node_selector={HOSTNAME: "other"})
    cycle = _cycle(holder, _node("planned"), _node("other"))
    assert cycle.schedule(holder) == "other"
    late = pod_info(f.pod("late", requests={"cpu": "4"}, node_selector={HOSTNAME: "planned"}))
    assert cycle.schedule(late) == "planned"


async def test_a_pod_nominated_to_a_node_still_to_come_gets_it_before_older_pods(cluster):
    cluster.store.create("pods", f.pod("a-plain", requests={"cpu": "3"}))
    cluster.store.create("pods", f.pod("b-planned", requests={"cpu": "3"}))
    await eventually(lambda: unschedulable(_pod(cluster, "b-planned")), what="b marked")
    _nominate(cluster, "b-planned", "node-new")
    passes = cluster.scheduler.passes
    cluster.store.create("nodes", cloud_node("node-other", cpu="1"))  # a pass without node-new
    await _ready(cluster, "node-other")
    await eventually(lambda: cluster.scheduler.passes > passes, what="a pass")
    assert _pod(cluster, "b-planned")["status"]["nominatedNodeName"] == "node-new"

    cluster.store.create("nodes", cloud_node("node-new", cpu="4"))
    # Both failed before and are retried on node-new; "a-plain" comes first in the queue
    # but the room is held for "b-planned", which gets it.
    assert await eventually(lambda: _node_of(cluster, "b-planned")) == "node-new"
    assert _node_of(cluster, "a-plain") is None


# -- a nomination that ends frees its node ---------------------------------------------


@pytest.mark.parametrize("ending", ["bound elsewhere", "deleted", "cleared", "moved"])
async def test_a_nomination_that_ends_frees_room_for_a_pod_that_failed_there(cluster, ending):
    cluster.store.create("nodes", cloud_node("node-a", cpu="4"))
    await _ready(cluster, "node-a")
    # "holder" fits only on a GPU node, none yet: it waits, nominated to node-a.
    gated = f.pod("holder", requests={"cpu": "3"}, node_selector={"pool": "gpu"})
    gated["spec"]["schedulingGates"] = [{"name": "wait"}]
    cluster.store.create("pods", gated)
    _nominate(cluster, "holder", "node-a")
    cluster.store.patch("pods", "holder", {"spec": {"schedulingGates": None}}, "default")
    await eventually(lambda: unschedulable(_pod(cluster, "holder")), what="holder marked")
    cluster.store.create(
        "pods", f.pod("pinned", requests={"cpu": "2"}, node_selector={HOSTNAME: "node-a"})
    )
    pinned = await eventually(lambda: unschedulable(p := _pod(cluster, "pinned")) and p)
    assert "Insufficient cpu" in pinned["status"]["conditions"][-1]["message"]

    if ending == "bound elsewhere":
        cluster.store.create("nodes", cloud_node("gpu", labels={"pool": "gpu"}))
        await eventually(lambda: _node_of(cluster, "holder") == "gpu")
    elif ending == "deleted":
        cluster.store.delete("pods", "holder", "default", grace_period_seconds=0)
    elif ending == "cleared":
        _nominate(cluster, "holder", None)
    else:
        _nominate(cluster, "holder", "node-b")
    assert await eventually(lambda: _node_of(cluster, "pinned")) == "node-a"


def test_a_nominated_pod_is_tried_even_after_an_identical_pod_failed_in_the_pass():
    # Two pods of one group: "a-plain" fits nowhere (the room is held for "b-planned"),
    # which does not make "b-planned" hopeless: its own nomination does not hold against it.
    a, b = (f.pod(name, labels={"app": "web"}, requests={"cpu": "3"}) for name in ("a-plain",
            "b-planned"))  # fmt: skip
    b["spec"] = copy.deepcopy(a["spec"])  # a Deployment's pods: one spec
    b["status"]["nominatedNodeName"] = "node-a"
    pending = (Entry(a), Entry(b))
    inputs = PassInput(
        nodes=(Entry(_node("node-a")),),
        pending=pending,
        bound=(),
        fresh=frozenset(("default", p.obj["metadata"]["name"]) for p in pending),
        dirty=frozenset(),
        everything_fresh=False,
    )
    result = Planner().plan(inputs, Surroundings())
    assert [(p.name, p.node) for p in result.placements] == [("b-planned", "node-a")]
    assert [failure.name for failure in result.failures] == ["a-plain"]
