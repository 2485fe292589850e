"""Terminate-first on a full capacity reservation (Karpenter's RFC core#3203, "Dynamic
capacity"): a drifted or unhealthy node whose pods can go nowhere but the reservation it
is in, which is full, is deleted first; anywhere else to go, and it is replaced first."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs

from karpy.apis.disruption import DisruptionReason
from karpy.apis.labels import CAPACITY_TYPE_RESERVED
from karpy.cloud.provider import RepairPolicy
from karpy.disruption.controller import Disruption
from karpy.disruption.methods.command import Decision
from karpy.disruption.methods.drift import Drift
from karpy.disruption.methods.ordered import methods_in_order
from karpy.disruption.methods.repair import Repair
from karpy.scheduling.instancetypes import RESERVATION_ID_LABEL, InstanceType, Offering
from karpy.scheduling.reservedslot import with_one_more_slot
from karpy.settings import Settings
from tests import factories as f
from tests.disruption.deciders import Contexts
from tests.disruption.world import CATALOG, NOW, World, managed_node, nodepool, pod_on, store
from tests.fixtures.cluster import controller_world
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"

Obj = dict[str, Any]
TYPE = "c-2x-amd64-linux"
BIG = "1500m"  # of the type's 2 CPUs: no node has room for a second
RESERVATION = "cr-full"


def with_full_reservation(it: InstanceType) -> InstanceType:
    """``TYPE`` also offered from ``RESERVATION``, which has no instance left (so, as a
    provider reports it, that offering is unavailable)."""
    if it.name != TYPE:
        return it
    full = Offering("test-zone-a", CAPACITY_TYPE_RESERVED, 0.01, available=False,
                    reservation_id=RESERVATION, reservation_capacity=0)  # fmt: skip
    return attrs.evolve(it, offerings=(*it.offerings, full))


TYPES = tuple(with_full_reservation(it) for it in CATALOG.instance_types)


def pinned_pool(*capacity_types: str) -> Obj:
    """The sandbox pool, launching only ``capacity_types``."""
    pool = nodepool()
    for req in pool["spec"]["template"]["spec"]["requirements"]:
        if req["key"] == "karpenter.sh/capacity-type":
            req["values"] = list(capacity_types)
    return pool


def reserved_node(name: str, *, drifted: bool = False, pod: bool = True) -> list[Obj]:
    node, claim = managed_node(name, TYPE, capacity_type=CAPACITY_TYPE_RESERVED,
                               consolidatable=False, drifted=drifted)  # fmt: skip
    for obj in (node, claim):
        obj["metadata"]["labels"][RESERVATION_ID_LABEL] = RESERVATION
    return [node, claim, *([pod_on(name, f"{name}-web", cpu=BIG)] if pod else [])]


def world(*objects: Obj, capacity_types: tuple[str, ...] = (CAPACITY_TYPE_RESERVED,)) -> World:
    return World([pinned_pool(*capacity_types), *objects], instance_types=TYPES)


def drift(w: World, *, terminate_first: bool = True) -> Any:
    method = Drift(terminate_first=terminate_first)
    candidates = [c for c in w.candidates() if method.should_disrupt(c)]
    return method.compute_command(candidates, {"default": 1}, w.what_if())


# --- drift ----------------------------------------------------------------------------------


def test_a_drifted_node_on_a_full_reservation_is_deleted_first() -> None:
    w = world(*reserved_node("old", drifted=True), *reserved_node("peer"))
    outcome = drift(w)
    command = outcome.command
    assert command is not None, outcome.unconsolidatable
    assert [c.name for c in command.candidates] == ["old"]
    assert command.decision is Decision.DELETE and command.terminate_first
    assert command.full_reservation == RESERVATION
    assert command.reason is DisruptionReason.DRIFTED
    assert f"capacity reservation {RESERVATION} is full" in command.describe()


def test_replace_first_when_the_pool_may_also_launch_on_demand() -> None:
    w = world(*reserved_node("old", drifted=True), *reserved_node("peer"),
              capacity_types=(CAPACITY_TYPE_RESERVED, "on-demand"))  # fmt: skip
    command = drift(w).command
    assert command.decision is Decision.REPLACE and not command.terminate_first
    assert {r.offering.capacity_type for r in command.replacements} == {"on-demand"}


def test_blocked_as_before_with_the_gate_off() -> None:
    w = world(*reserved_node("old", drifted=True), *reserved_node("peer"))
    outcome = drift(w, terminate_first=False)
    assert outcome.command is None
    assert [c.name for c, _ in outcome.unconsolidatable] == ["old"]


def test_a_node_on_no_reservation_is_blocked_as_before() -> None:
    """Pods that fit nowhere, on an on-demand node: no slot of a reservation to free."""
    node, claim = managed_node("old", TYPE, consolidatable=False, drifted=True)
    w = world(node, claim, pod_on("old", "old-web", cpu=BIG), *reserved_node("peer"))
    outcome = drift(w)
    assert outcome.command is None and [c.name for c, _ in outcome.unconsolidatable] == ["old"]


def test_blocked_when_the_freed_slot_would_not_be_the_only_way() -> None:
    """One pod must have the reservation (and finds it full); the other, with no room
    beside it, would go on demand: that is capacity growing, not a swap in place."""
    node, claim, _ = reserved_node("old", drifted=True)
    must = pod_on("old", "old-reserved", cpu=BIG,
                  node_selector={"karpenter.sh/capacity-type": CAPACITY_TYPE_RESERVED})  # fmt: skip
    w = world(node, claim, must, pod_on("old", "old-web", cpu="1"), *reserved_node("peer"),
              capacity_types=(CAPACITY_TYPE_RESERVED, "on-demand"))  # fmt: skip
    outcome = drift(w)
    assert outcome.command is None
    assert [c.name for c, _ in outcome.unconsolidatable] == ["old"]


def test_blocked_when_the_pods_would_need_two_nodes_from_the_one_freed_slot() -> None:
    """Two pods on one host port (a world kube-scheduler would not make): the freed slot
    takes one node, and the reservation has no second."""
    node, claim, _ = reserved_node("old", drifted=True)
    pods = [pod_on("old", f"old-{i}", cpu="500m", host_ports=[8080]) for i in range(2)]
    w = world(node, claim, *pods, *reserved_node("peer"))
    outcome = drift(w)
    assert outcome.command is None
    assert [c.name for c, _ in outcome.unconsolidatable] == ["old"]


def test_the_terminate_first_drift_gate_reaches_drift() -> None:
    def drift_method(gate: bool = True) -> Drift:
        methods = methods_in_order(clock=FakeClock(NOW), spot_to_spot=False,
                                   terminate_first_drift=gate)  # fmt: skip
        (method,) = [m for m in methods if isinstance(m, Drift)]
        return method

    assert drift_method().terminate_first, "on by default"
    assert not drift_method(gate=False).terminate_first


def test_the_freed_slot_makes_a_pool_pinned_to_the_full_reservation_usable() -> None:
    w = world()
    assert [s.template.nodepool for s in w.compiled.context.skipped] == ["default"]
    freed = with_one_more_slot(w.compiled.context, RESERVATION)
    ((pool,),) = [[p for p in freed.pools if p.template.nodepool == "default"]]
    offerings = [o for it in pool.instance_types if it.name == TYPE for o in it.offerings
                 if o.reservation_id == RESERVATION]  # fmt: skip
    assert [(o.available, o.reservation_capacity) for o in offerings] == [(True, 1)]
    assert with_one_more_slot(w.compiled.context, "cr-other") is w.compiled.context


# --- pacing: one in flight per reservation --------------------------------------------------


def test_one_deletion_in_flight_per_reservation_while_another_node_of_it_goes() -> None:
    chosen = reserved_node("going")
    chosen[1]["status"]["conditions"].append(
        f.condition("DisruptionReason", reason="Drifted"))  # fmt: skip
    w = world(*reserved_node("old", drifted=True), *chosen)
    outcome = drift(w)
    assert outcome.command is None
    ((candidate, why),) = outcome.unconsolidatable
    assert candidate.name == "old" and "being deleted first" in why


def test_one_deletion_in_flight_per_reservation_while_its_pods_wait() -> None:
    """The node deleted first is gone, its pod pending and not yet placed (the reservation
    still reads full): the next one waits, though both pods would fit the one freed slot."""
    node, claim, _ = reserved_node("old", drifted=True)
    owner = [f.owner_reference("ReplicaSet", "web")]
    waiting = f.unschedulable_pod("gone-web", requests={"cpu": "900m", "memory": "256Mi"},
                                  owner_references=owner)  # fmt: skip
    w = world(node, claim, pod_on("old", "old-web", cpu="900m"), *reserved_node("peer"),
              waiting)  # fmt: skip
    outcome = drift(w)
    assert outcome.command is None
    ((candidate, why),) = outcome.unconsolidatable
    assert candidate.name == "old" and "not replaced yet" in why


# --- repair ---------------------------------------------------------------------------------

POLICIES = (RepairPolicy("Ready", "False", timedelta(minutes=30)),)


def sick_reserved(name: str) -> list[Obj]:
    node, claim, pod = reserved_node(name)
    since = (NOW - timedelta(minutes=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    node["status"]["conditions"] = [
        *(c for c in node["status"]["conditions"] if c["type"] != "Ready"),
        {"type": "Ready", "status": "False", "reason": "Broken", "message": "",
         "lastTransitionTime": since},
    ]  # fmt: skip
    return [node, claim, pod]


def repair(w: World, *, terminate_first: bool = True) -> Any:
    method = Repair(POLICIES, clock=FakeClock(NOW), terminate_first=terminate_first)
    candidates = [c for c in w.candidates() if method.should_disrupt(c)]
    return method.compute_command(candidates, {"default": 1}, w.what_if()).command


def test_an_unhealthy_node_on_a_full_reservation_is_repaired_terminate_first() -> None:
    w = world(*sick_reserved("broken"), *reserved_node("peer"))
    command = repair(w)
    assert command.decision is Decision.DELETE and command.terminate_first
    assert command.full_reservation == RESERVATION
    assert command.reason is DisruptionReason.UNHEALTHY
    assert repair(w, terminate_first=False) is None, "gate TerminateFirstRepair off"


# --- the controller -------------------------------------------------------------------------


def drift_marked(apiserver: Any) -> list[str]:
    """The NodeClaims a decision marked for drift."""
    return sorted(claim["metadata"]["name"] for claim in apiserver.store.list(NODECLAIMS)
                  if any(c["type"] == "DisruptionReason" and c["reason"] == "Drifted"
                         for c in claim.get("status", {}).get("conditions", ())))  # fmt: skip


async def test_the_controller_deletes_first_one_node_of_the_reservation_at_a_time(
    apiserver: Any,
) -> None:
    objects = [pinned_pool(CAPACITY_TYPE_RESERVED), *reserved_node("a-old", drifted=True),
               *reserved_node("b-old", drifted=True)]  # fmt: skip
    store(apiserver, objects)
    async with controller_world(apiserver) as world:
        await world.settled()
        compiled = World(objects, instance_types=TYPES).compiled
        disruption = Disruption(world.state, world.client, world.recorder, Settings(),
                                contexts=Contexts(compiled),  # type: ignore[arg-type]
                                nominations=lambda _: {}, clock=FakeClock(NOW),
                                metrics=world.metrics.karpenter)  # fmt: skip

        await disruption.reconcile()
        await world.settled()
        assert drift_marked(apiserver) == ["a-old"]
        names = {c["metadata"]["name"] for c in apiserver.store.list(NODECLAIMS)}
        assert names == {"a-old", "b-old"}, "no replacement: provisioning makes it later"
        terminating = await eventually(lambda: world.events("DisruptionTerminating"))
        assert {e["message"] for e in terminating} == {
            "Disrupting Node: Drifted (terminated before its replacement: reserved capacity "
            "is full)"
        }

        await disruption.reconcile()
        await world.settled()
        assert drift_marked(apiserver) == ["a-old"], "one in flight per reservation"
