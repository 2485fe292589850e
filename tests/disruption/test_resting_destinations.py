"""Consolidation moves no pod onto a node still under its pool's ``consolidateAfter``
(Karpenter v1.14, kubernetes-sigs/karpenter#3006, `consolidation_test.go`): such a node
has just had pods come or go, so it may be about to empty, or be filling up. Modelled on
the upstream Its "should not consolidate pods onto a destination node that is under its
consolidateAfter window", "should consolidate pods onto a destination node with
consolidateAfter set to Never" and "should replace a node with a cheaper one even when
consolidateAfter has not expired"."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from karpy.apis.core import format_time
from karpy.disruption.methods.consolidation import consolidation_candidates
from karpy.disruption.methods.singlenode import single_node_command
from karpy.disruption.simulation import WhatIf
from tests.disruption.world import NOW, World, managed_node, nodepool, pod_on

CHEAP = "c-1x-amd64-linux"


def pool(name: str, consolidate_after: str) -> dict[str, Any]:
    doc = nodepool(consolidateAfter=consolidate_after)
    doc["metadata"]["name"] = name
    doc["metadata"]["uid"] = f"uid-{name}"
    return doc


def node(
    name: str,
    *,
    pool_name: str = "default",
    last_pod_event: timedelta | None = None,
    instance_type: str = CHEAP,
    consolidatable: bool = True,
    capacity_type: str = "spot",
) -> list[dict[str, Any]]:
    """A managed node of ``pool_name`` (spot by default: with spot-to-spot off no
    replacement is cheaper), its last pod event ``last_pod_event`` ago."""
    objects = managed_node(name, instance_type, capacity_type=capacity_type,
                           consolidatable=consolidatable)  # fmt: skip
    for obj in objects:
        obj["metadata"]["labels"]["karpenter.sh/nodepool"] = pool_name
    claim = objects[1]
    claim["metadata"]["labels"]["karpenter.sh/nodepool"] = pool_name
    if last_pod_event is not None:
        claim["status"]["lastPodEventTime"] = format_time(NOW - last_pod_event)
    return objects


def single(objects: list[dict[str, Any]], now: Any) -> tuple[Any, str]:
    world = World(objects)
    what_if = WhatIf(world.snapshot, world.compiled, nominated={}, settings=world.settings,
                     budget=30.0, now=now)  # fmt: skip
    chosen = consolidation_candidates(world.candidates(), {"default": 10, "keep": 10})
    outcome = single_node_command(chosen, what_if, spot_to_spot=False)
    why = "; ".join(reason for _, reason in outcome.unconsolidatable)
    return outcome.command, why


def two_nodes(pool_doc: dict[str, Any]) -> list[dict[str, Any]]:
    """``busy`` took a pod 30 s ago; ``quiet``'s one pod would fit beside it."""
    return [
        pool_doc,
        *node("busy", last_pod_event=timedelta(seconds=30), consolidatable=False),
        pod_on("busy", "web-a", cpu="100m"),
        pod_on("busy", "web-b", cpu="100m"),
        *node("quiet", last_pod_event=timedelta(hours=1)),
        pod_on("quiet", "web-c", cpu="100m"),
    ]


def test_pods_do_not_move_onto_a_node_under_its_consolidate_after() -> None:
    objects = two_nodes(pool("default", "1m"))
    command, why = single(objects, NOW)
    assert command is None, "busy is resting: the pod has nowhere to go"
    assert why
    command, _ = single(objects, NOW + timedelta(minutes=2))
    assert command is not None
    assert [c.name for c in command.candidates] == ["quiet"] and not command.replacements


def test_without_a_time_every_node_is_a_destination() -> None:
    """What Karpenter did before #3006 (and what a what-if without ``now`` does)."""
    command, _ = single(two_nodes(pool("default", "1m")), None)
    assert command is not None and [c.name for c in command.candidates] == ["quiet"]


def test_a_destination_whose_pool_never_consolidates_is_always_one() -> None:
    objects = [
        pool("default", "0s"),
        pool("keep", "Never"),
        *node("kept", pool_name="keep", last_pod_event=timedelta(seconds=5)),
        *node("source", last_pod_event=timedelta(hours=1)),
        pod_on("source", "web-a", cpu="100m"),
    ]
    command, why = single(objects, NOW)
    assert command is not None, why
    assert [c.name for c in command.candidates] == ["source"] and not command.replacements


def test_a_cheaper_replacement_is_not_held_back_by_consolidate_after() -> None:
    """The replacement is new capacity, not a resting node."""
    objects = [
        pool("default", "1m"),
        *node(
            "dear",
            instance_type="c-8x-amd64-linux",
            capacity_type="on-demand",
            last_pod_event=timedelta(hours=1),
        ),
        pod_on("dear", "web-a", cpu="100m"),
    ]
    command, why = single(objects, NOW)
    assert command is not None, why
    assert [c.name for c in command.candidates] == ["dear"] and command.replacements
