"""karpy writes ``status.nominatedNodeName`` on the pods it planned onto a node (KEP-5278):
set when the NodeClaim's Node exists and before registration lets it take pods, set at
once for pods planned onto a node that exists, never over another component's value,
cleared when karpy's nomination ends with the pod unbound, and taken back after a
restart so that a hint karpy set never outlives karpy's plan."""

from __future__ import annotations

import attrs
import pytest

from karpy.apis.labels import TAINT_UNREGISTERED
from karpy.apis.nodeclaim import NodeClaim
from karpy.lifecycle.launch import launch
from karpy.lifecycle.registration import register
from karpy.provisioning.nodenames import NAMED_WINDOW, NominatedNodeNames
from karpy.provisioning.nominations import Ended
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.provisioning.world import NODECLAIMS, Cluster, cluster, running


def nominated_node_name(c: Cluster, pod: str) -> str | None:
    value = c.store.get("pods", pod, "default").get("status", {}).get("nominatedNodeName")
    return str(value) if value else None


def writes(c: Cluster, action: str, result: str) -> float:
    return c._sample("karpy_nominated_node_names_total", {"action": action, "result": result})


def name_directly(c: Cluster, pod: str, node: str) -> None:
    """Write ``node`` as ``pod``'s nominatedNodeName as another writer would."""
    obj = c.store.get("pods", pod, "default")
    obj["status"]["nominatedNodeName"] = node
    c.store.update_status("pods", obj)


async def x_named_on_its_node(c: Cluster) -> tuple[str, str]:
    """Pod x (1200m: one per node) planned onto a NodeClaim whose node then registered
    (not by karpy's lifecycle here), and named on it by the next round's catch-up; the
    NodeClaim's and the node's names."""
    c.pending_pod("x")
    await c.round()
    (claim,) = c.claims()
    node = c.initialize(claim)
    await c.round()
    await eventually(lambda: nominated_node_name(c, "x") == node)
    return claim, node


async def launched(c: Cluster, claim_name: str) -> str:
    """Launch ``claim_name`` in the fake cloud (which writes its Node, still tainted
    unregistered); the Node's name."""
    ctx = c.lifecycle()
    await launch(ctx, NodeClaim.from_dict(c.store.get(NODECLAIMS, claim_name)))
    await c.world.settled()
    claim = NodeClaim.from_dict(c.store.get(NODECLAIMS, claim_name))
    node = c.world.state.snapshot().node_by_provider(claim.status.provider_id)
    assert node is not None
    return node.name


async def test_pods_are_named_on_their_node_before_registration_lets_it_take_pods(apiserver):
    async with cluster(apiserver, hints=True) as c:
        c.pending_pod("x", requests={"cpu": "500m"})
        c.pending_pod("y", requests={"cpu": "500m"})
        await c.round()
        (claim,) = c.claims()
        node = await launched(c, claim)
        assert nominated_node_name(c, "x") is None, "no node name before the node exists"

        taints_when_named: list[list[str]] = []
        ctx = c.lifecycle()
        name_nominated = ctx.name_nominated
        assert name_nominated is not None

        async def noting(claim_name: str, node_name: str) -> int:
            node_obj = c.store.get("nodes", node_name, None)
            taints_when_named.append([t["key"] for t in node_obj["spec"].get("taints", [])])
            return await name_nominated(claim_name, node_name)

        await register(attrs.evolve(ctx, name_nominated=noting),
                       NodeClaim.from_dict(c.store.get(NODECLAIMS, claim)))  # fmt: skip
        await c.world.settled()

        assert nominated_node_name(c, "x") == nominated_node_name(c, "y") == node
        assert taints_when_named and TAINT_UNREGISTERED in taints_when_named[0]
        node_taints = c.store.get("nodes", node, None)["spec"].get("taints", [])
        assert TAINT_UNREGISTERED not in [t["key"] for t in node_taints], "then registered"
        assert writes(c, "set", "written") == 2


async def test_a_pod_planned_onto_a_node_that_exists_is_named_at_once(apiserver):
    async with cluster(apiserver, hints=True) as c:
        c.pending_pod("x", requests={"cpu": "500m"})
        await c.round()
        (claim,) = c.claims()
        node = c.initialize(claim)  # registered without karpy naming x (another process)
        c.pending_pod("y", requests={"cpu": "500m"})  # room left on that node
        await c.round()
        assert c.claims() == [claim]
        await eventually(lambda: nominated_node_name(c, "y") == node)
        # and x, by the round's catch-up over the nominations that hold
        await eventually(lambda: nominated_node_name(c, "x") == node)


async def test_a_named_pod_still_takes_its_room_in_the_next_round(apiserver):
    async with cluster(apiserver, hints=True) as c:
        claim, _node = await x_named_on_its_node(c)
        await c.world.settled()

        c.pending_pod("y")
        await c.round()
        assert c.nominated_to("x") == claim
        (other,) = [name for name in c.claims() if name != claim]
        assert c.nominated_to("y") == other, "x's room on its node is taken"


async def test_another_components_nomination_is_never_overwritten(apiserver):
    async with cluster(apiserver, hints=True) as c:
        c.pending_pod("x", requests={"cpu": "500m"})
        await c.round()
        (claim,) = c.claims()
        node = await launched(c, claim)
        name_directly(c, "x", "preempting-somewhere")
        await c.world.settled()

        assert await c.provisioner.name_nominated(claim, node) == 0
        assert nominated_node_name(c, "x") == "preempting-somewhere"


async def test_a_pod_that_changed_since_the_snapshot_is_left_alone(apiserver):
    """The write carries the pod's resourceVersion: a conflict is counted, not retried."""
    async with cluster(apiserver, hints=True) as c:
        c.pending_pod("x", requests={"cpu": "500m"})
        await c.round()
        (claim,) = c.claims()
        node = await launched(c, claim)
        stale = c.world.state.snapshot().pods["default/x"]
        pod = c.store.get("pods", "x", "default")
        pod["metadata"].setdefault("labels", {})["touched"] = "yes"
        c.store.update("pods", pod)

        hints = c.provisioner.hints
        assert hints is not None
        assert await hints.set(node, [stale]) == 0
        assert nominated_node_name(c, "x") is None
        assert writes(c, "set", "conflict") == 1


@pytest.mark.parametrize("ending", ["no_room", "target_gone"])
async def test_the_hint_is_cleared_when_the_nomination_ends_with_the_pod_unbound(apiserver, ending):
    async with cluster(apiserver, hints=True) as c:
        claim, node = await x_named_on_its_node(c)
        if ending == "no_room":  # something else took x's room before kube-scheduler got to x
            c.store.create("pods", f.pod("intruder", requests={"cpu": "1200m"}, node_name=node))
        else:
            c.store.delete(NODECLAIMS, claim)
        await c.round()

        expected = Ended.NO_ROOM if ending == "no_room" else Ended.TARGET_GONE
        assert c.ended(expected) == 1
        await eventually(lambda: nominated_node_name(c, "x") is None)
        assert writes(c, "cleared", "written") == 1
        # Now provisionable again: the next round plans x onto new capacity.
        await c.round()
        assert c.nominated_to("x") not in (None, claim)


async def test_a_named_pod_waits_longer_on_its_node_before_its_plan_is_given_up(apiserver):
    """kube-scheduler tries a named node first, but at scale reaches every pod only after
    minutes: the window of a pod carrying karpy's name is `NAMED_WINDOW`, not 20 s."""
    async with cluster(apiserver, hints=True) as c:
        claim, _node = await x_named_on_its_node(c)
        await c.world.settled()

        await c.clock.advance(c.provisioner.nominations.window + 1)
        await c.round()
        assert c.ended(Ended.EXPIRED) == 0 and c.nominated_to("x") == claim
        await c.clock.advance(NAMED_WINDOW)
        await c.round()
        assert c.ended(Ended.EXPIRED) == 1
        await eventually(lambda: nominated_node_name(c, "x") is None)


async def test_a_hint_bound_to_its_node_is_left_to_the_api_server(apiserver):
    async with cluster(apiserver, hints=True) as c:
        _claim, node = await x_named_on_its_node(c)
        c.bind("x", node)
        await c.round()
        assert c.ended(Ended.BOUND_TO_TARGET) == 1
        assert writes(c, "cleared", "written") == 0


async def test_after_a_restart_hints_on_karpys_nodes_are_taken_back_and_end_as_before(apiserver):
    async with cluster(apiserver, hints=True) as c:
        claim, _node = await x_named_on_its_node(c)
        other = c.store.create("pods", f.pod("other", requests={"cpu": "100m"}))
        other["status"] = {"phase": "Pending", "nominatedNodeName": "not-karpys"}
        c.store.update_status("pods", other)
        await c.world.settled()

        # A new process: nothing in memory.
        c.provisioner.nominations = type(c.provisioner.nominations)(
            c.provisioner.nominations.window
        )
        restarted = NominatedNodeNames(c.world.client, metrics=c.world.metrics.karpenter)
        c.provisioner.hints = restarted
        snapshot = c.world.state.snapshot()
        assert not snapshot.pending, "x carries a name: not provisionable"
        assert c.provisioner.due(snapshot), "yet a round is due, to take x back"
        await c.round()
        assert c.nominated_to("x") == claim, "taken back from the pod's nominatedNodeName"
        assert c.nominated_to("other") is None, "not a node karpy made"

        await c.clock.advance(NAMED_WINDOW + 1)  # a named pod waits longer than others
        async with running(restarted):
            await c.round()
            assert c.ended(Ended.EXPIRED) == 1
            await eventually(lambda: nominated_node_name(c, "x") is None)
        assert nominated_node_name(c, "other") == "not-karpys"


async def test_a_name_being_cleared_is_not_taken_back_before_the_clear_is_seen(apiserver):
    """A nomination that ended queues its clear; until the informer shows the pod without
    the name, the name is not "someone's to take back" (else the pod waits a whole window
    on a nomination karpy has just given up)."""
    async with cluster(apiserver) as c:  # no writer running: the clear stays queued
        c.pending_pod("x")
        await c.round()
        (claim,) = c.claims()
        node = c.initialize(claim)
        name_directly(c, "x", node)
        await c.world.settled()
        snapshot = c.world.state.snapshot()
        hints = NominatedNodeNames(c.world.client)
        nominations = type(c.provisioner.nominations)()
        assert hints.adopt(snapshot, nominations, now=0.0) == 1  # karpy's name, not held
        hints.ended({"default/x": Ended.EXPIRED}, snapshot)
        nominations = type(c.provisioner.nominations)()
        assert not hints.adoptable(snapshot, nominations)
        assert hints.adopt(snapshot, nominations, now=0.0) == 0

        pod = c.store.get("pods", "x", "default")
        del pod["status"]["nominatedNodeName"]
        c.store.update_status("pods", pod)  # the clear, as the informer will show it
        await c.world.settled()
        assert hints.adopt(c.world.state.snapshot(), nominations, now=0.0) == 0
        # Once seen cleared, a name on karpy's node is karpy's to take back again.
        name_directly(c, "x", node)
        await c.world.settled()
        assert hints.adopt(c.world.state.snapshot(), nominations, now=0.0) == 1


async def test_a_node_named_on_more_pods_than_it_holds_keeps_the_oldest_and_lets_the_rest_go(
    apiserver,
):
    """kube-scheduler counts every other pod named on a node as taking its room, so a node
    named on more pods than it holds takes none of them. karpy keeps the nominations the
    room holds, in kube-scheduler's queue order, and ends the rest at once (no_room)."""
    async with cluster(apiserver, hints=True) as c:
        claim, node = await x_named_on_its_node(c)
        c.pending_pod("y")
        name_directly(c, "y", node)  # as a previous leader may have left it
        await c.round()

        assert c.nominated_to("x") == claim
        assert c.ended(Ended.NO_ROOM) == 1
        await eventually(lambda: nominated_node_name(c, "y") is None)
        await c.round()
        assert c.nominated_to("y") not in (None, claim), "y is planned elsewhere"
