"""`NodeClaimDisruptionConditions` against the API server emulator: the conditions it
writes observe the NodeClaim's generation, as every karpy condition does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from karpy.disruption.conditions import NodeClaimDisruptionConditions
from karpy.state.cluster import StateChange
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.fixtures.lifecycle import lifecycle

NODECLAIMS = "nodeclaims.karpenter.sh"


async def test_consolidatable_observes_the_nodeclaims_generation(apiserver):
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("default"))
    spec = f.nodeclaim("default-a", nodepool="default", registered=True, initialized=True)
    created = apiserver.store.create(NODECLAIMS, spec)
    conditions = [{**c, "lastTransitionTime": "2025-01-01T00:00:00Z"}
                  for c in spec["status"]["conditions"]]  # fmt: skip
    created["status"] = {**spec["status"], "conditions": conditions}
    apiserver.store.update_status(NODECLAIMS, created)
    async with lifecycle(apiserver) as (world, ctx, clock):
        judge = NodeClaimDisruptionConditions(world.state, world.client, ctx.provider,
                                              clock=clock)  # fmt: skip
        await judge.reconcile(NodeClaimName("default-a"))
        claim = apiserver.store.get(NODECLAIMS, "default-a")
        found = {c["type"]: c for c in claim["status"]["conditions"]}
        assert found["Consolidatable"]["status"] == "True"
        assert found["Consolidatable"]["observedGeneration"] == claim["metadata"]["generation"]
        await world.settled()
        written = claim["metadata"]["resourceVersion"]
        await judge.reconcile(NodeClaimName("default-a"))
        again = apiserver.store.get(NODECLAIMS, "default-a")["metadata"]["resourceVersion"]
        assert again == written, "no write when nothing changed"


async def test_a_pod_bound_to_the_node_sets_last_pod_event_time_through_its_observer(apiserver):
    """Noting a pod event is the observer's job, subscribed beside the controller: asking
    which keys a change concerns records nothing (keys_for is pure)."""
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("default"))
    spec = f.nodeclaim(
        "default-a",
        nodepool="default",
        provider_id="fake://a",
        node_name="node-a",
        registered=True,
        initialized=True,
    )
    created = apiserver.store.create(NODECLAIMS, spec)
    conditions = [{**c, "lastTransitionTime": "2025-01-01T00:00:00Z"}
                  for c in spec["status"]["conditions"]]  # fmt: skip
    created["status"] = {**spec["status"], "conditions": conditions}
    apiserver.store.update_status(NODECLAIMS, created)
    apiserver.store.create("nodes", f.node("node-a", provider_id="fake://a"))
    async with lifecycle(apiserver) as (world, ctx, clock):
        judge = NodeClaimDisruptionConditions(world.state, world.client, ctx.provider,
                                              clock=clock)  # fmt: skip
        pod = f.pod("web", node_name="node-a")

        def ask_for_keys(changes: Sequence[StateChange[Any]]) -> None:
            for change in changes:  # only asks which keys each change concerns
                judge.keys_for(change)

        unsubscribe = world.state.subscribe(ask_for_keys)
        apiserver.store.create("pods", pod)
        await world.settled()
        unsubscribe()
        await judge.reconcile(NodeClaimName("default-a"))
        status = apiserver.store.get(NODECLAIMS, "default-a")["status"]
        assert "lastPodEventTime" not in status, "keys_for noted a pod event"

        world.state.subscribe(judge.pod_events_observed)
        apiserver.store.create("pods", f.pod("api", node_name="node-a"))
        await world.settled()
        await judge.reconcile(NodeClaimName("default-a"))
        status = apiserver.store.get(NODECLAIMS, "default-a")["status"]
        assert status["lastPodEventTime"] == clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
