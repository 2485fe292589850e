"""The pod-deletion-cost controller (gate PodDeletionCostManagement): which value each
ReplicaSet pod's node earns, which pods it writes and when it writes nothing; and the
``karpenter.sh/disruption-cost`` annotation that steers consolidation instead."""

from __future__ import annotations

from typing import Any

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.fake.provider import FakeCloudProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.disruption.candidates import find_candidates
from karpy.disruption.deletioncost.controller import PodDeletionCost
from karpy.disruption.deletioncost.ranking import FLOOR, Group, rank_nodes, writes_for
from karpy.kube.events import EventRecorder
from karpy.observability.metrics import Metrics
from karpy.operator.controllers import build_controllers
from karpy.operator.timings import DEFAULT_TIMINGS
from karpy.reconcile import Controller
from karpy.settings import Settings
from karpy.settings.gates import FeatureGates
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.disruption.world import NOW, TYPES, World, managed_node, nodepool, pod_on
from tests.fixtures.cluster import controller_world
from tests.kube.fakeclock import FakeClock

POOL = nodepool()
SIZE = "c-4x-amd64-linux"
COST = "controller.kubernetes.io/pod-deletion-cost"
STEER = "karpenter.sh/disruption-cost"
JOB = f.owner_reference("Job", "j", api_version="batch/v1")


def ranks(objects: list[Any], **kw: Any) -> dict[str, tuple[Group, int | None]]:
    snapshot = World(objects).snapshot
    return {r.node: (r.group, r.cost) for r in rank_nodes(snapshot, now=NOW, **kw)}


def node_with(name: str, pods: int, **kw: Any) -> list[Any]:
    return [*managed_node(name, SIZE, **kw), *(pod_on(name, f"{name}-{i}") for i in range(pods))]


def test_the_emptiest_node_gets_the_lowest_value_so_a_scale_down_empties_it():
    got = ranks([POOL, *node_with("full", 3), *node_with("light", 1), *node_with("mid", 2)])
    assert got == {"light": (Group.NORMAL, -3), "mid": (Group.NORMAL, -2),
                   "full": (Group.NORMAL, -1)}  # fmt: skip


def test_drifted_nodes_go_before_normal_ones_whatever_their_pods():
    got = ranks([POOL, *node_with("light", 1), *node_with("old", 4, drifted=True)])
    assert got == {"old": (Group.DRIFTED, -2), "light": (Group.NORMAL, -1)}


def test_a_node_being_disrupted_gets_the_floor():
    gone = node_with("gone", 2)
    gone[0]["spec"]["taints"] = [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]
    got = ranks([POOL, *gone, *node_with("light", 1)])
    assert got == {"gone": (Group.DISRUPTING, FLOOR), "light": (Group.NORMAL, -1)}


def test_do_not_disrupt_nodes_and_pods_come_last_with_no_value():
    pinned = node_with("pinned", 0)
    pinned[0]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    keep = {"karpenter.sh/do-not-disrupt": "true"}
    guarded = [*managed_node("guarded", SIZE), pod_on("guarded", "g", annotations=keep)]
    got = ranks([POOL, *pinned, *guarded, *node_with("busy", 5)])
    assert got == {"busy": (Group.NORMAL, -1), "guarded": (Group.UNRANKED, None),
                   "pinned": (Group.UNRANKED, None)}  # fmt: skip


def test_a_pool_that_never_consolidates_and_a_pinning_pod_leave_nodes_unranked():
    never = [nodepool(consolidateAfter="Never"), *node_with("a", 1)]
    assert ranks(never) == {"a": (Group.UNRANKED, None)}
    stateful = f.pod("db-0", node_name="s", requests={"cpu": "100m"},
                     owner_references=[f.owner_reference("StatefulSet", "db")])  # fmt: skip
    got = ranks([POOL, *node_with("s", 1), stateful, *node_with("b", 2)])
    assert got == {"b": (Group.NORMAL, -1), "s": (Group.UNRANKED, None)}


def test_only_the_first_ranked_nodes_get_values_the_rest_none():
    got = ranks([POOL, *node_with("a", 1), *node_with("b", 2), *node_with("c", 3)], max_ranked=2)
    assert got == {"a": (Group.NORMAL, -2), "b": (Group.NORMAL, -1), "c": (Group.UNRANKED, None)}


def test_only_replicaset_pods_are_written_and_only_when_their_value_differs():
    objects = [POOL, *managed_node("n", SIZE),
               pod_on("n", "wrong", annotations={COST: "7"}),
               pod_on("n", "right", annotations={COST: "-1"}),
               pod_on("n", "bare"),
               f.pod("job", node_name="n", owner_references=[JOB])]  # fmt: skip
    snapshot = World(objects).snapshot
    writes = writes_for(snapshot, rank_nodes(snapshot, now=NOW))
    assert sorted((w.pod.pod.name, w.cost) for w in writes) == [("bare", -1), ("wrong", -1)]


def test_an_unranked_node_has_its_values_cleared_and_pods_without_one_are_left_alone():
    pinned = [*managed_node("pinned", SIZE), pod_on("pinned", "had", annotations={COST: "-4"}),
              pod_on("pinned", "never")]  # fmt: skip
    pinned[0]["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    snapshot = World([POOL, *pinned]).snapshot
    writes = list(writes_for(snapshot, rank_nodes(snapshot, now=NOW)))
    assert [(w.pod.pod.name, w.cost) for w in writes] == [("had", None)]


# --- karpenter.sh/disruption-cost: what consolidation reads ---------------------------


def disruption_costs(objects: list[Any], *, managed: bool) -> dict[str, float]:
    found, _ = find_candidates(World(objects).snapshot, now=NOW, nominated=(),
                               types_by_name=TYPES, deletion_cost_managed=managed)  # fmt: skip
    return {c.name: c.disruption_cost for c in found}


def test_disruption_cost_outweighs_pod_count_when_consolidation_orders_nodes():
    dear = [*managed_node("dear", SIZE), pod_on("dear", "d", annotations={STEER: "2147483647"})]
    objects = [POOL, *dear, *node_with("two", 2)]
    for managed in (False, True):
        costs = disruption_costs(objects, managed=managed)
        assert costs["dear"] > costs["two"]


def test_pod_deletion_cost_counts_only_while_karpy_does_not_write_it():
    objects = [POOL, *managed_node("n", SIZE), pod_on("n", "p", annotations={COST: "-1000000000"})]
    assert (
        disruption_costs(objects, managed=False)["n"] < disruption_costs(objects, managed=True)["n"]
    )
    steered = [POOL, *managed_node("n", SIZE),
               pod_on("n", "p", annotations={COST: "-1000000000", STEER: "0"})]  # fmt: skip
    assert disruption_costs(steered, managed=False) == disruption_costs(steered, managed=True)


def test_an_unreadable_disruption_cost_counts_zero_and_still_shadows_pod_deletion_cost():
    for text in ("not-a-number", "1.5", " 100 ", "99999999999", "1_000"):
        objects = [POOL, *managed_node("n", SIZE),
                   pod_on("n", "p", annotations={STEER: text, COST: "-1000000000"})]  # fmt: skip
        assert disruption_costs(objects, managed=False)["n"] == 1.0 * lifetime(objects), text


def lifetime(objects: list[Any]) -> float:
    (found,), _ = find_candidates(
        World(objects).snapshot, now=NOW, nominated=(), types_by_name=TYPES
    )
    return found.disruption_cost / len(found.pods)


# --- the controller, over HTTP against the API server emulator ------------------------


def store(apiserver: Any, objects: list[Any]) -> None:
    for obj in objects:
        resource = {"NodePool": "nodepools.karpenter.sh", "NodeClaim": "nodeclaims.karpenter.sh",
                    "Node": "nodes", "Pod": "pods"}[obj["kind"]]  # fmt: skip
        created = apiserver.store.create(resource, obj)
        if obj.get("status") and obj["kind"] != "Pod":
            for condition in obj["status"].get("conditions", ()):
                condition.setdefault("lastTransitionTime", "2026-05-01T00:00:00Z")
                condition.setdefault("reason", condition["type"])
                condition.setdefault("message", "")
            created["status"] = obj["status"]
            apiserver.store.update_status(resource, created)


def costs_in(apiserver: Any) -> dict[str, str | None]:
    return {p["metadata"]["name"]: (p["metadata"].get("annotations") or {}).get(COST)
            for p in apiserver.store.list("pods")}  # fmt: skip


async def test_the_controller_writes_each_nodes_rank_on_its_pods_once(apiserver):
    store(apiserver, [POOL, *node_with("light", 1), *node_with("full", 2),
                      f.pod("solo", node_name="other")])  # fmt: skip
    async with controller_world(apiserver) as world:
        controller = PodDeletionCost(world.state, world.client, clock=FakeClock(NOW),
                                     metrics=world.metrics.karpenter)  # fmt: skip
        await controller.reconcile()
        assert costs_in(apiserver) == {"light-0": "-2", "full-0": "-1", "full-1": "-1",
                                       "solo": None}  # fmt: skip
        versions = {p["metadata"]["name"]: p["metadata"]["resourceVersion"]
                    for p in apiserver.store.list("pods")}  # fmt: skip
        await world.settled()
        await controller.reconcile()  # sees its own writes: nothing left to do
        await controller.reconcile()  # nothing changed: skipped without ranking
        assert {p["metadata"]["name"]: p["metadata"]["resourceVersion"]
                for p in apiserver.store.list("pods")} == versions  # fmt: skip
        runs = world.metrics.karpenter.pod_deletion_cost_runs
        assert runs.labels(outcome="unchanged")._value.get() == 1


async def test_writes_are_bounded_per_run_and_the_rest_follow_next_run(apiserver):
    store(apiserver, [POOL, *node_with("a", 3)])
    async with controller_world(apiserver) as world:
        controller = PodDeletionCost(world.state, world.client, clock=FakeClock(NOW),
                                     metrics=world.metrics.karpenter, max_writes=2)  # fmt: skip
        await controller.reconcile()
        assert list(costs_in(apiserver).values()).count("-1") == 2
        await world.settled()
        await controller.reconcile()
        assert set(costs_in(apiserver).values()) == {"-1"}


def test_the_controller_runs_only_with_its_gate():
    def names(on: bool) -> set[str]:
        settings = Settings(feature_gates=FeatureGates(pod_deletion_cost_management=on))
        state, metrics, unavailable = ClusterState(watched=[]), Metrics(), UnavailableOfferings()
        provider = FakeCloudProvider(embedded_catalog(), client=None, state=state,  # type: ignore[arg-type]
                                     unavailable=unavailable, clock=SYSTEM_CLOCK)  # fmt: skip
        built = build_controllers(
            settings, state=state, client=None, recorder=EventRecorder(None, metrics=metrics),  # type: ignore[arg-type]
            provider=provider, unavailable=unavailable, metrics=metrics, clock=SYSTEM_CLOCK,
            timings=DEFAULT_TIMINGS,
        )  # fmt: skip
        return {c.name for c in built if isinstance(c, Controller)}

    assert "pod.deletioncost" not in names(False)
    assert "pod.deletioncost" in names(True)
