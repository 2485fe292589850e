"""A NodeClaim's conditions as the lifecycle writes them: ``Ready`` over ``Launched``,
``Registered`` and ``Initialized`` the way Karpenter computes it, every condition
observing the NodeClaim's generation, messages cut to 300 characters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from karpy.apis.conditions import ConditionUpdate
from karpy.apis.nodeclaim import NodeClaim
from karpy.lifecycle.conditions import LAUNCHED, conditions_of
from karpy.lifecycle.launch import launch
from tests import factories as f
from tests.fixtures.lifecycle import lifecycle

NODECLAIMS = "nodeclaims.karpenter.sh"


def stored_conditions(apiserver: Any, name: str) -> dict[str, Any]:
    claim = apiserver.store.get(NODECLAIMS, name)
    return {c["type"]: c for c in claim["status"]["conditions"]}


async def test_a_launched_nodeclaim_is_not_ready_until_registered_and_initialized(apiserver):
    async with lifecycle(apiserver) as (_, ctx, _):
        spec = f.nodeclaim("default-a", nodepool="default", launched=False,
                           requests={"cpu": "500m"})  # fmt: skip
        created = apiserver.store.create(NODECLAIMS, spec)
        await launch(ctx, NodeClaim.from_dict(created))
        found = stored_conditions(apiserver, "default-a")
        generation = apiserver.store.get(NODECLAIMS, "default-a")["metadata"]["generation"]
        assert (found["Launched"]["status"], found["Launched"]["reason"]) == ("True", "Launched")
        ready = found["Ready"]
        waiting = "Registered=Unknown, Initialized=Unknown"
        assert (ready["status"], ready["reason"]) == ("Unknown", "ReconcilingDependents")
        assert ready["message"] == waiting
        assert {c["observedGeneration"] for c in found.values()} == {generation}


def test_a_nodeclaim_condition_message_is_cut_to_300_characters():
    claim = NodeClaim.from_dict(f.nodeclaim("default-b", launched=False))
    failed = ConditionUpdate.unknown(LAUNCHED, "LaunchFailed", "x" * 1000)
    updated = conditions_of(claim).apply(failed, now=datetime.now(UTC))
    launched = updated.get(LAUNCHED)
    assert launched is not None and launched.message == "x" * 300
