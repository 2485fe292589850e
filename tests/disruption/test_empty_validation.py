"""An emptiness decision validated 15 s later goes ahead with the candidates that still
hold, as Karpenter's EmptinessValidator does: a node that took a pod in the meantime is
dropped from the command, not the whole command (at 11,000 nodes, one pod landing on one
of 900 empty nodes sent all of them back to be decided again, over and over)."""

from __future__ import annotations

from typing import Any

from karpy.disruption.controller import Disruption
from karpy.settings import Settings
from tests.disruption.deciders import Contexts
from tests.disruption.world import NOW, World, managed_node, nodepool, pod_on, store
from tests.fixtures.cluster import controller_world
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
TYPE = "c-2x-amd64-linux"


def disrupted(apiserver: Any) -> set[str]:
    """The NodeClaims a started command has marked with its reason."""
    return {
        claim["metadata"]["name"]
        for claim in apiserver.store.list(NODECLAIMS)
        if any(
            c["type"] == "DisruptionReason" and c["status"] == "True"
            for c in claim.get("status", {}).get("conditions", [])
        )
    }


async def run_pass(budgets: list[dict[str, str]], apiserver: Any, late: list[Any]) -> Any:
    nodes = [obj for name in ("a", "b", "c") for obj in managed_node(name, TYPE)]
    objects = [nodepool(consolidationPolicy="WhenEmpty", budgets=budgets), *nodes]
    store(apiserver, objects)
    clock = FakeClock(NOW)
    async with controller_world(apiserver) as world:
        await world.settled()
        disruption = Disruption(world.state, world.client, world.recorder, Settings(),
                                contexts=Contexts(World(objects).compiled),  # type: ignore[arg-type]
                                nominations=lambda _: {}, clock=clock,
                                metrics=world.metrics.karpenter)  # fmt: skip
        await disruption.reconcile()  # decides; validation is due in 15 s
        await world.settled()
        assert disrupted(apiserver) == set(), "nothing starts before its validation"
        store(apiserver, late)
        await world.settled()
        await clock.advance(15.0)
        await disruption.reconcile()
        await world.settled()
        return world.metrics.registry.get_sample_value(
            "karpenter_voluntary_disruption_failed_validations_total",
            {"consolidation_type": "empty"},
        )


async def test_a_node_that_took_a_pod_is_dropped_and_the_rest_are_disrupted(apiserver) -> None:
    failed = await run_pass([{"nodes": "100%"}], apiserver, [pod_on("b", "late")])
    assert disrupted(apiserver) == {"a", "c"}
    assert failed == 1


async def test_a_command_left_with_no_empty_candidate_is_abandoned(apiserver) -> None:
    late = [pod_on(name, f"late-{name}") for name in ("a", "b", "c")]
    failed = await run_pass([{"nodes": "100%"}], apiserver, late)
    assert disrupted(apiserver) == set()
    assert failed == 1
