"""A NodeClaim a decision has marked is no candidate, even before its node is tainted.

The queue taints a marked node only once its replacements reach the informer
(`karpy.disruption.orchestration`); a pass in that window used to see the node as a
candidate again, and with a budget of two or more chose it a second time: the decision
counted and carried out twice, and, where its pods needed capacity the first replacements
no longer offered, a second set of replacements."""

from __future__ import annotations

from typing import Any

from karpy.disruption.candidates import BlockedBy, find_candidates
from karpy.disruption.controller import Disruption
from karpy.settings import Settings
from tests.disruption.deciders import Contexts
from tests.disruption.world import NOW, TYPES, World, managed_node, nodepool, pod_on, store
from tests.fixtures.cluster import controller_world
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
TYPE = "c-2x-amd64-linux"


def drifted(name: str) -> list[dict[str, Any]]:
    return [*managed_node(name, TYPE, consolidatable=False, drifted=True),
            pod_on(name, f"{name}-web", cpu="1500m")]  # fmt: skip


def test_a_marked_nodeclaim_is_blocked_as_already_disrupting() -> None:
    chosen = drifted("chosen")
    chosen[1]["status"]["conditions"].append(
        {"type": "DisruptionReason", "status": "True", "reason": "Drifted"})  # fmt: skip
    world = World([nodepool(), *chosen, *drifted("other")])
    found, blocked = find_candidates(world.snapshot, now=NOW, nominated=set(),
                                     types_by_name=TYPES)  # fmt: skip
    assert [c.name for c in found] == ["other"]
    assert [(b.name, b.by) for b in blocked] == [("chosen", BlockedBy.DELETING)]


def spare(name: str) -> list[dict[str, Any]]:
    """An initialized node with room for the drifted nodes' pods: drift deletes them
    without replacements, so nothing but the mark stands between a pass and the next."""
    return managed_node(name, "c-8x-amd64-linux", consolidatable=False)


async def test_back_to_back_passes_choose_each_drifted_node_once(apiserver) -> None:
    objects = [nodepool(budgets=[{"nodes": "100%"}]), *drifted("a"), *drifted("b"),
               *spare("spare")]  # fmt: skip
    store(apiserver, objects)
    async with controller_world(apiserver) as world:
        await world.settled()
        disruption = Disruption(world.state, world.client, world.recorder, Settings(),
                                contexts=Contexts(World(objects).compiled),  # type: ignore[arg-type]
                                nominations=lambda _: {}, clock=FakeClock(NOW),
                                metrics=world.metrics.karpenter)  # fmt: skip
        for _ in range(3):  # no queue runs: the chosen nodes stay untainted between passes
            await disruption.reconcile()
            await world.settled()
        decided = world.metrics.registry.get_sample_value(
            "karpenter_voluntary_disruption_decisions_total",
            {"decision": "delete", "reason": "Drifted", "consolidation_type": ""},
        )
        assert decided == 2, "a and b, each once"
        claims = {c["metadata"]["name"] for c in apiserver.store.list(NODECLAIMS)}
        assert claims == {"a", "b", "spare"}, "no replacement made"
