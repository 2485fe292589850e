"""`NodeClaimDisruptionConditions` against the API server emulator: the conditions it
writes observe the NodeClaim's generation, as every karpy condition does."""

from __future__ import annotations

from karpy.disruption.conditions import NodeClaimDisruptionConditions
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.lifecycle.helpers import lifecycle

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
