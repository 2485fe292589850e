"""`DisruptionQueue` against the API server emulator with the fake cloud, on the fake
clock: a NodeClaim a decision marked is tainted, waits for its replacement to initialize
and is then deleted; a decision whose replacement goes, or does not initialize within ten
minutes, is rolled back; a disrupted taint nobody stands behind is removed."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from karpy.apis.core import format_time
from karpy.apis.labels import (
    ANNOTATION_REPAIR_GRACE,
    ANNOTATION_REPLACEMENTS,
    ANNOTATION_TERMINATION_TIMESTAMP,
    FINALIZER_TERMINATION,
    TAINT_DISRUPTED,
)
from karpy.disruption.orchestration import POLL, DisruptionQueue
from karpy.lifecycle.context import Lifecycle
from karpy.reconcile import DONE
from karpy.sandbox.apiserver import APIServer
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.fixtures.cluster import World
from tests.fixtures.lifecycle import lifecycle, running_nodeclaim
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
REASON = "Underutilized"


def queue(world: World, clock: FakeClock) -> DisruptionQueue:
    return DisruptionQueue(world.state, world.client, world.recorder, clock=clock,
                           metrics=world.metrics.karpenter)  # fmt: skip


def mark(apiserver: APIServer, name: str, replacements: list[str], clock: FakeClock, *,
         reason: str = REASON, annotations: dict[str, str] | None = None) -> None:  # fmt: skip
    """What a disruption decision writes on the NodeClaim it chose."""
    apiserver.store.patch(NODECLAIMS, name, {"metadata": {"annotations": {
        ANNOTATION_REPLACEMENTS: ",".join(replacements), **(annotations or {})}}})  # fmt: skip
    claim = apiserver.store.get(NODECLAIMS, name)
    claim["status"]["conditions"].append({
        "type": "DisruptionReason", "status": "True", "reason": reason, "message": "",
        "lastTransitionTime": format_time(clock.now().replace(microsecond=0))})  # fmt: skip
    apiserver.store.update_status(NODECLAIMS, claim)


def disrupted_taints(apiserver: APIServer, name: str) -> list[dict[str, Any]]:
    taints = apiserver.store.get("nodes", name, None)["spec"].get("taints") or ()
    return [t for t in taints if t["key"] == TAINT_DISRUPTED]


async def replaced_world(
    apiserver: APIServer, world: World, ctx: Lifecycle, clock: FakeClock, **marking: Any
) -> None:
    """``default-old`` running, marked for replacement by ``default-new``, which has been
    created and launched but not initialized (``marking``: `mark`'s options)."""
    await running_nodeclaim(apiserver, world, ctx, "default-old",
                            finalizers=[FINALIZER_TERMINATION])  # fmt: skip
    apiserver.store.create(NODECLAIMS, f.nodeclaim("default-new", nodepool="default",
                                                   finalizers=[FINALIZER_TERMINATION]))  # fmt: skip
    mark(apiserver, "default-old", ["default-new"], clock, **marking)
    await world.settled()


async def test_a_marked_nodeclaim_is_deleted_once_its_replacement_is_initialized(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await replaced_world(apiserver, world, ctx, clock)
        disruption = queue(world, clock)

        assert (await disruption.reconcile(NodeClaimName("default-old"))).requeue_after == POLL
        assert disrupted_taints(apiserver, "default-old"), "no new pods while it waits"
        assert not apiserver.store.get(NODECLAIMS, "default-old")["metadata"].get(
            "deletionTimestamp")  # fmt: skip
        await eventually(lambda: world.events("DisruptionWaitingReadiness"))

        new = apiserver.store.get(NODECLAIMS, "default-new")
        initialized = {"type": "Initialized", "status": "True", "reason": "Initialized",
                       "message": "", "lastTransitionTime": format_time(clock.now())}  # fmt: skip
        new["status"] = {"conditions": [initialized]}
        apiserver.store.update_status(NODECLAIMS, new)
        await world.settled()
        apiserver.store.create("pods", f.pod("web-1", node_name="default-old"))
        apiserver.store.create("nodepools.karpenter.sh", f.nodepool("default"))
        await world.settled()
        assert await disruption.reconcile(NodeClaimName("default-old")) == DONE
        assert apiserver.store.get(NODECLAIMS, "default-old")["metadata"]["deletionTimestamp"]
        await eventually(lambda: world.events("DisruptionTerminating"))
        labels = {"reason": "underutilized", "nodepool": "default",
                  "capacity_type": apiserver.store.get(NODECLAIMS, "default-old")["metadata"][
                      "labels"]["karpenter.sh/capacity-type"],
                  "consolidation_policy": "when_empty_or_underutilized",
                  "termination_mode": "graceful"}  # fmt: skip
        registry = world.metrics.registry
        assert registry.get_sample_value("karpenter_nodeclaims_disrupted_total", labels) == 1
        assert registry.get_sample_value("karpenter_pods_disruption_initiated_total", labels) == 1


def initialize(apiserver: APIServer, name: str, clock: FakeClock) -> None:
    claim = apiserver.store.get(NODECLAIMS, name)
    initialized = {"type": "Initialized", "status": "True", "reason": "Initialized",
                   "message": "", "lastTransitionTime": format_time(clock.now())}  # fmt: skip
    claim["status"] = {"conditions": [initialized]}
    apiserver.store.update_status(NODECLAIMS, claim)


@pytest.mark.parametrize(("grace", "mode"), [("0s", "forceful"), ("5m", "graceful")])
async def test_a_repair_sets_its_drain_deadline_as_it_deletes(apiserver, grace, mode):
    """Node repair's policy grace period (0s: forceful, skip the drain) becomes the
    termination timestamp; the NodeClaim here has none of its own to be shorter."""
    async with lifecycle(apiserver) as (world, ctx, clock):
        await replaced_world(apiserver, world, ctx, clock, reason="Unhealthy",
                             annotations={ANNOTATION_REPAIR_GRACE: grace})  # fmt: skip
        disruption = queue(world, clock)
        await disruption.reconcile(NodeClaimName("default-old"))
        initialize(apiserver, "default-new", clock)
        await world.settled()
        assert await disruption.reconcile(NodeClaimName("default-old")) == DONE
        claim = apiserver.store.get(NODECLAIMS, "default-old")
        assert claim["metadata"]["deletionTimestamp"]
        deadline = clock.now().replace(microsecond=0) + timedelta(minutes=0 if grace == "0s" else 5)
        annotations = claim["metadata"]["annotations"]
        assert annotations[ANNOTATION_TERMINATION_TIMESTAMP] == format_time(deadline)
        labels = {"reason": "unhealthy", "nodepool": "default",
                  "capacity_type": claim["metadata"]["labels"]["karpenter.sh/capacity-type"],
                  "consolidation_policy": "", "termination_mode": mode}  # fmt: skip
        registry = world.metrics.registry
        assert registry.get_sample_value("karpenter_nodeclaims_disrupted_total", labels) == 1


async def test_a_rolled_back_repair_forgets_its_grace_period(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await replaced_world(apiserver, world, ctx, clock, reason="Unhealthy",
                             annotations={ANNOTATION_REPAIR_GRACE: "0s"})  # fmt: skip
        apiserver.store.delete(NODECLAIMS, "default-new")
        await world.settled()
        assert await queue(world, clock).reconcile(NodeClaimName("default-old")) == DONE
        annotations = apiserver.store.get(NODECLAIMS, "default-old")["metadata"]["annotations"]
        assert ANNOTATION_REPAIR_GRACE not in annotations
        assert ANNOTATION_TERMINATION_TIMESTAMP not in annotations


async def test_a_decision_whose_replacement_is_deleted_is_rolled_back(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await replaced_world(apiserver, world, ctx, clock)
        disruption = queue(world, clock)
        await disruption.reconcile(NodeClaimName("default-old"))
        assert disrupted_taints(apiserver, "default-old")

        apiserver.store.delete(NODECLAIMS, "default-new")  # its launch failed, say
        await world.settled()
        assert await disruption.reconcile(NodeClaimName("default-old")) == DONE
        claim = apiserver.store.get(NODECLAIMS, "default-old")
        assert not claim["metadata"].get("deletionTimestamp")
        assert ANNOTATION_REPLACEMENTS not in claim["metadata"].get("annotations", {})
        assert "DisruptionReason" not in {c["type"] for c in claim["status"]["conditions"]}
        assert disrupted_taints(apiserver, "default-old") == []
        blocked = await eventually(lambda: world.events("DisruptionBlocked"))
        assert "replacement default-new was deleted" in blocked[0]["message"]


async def test_a_replacement_not_initialized_within_ten_minutes_rolls_the_decision_back(
    apiserver,
):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await replaced_world(apiserver, world, ctx, clock)
        disruption = queue(world, clock)
        await disruption.reconcile(NodeClaimName("default-old"))
        await clock.advance(9 * 60)
        assert (await disruption.reconcile(NodeClaimName("default-old"))).requeue_after == POLL

        await clock.advance(61)
        assert await disruption.reconcile(NodeClaimName("default-old")) == DONE
        assert disrupted_taints(apiserver, "default-old") == []
        blocked = await eventually(lambda: world.events("DisruptionBlocked"))
        assert "not initialized within 10 minutes" in blocked[0]["message"]
        failures = world.metrics.registry.get_sample_value(
            "karpenter_voluntary_disruption_queue_failures_total",
            {"decision": "replace", "reason": REASON, "consolidation_type": ""},
        )  # fmt: skip
        assert failures == 1


async def test_a_disrupted_taint_without_a_decision_behind_it_is_removed(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await running_nodeclaim(apiserver, world, ctx, "default-stale")
        node = apiserver.store.get("nodes", "default-stale", None)
        node["spec"]["taints"] = [*(node["spec"].get("taints") or ()),
                                  {"key": TAINT_DISRUPTED, "effect": "NoSchedule"}]  # fmt: skip
        apiserver.store.update("nodes", node)
        await world.settled()
        assert await queue(world, clock).reconcile(NodeClaimName("default-stale")) == DONE
        assert disrupted_taints(apiserver, "default-stale") == []
