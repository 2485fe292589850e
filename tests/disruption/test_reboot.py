"""Node repair's reboot carried out by `DisruptionQueue` (`karpy.disruption.reboot`)
against the API server emulator with the fake cloud, on the fake clock: the node is
tainted and drained, its boot written down before the reboot is asked for, and the
NodeClaim unmarked once the node boots again; a controller that finds the boot already
written down never reboots a second time."""

from __future__ import annotations

from typing import Any

from karpy.apis.core import format_time
from karpy.apis.labels import (
    ANNOTATION_REBOOT_GRACE,
    ANNOTATION_REBOOT_PRE_BOOT_ID,
    ANNOTATION_REBOOTED_AT,
    ANNOTATION_REPAIR_REBOOT,
    ANNOTATION_REPLACEMENTS,
    FINALIZER_TERMINATION,
    TAINT_DISRUPTED,
)
from karpy.disruption.orchestration import DisruptionQueue
from karpy.disruption.reboot import REBOOT_TIMEOUT
from karpy.lifecycle.context import Lifecycle
from karpy.lifecycle.termination.eviction import Evictor
from karpy.reconcile import DONE
from karpy.sandbox.apiserver import APIServer
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.fixtures.cluster import World
from tests.fixtures.lifecycle import lifecycle, running_nodeclaim
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
NAME = "default-gpu"
KEY = NodeClaimName(NAME)


def queue(world: World, ctx: Lifecycle, clock: FakeClock) -> DisruptionQueue:
    evictor = Evictor(world.client, world.recorder, clock=clock)
    return DisruptionQueue(world.state, world.client, world.recorder, clock=clock,
                           provider=ctx.provider, evictor=evictor)  # fmt: skip


async def marked_for_reboot(
    apiserver: APIServer, world: World, clock: FakeClock, **annotations: str
) -> None:
    """The running node with a pod, its NodeClaim marked by a repair decision to reboot."""
    apiserver.store.create("pods", f.pod("web-1", node_name=NAME, phase="Running"))
    apiserver.store.patch(NODECLAIMS, NAME, {"metadata": {"annotations": {
        ANNOTATION_REPLACEMENTS: "", ANNOTATION_REPAIR_REBOOT: "true",
        ANNOTATION_REBOOT_GRACE: "15m", **annotations}}})  # fmt: skip
    claim = apiserver.store.get(NODECLAIMS, NAME)
    claim["status"]["conditions"].append({
        "type": "DisruptionReason", "status": "True", "reason": "Unhealthy", "message": "",
        "lastTransitionTime": format_time(clock.now().replace(microsecond=0))})  # fmt: skip
    apiserver.store.update_status(NODECLAIMS, claim)
    await world.settled()


def boot_id(apiserver: APIServer) -> str:
    node: dict[str, Any] = apiserver.store.get("nodes", NAME, None)
    return str((node["status"].get("nodeInfo") or {}).get("bootID", ""))


def tainted(apiserver: APIServer) -> bool:
    taints = apiserver.store.get("nodes", NAME, None)["spec"].get("taints") or ()
    return any(t["key"] == TAINT_DISRUPTED for t in taints)


def claim_annotations(apiserver: APIServer) -> dict[str, str]:
    return dict(apiserver.store.get(NODECLAIMS, NAME)["metadata"].get("annotations") or {})


async def test_a_node_is_drained_rebooted_and_given_back(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        await running_nodeclaim(apiserver, world, ctx, NAME, finalizers=[FINALIZER_TERMINATION])
        await marked_for_reboot(apiserver, world, clock)
        before = boot_id(apiserver)
        repair = queue(world, ctx, clock)

        await repair.reconcile(KEY)  # taint, evict
        assert tainted(apiserver)
        evicted = apiserver.store.get("pods", "web-1", "default")
        assert evicted["metadata"].get("deletionTimestamp"), "evicted"
        apiserver.store.delete("pods", "web-1", "default", grace_period_seconds=0)  # kubelet
        await world.settled()
        await repair.reconcile(KEY)  # drained: write the boot down, reboot
        written = claim_annotations(apiserver)
        assert written[ANNOTATION_REBOOT_PRE_BOOT_ID] == before
        assert written[ANNOTATION_REBOOTED_AT] == format_time(clock.now())
        assert boot_id(apiserver) != before, "the fake cloud rebooted it"
        await eventually(lambda: world.events("DisruptionRebooting"))

        await world.settled()
        assert await repair.reconcile(KEY) == DONE  # a new boot: done
        left = claim_annotations(apiserver)
        assert ANNOTATION_REBOOTED_AT in left, "kept: a node is rebooted once"
        for gone in (ANNOTATION_REPAIR_REBOOT, ANNOTATION_REBOOT_PRE_BOOT_ID,
                     ANNOTATION_REBOOT_GRACE, ANNOTATION_REPLACEMENTS):  # fmt: skip
            assert gone not in left
        claim = apiserver.store.get(NODECLAIMS, NAME)
        assert "DisruptionReason" not in {c["type"] for c in claim["status"]["conditions"]}
        assert not claim["metadata"].get("deletionTimestamp"), "the node stays"
        assert not tainted(apiserver)
        await eventually(lambda: world.events("DisruptionRebooted"))


async def test_a_boot_already_written_down_is_never_rebooted_again(apiserver):
    """As after a restart between writing the boot down and the node booting again."""
    async with lifecycle(apiserver) as (world, ctx, clock):
        await running_nodeclaim(apiserver, world, ctx, NAME, finalizers=[FINALIZER_TERMINATION])
        current = boot_id(apiserver)
        await marked_for_reboot(apiserver, world, clock,
                                **{ANNOTATION_REBOOT_PRE_BOOT_ID: current,
                                   ANNOTATION_REBOOTED_AT: format_time(clock.now())})  # fmt: skip
        fresh = queue(world, ctx, clock)
        assert (await fresh.reconcile(KEY)).requeue_after
        await world.settled()
        assert boot_id(apiserver) == current, "no second reboot"

        await clock.advance(REBOOT_TIMEOUT.total_seconds() + 1)
        assert await fresh.reconcile(KEY) == DONE
        assert ANNOTATION_REPAIR_REBOOT not in claim_annotations(apiserver)
        blocked = await eventually(lambda: world.events("DisruptionBlocked"))
        assert "no new boot within 10 minutes" in blocked[0]["message"]
