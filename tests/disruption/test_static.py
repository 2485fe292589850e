"""Disruption of a static NodePool's nodes (``spec.replicas``): never consolidated or
emptied, and replaced one for one from the template when drifted (Karpenter's static
drift suite)."""

from __future__ import annotations

from typing import Any

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.methods.command import Decision
from karpy.disruption.methods.consolidation import consolidation_candidates
from karpy.disruption.methods.drift import Drift
from karpy.disruption.methods.emptiness import empty_command
from karpy.disruption.methods.ordered import methods_in_order
from karpy.disruption.methods.singlenode import single_node_command
from karpy.disruption.methods.staticdrift import StaticDrift, static_drift_command
from karpy.rounds.nodeclaims import template_nodeclaim_for
from karpy.settings import Settings
from tests.disruption.world import World, managed_node, nodepool, pod_on
from tests.kube.fakeclock import FakeClock

Obj = dict[str, Any]


def static_pool(replicas: int, **spec: Any) -> Obj:
    pool = nodepool()
    pool["spec"]["replicas"] = replicas
    pool["spec"].update(spec)
    return pool


def test_empty_static_nodes_are_not_removed() -> None:
    world = World([static_pool(2), *managed_node("a", "c-2x-amd64-linux"),
                   *managed_node("b", "c-2x-amd64-linux")])  # fmt: skip
    assert empty_command(world.candidates(), {"default": 5}).command is None
    dynamic = World([nodepool(), *managed_node("a", "c-2x-amd64-linux")])
    assert empty_command(dynamic.candidates(), {"default": 5}).command is not None


def test_underused_static_nodes_are_not_consolidated() -> None:
    world = World([static_pool(2), *managed_node("a", "c-4x-amd64-linux"), pod_on("a", "web-1"),
                   *managed_node("b", "c-4x-amd64-linux"), pod_on("b", "web-2")])  # fmt: skip
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    assert chosen == []
    assert single_node_command(chosen, world.simulate, spot_to_spot=False).command is None


def test_a_drifted_static_node_is_replaced_from_the_template() -> None:
    world = World([static_pool(2), *managed_node("old", "c-2x-amd64-linux", drifted=True),
                   pod_on("old", "web-1"), *managed_node("ok", "c-2x-amd64-linux")])  # fmt: skip
    candidates = world.candidates()
    assert [c.name for c in candidates if Drift().should_disrupt(c)] == [], "not plain drift"
    drifted = [c for c in candidates if StaticDrift().should_disrupt(c)]
    outcome = static_drift_command(drifted, {"default": 1}, world.snapshot)
    command = outcome.command
    assert command is not None
    assert [c.name for c in command.candidates] == ["old"]
    assert command.reason is DisruptionReason.DRIFTED
    assert command.decision is Decision.REPLACE
    assert command.replacements == () and command.template_replacements == ("default",)
    assert static_drift_command(drifted, {"default": 0}, world.snapshot).command is None


def test_static_drift_waits_for_a_scale_down_to_finish() -> None:
    world = World([static_pool(1), *managed_node("old", "c-2x-amd64-linux", drifted=True),
                   *managed_node("ok", "c-2x-amd64-linux")])  # fmt: skip
    drifted = [c for c in world.candidates() if StaticDrift().should_disrupt(c)]
    assert static_drift_command(drifted, {"default": 1}, world.snapshot).command is None


def test_static_drift_keeps_within_limits_nodes() -> None:
    """The replacement is made before the old node goes: at the limit there is no room."""
    objects = [*managed_node("old", "c-2x-amd64-linux", drifted=True),
               *managed_node("ok", "c-2x-amd64-linux")]  # fmt: skip
    at_limit = World([static_pool(2, limits={"nodes": "2"}), *objects])
    drifted = [c for c in at_limit.candidates() if StaticDrift().should_disrupt(c)]
    assert static_drift_command(drifted, {"default": 1}, at_limit.snapshot).command is None
    room = World([static_pool(2, limits={"nodes": "3"}), *objects])
    drifted = [c for c in room.candidates() if StaticDrift().should_disrupt(c)]
    assert static_drift_command(drifted, {"default": 1}, room.snapshot).command is not None


def test_at_the_limit_a_drifted_static_node_is_deleted_first_when_the_pool_is_whole() -> None:
    """TerminateFirstDrift (Karpenter's RFC core#3203): no room for a replacement, so
    the node goes first and the static controller makes its successor afterwards."""
    objects = [static_pool(2, limits={"nodes": "2"}),
               *managed_node("old", "c-2x-amd64-linux", drifted=True),
               *managed_node("ok", "c-2x-amd64-linux")]  # fmt: skip
    world = World(objects)
    drifted = [c for c in world.candidates() if StaticDrift().should_disrupt(c)]
    outcome = static_drift_command(drifted, {"default": 1}, world.snapshot, terminate_first=True)
    command = outcome.command
    assert command is not None
    assert [c.name for c in command.candidates] == ["old"]
    assert command.decision is Decision.DELETE and command.terminate_first
    assert command.replacements == () and command.template_replacements == ()
    assert command.describe().endswith("first, its successor after (no room to make it "
                                       "before): Drifted")  # fmt: skip
    assert static_drift_command(drifted, {"default": 0}, world.snapshot,
                                terminate_first=True).command is None  # fmt: skip


def test_terminate_first_waits_while_a_successor_is_still_coming() -> None:
    """A pool one node short (its last successor not initialized yet) loses no more."""
    coming = managed_node("new", "c-2x-amd64-linux")
    coming[1]["status"]["conditions"] = [
        c for c in coming[1]["status"]["conditions"] if c["type"] != "Initialized"
    ]
    objects = [static_pool(2, limits={"nodes": "2"}),
               *managed_node("old", "c-2x-amd64-linux", drifted=True), *coming]  # fmt: skip
    world = World(objects)
    drifted = [c for c in world.candidates() if StaticDrift().should_disrupt(c)]
    assert drifted, "the drifted node is a candidate"
    assert static_drift_command(drifted, {"default": 1}, world.snapshot,
                                terminate_first=True).command is None  # fmt: skip


def test_the_terminate_first_gate_reaches_static_drift() -> None:
    on = [m for m in methods_in_order(clock=FakeClock(), spot_to_spot=False)
          if isinstance(m, StaticDrift)]  # fmt: skip
    off = [m for m in methods_in_order(clock=FakeClock(), spot_to_spot=False,
                                       terminate_first_drift=False)
           if isinstance(m, StaticDrift)]  # fmt: skip
    assert [m.terminate_first for m in on] == [True]
    assert [m.terminate_first for m in off] == [False]
    assert Settings().feature_gates.terminate_first_drift, "on by default"


def test_a_template_nodeclaim_leaves_the_instance_type_to_the_cloud_provider() -> None:
    world = World([static_pool(1)])
    pool = world.snapshot.nodepools["default"]
    body = template_nodeclaim_for(pool, name="default-abcde",
                                  well_known=world.compiled.context.well_known_labels)  # fmt: skip
    keys = {r["key"] for r in body["spec"]["requirements"]}
    assert "karpenter.kwok.sh/instance-family" in keys
    assert "node.kubernetes.io/instance-type" not in keys
    assert body["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"
