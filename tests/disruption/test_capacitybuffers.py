"""Disruption keeps CapacityBuffer room: a node the last provisioning round kept a
buffer's placeholders on is not empty, and a consolidation must still find the
placeholders a place after the move (here it cannot without a new node no cheaper than
the one removed, so nothing is disrupted). The same clusters without the buffer are
disrupted, which is what shows the buffer held them.

Nodes are spot ``c-2x`` (1900m), so no replacement is cheaper; a chunk asks for 1200m.
"""

from __future__ import annotations

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.methods.command import Command
from karpy.rounds.buffers import BufferPods
from karpy.rounds.inputs import build_round_input
from karpy.scheduling.buffers import template_pod, virtual_pods
from karpy.scheduling.solver import Scheduler
from tests import factories as f
from tests.disruption.deciders import decider
from tests.disruption.world import TYPES, World, managed_node, nodepool, pod_on

POOL = nodepool()


def spot(name: str) -> list[dict[str, object]]:
    return managed_node(name, "c-2x-amd64-linux", capacity_type="spot")


def one_chunk_buffer(world: World) -> BufferPods:
    """A buffer of one 1200m chunk, after a provisioning round placed it in ``world``."""
    template = template_pod("default", {"spec": f.pod(requests={"cpu": "1200m"})["spec"]})
    buffers = BufferPods()
    buffers.set("default/spare", virtual_pods("default/spare", "uid-1", template, 1))
    inputs = build_round_input(world.snapshot, TYPES, nominated={}, virtual=buffers.pods())
    results = Scheduler(world.compiled.context, inputs.cluster).solve(inputs.pods, budget=30.0)
    assert not results.new_nodeclaims, "the room is already there"
    buffers.record_round(results, {n.name for n in inputs.cluster.capacity if n.initialized})
    return buffers


def decided(objects: list[dict[str, object]], buffers: BufferPods | None) -> Command | None:
    """The command a disruption pass decides on (waiting for validation), if any."""
    d = decider(objects, buffers=buffers)
    d.events_of_a_pass()
    pending = d.disruption._pending
    return None if pending is None else pending[0]


def test_an_empty_node_holding_buffer_room_is_not_removed_as_empty() -> None:
    objects = [POOL, *spot("a"), *spot("b"), pod_on("b", "web-1", cpu="1200m")]
    world = World(objects)
    without = decided(objects, None)
    assert without is not None and without.reason is DisruptionReason.EMPTY
    buffers = one_chunk_buffer(world)
    assert buffers.hosting == {"a"}
    assert decided(objects, buffers) is None


def test_consolidation_does_not_take_away_the_room_the_buffer_needs() -> None:
    objects = [POOL, *spot("a"), pod_on("a", "web-1", cpu="1200m"),
               *spot("b"), pod_on("b", "web-2", cpu="300m")]  # fmt: skip
    world = World(objects)
    without = decided(objects, None)
    assert without is not None, "one node's pods fit on the other: it goes"
    assert len(without.candidates) == 1
    assert not without.replacements
    buffers = one_chunk_buffer(world)
    assert buffers.hosting == {"b"}
    assert decided(objects, buffers) is None, "the chunk would have nowhere to go"
