"""`NodeClaimLifecycle` driven one reconcile at a time, in process, against the API server
emulator with the fake cloud and a fake clock: launch → registered → initialized, and
deletion → finalized, asserting on the API objects the controller leaves behind.

Each step is what a controller restarted at that point would see, so these tests also
show that every step resumes from the API alone. Only `tests/e2e` ran these controllers
before, in a ``karpy controller`` process and at the pace of real time.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import attrs
import pytest

from karpy.apis.labels import (
    ANNOTATION_TERMINATION_TIMESTAMP,
    FINALIZER_TERMINATION,
    LABEL_INITIALIZED,
    LABEL_INSTANCE_TYPE,
    LABEL_REGISTERED,
    TAINT_UNREGISTERED,
)
from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.errors import CreateError
from karpy.cloud.fake.faults import FakeFaults
from karpy.lifecycle.finalize import INSTANCE_POLL
from karpy.lifecycle.launch import launch
from karpy.lifecycle.nodeclaim import NodeClaimLifecycle
from karpy.reconcile import DONE
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.fixtures.lifecycle import kubelet_reports_ready, lifecycle
from tests.fixtures.waiting import eventually

if TYPE_CHECKING:
    from karpy.sandbox.apiserver import APIServer
    from tests.fixtures.cluster import World

NODECLAIMS = "nodeclaims.karpenter.sh"
NODES = "nodes"
REQUESTS = {"cpu": "500m", "memory": "1Gi", "pods": "1"}


def new_claim(apiserver: APIServer, name: str, **options: Any) -> None:
    """A NodeClaim as provisioning creates it, not yet launched."""
    options.setdefault("requests", REQUESTS)
    apiserver.store.create(NODECLAIMS, f.nodeclaim(name, nodepool="default", launched=False,
                                                   **options))  # fmt: skip


def condition(obj: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    assert obj is not None
    found = [c for c in (obj.get("status") or {}).get("conditions") or () if c["type"] == type_]
    return found[0] if found else {}


def parse_time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp)


def taint_keys(node: dict[str, Any]) -> set[str]:
    return {t["key"] for t in node["spec"].get("taints") or ()}


def sample(world: World, name: str, labels: dict[str, str]) -> float:
    return world.metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_nodeclaim_is_launched_registered_initialized_and_finalized(apiserver):
    async with lifecycle(apiserver) as (world, ctx, clock):
        controller = NodeClaimLifecycle(ctx)
        new_claim(apiserver, "default-journey")
        await world.settled()

        # Launch: the finalizer first, then the instance, which the fake cloud writes as a
        # Node with the unregistered taint. (Whether this pass registers it too depends on
        # how soon the informer sees that Node: the next pass does, either way.)
        assert await controller.reconcile(NodeClaimName("default-journey")) == DONE
        claim = apiserver.store.get(NODECLAIMS, "default-journey")
        assert FINALIZER_TERMINATION in claim["metadata"]["finalizers"]
        assert condition(claim, "Launched")["status"] == "True"
        assert claim["status"]["providerID"] == "fake://test-zone-a/default-journey"
        assert LABEL_INSTANCE_TYPE in claim["metadata"]["labels"]
        assert claim["status"]["allocatable"]["cpu"]
        assert apiserver.store.try_get(NODES, "default-journey") is not None

        # Registered: the Node is made Karpenter's; it is not Ready, so not initialized.
        await world.settled()
        await controller.reconcile(NodeClaimName("default-journey"))
        claim = apiserver.store.get(NODECLAIMS, "default-journey")
        assert condition(claim, "Registered")["status"] == "True"
        assert claim["status"]["nodeName"] == "default-journey"
        initialized = condition(claim, "Initialized")
        assert (initialized["status"], initialized["reason"]) == ("Unknown", "NodeNotReady")
        node = apiserver.store.get(NODES, "default-journey", None)
        assert node["metadata"]["labels"][LABEL_REGISTERED] == "true"
        assert TAINT_UNREGISTERED not in taint_keys(node)
        assert FINALIZER_TERMINATION in node["metadata"]["finalizers"]
        assert node["metadata"]["ownerReferences"][0]["name"] == "default-journey"

        # Initialized once the kubelet reports Ready.
        kubelet_reports_ready(apiserver, "default-journey")
        await world.settled()
        await controller.reconcile(NodeClaimName("default-journey"))
        claim = apiserver.store.get(NODECLAIMS, "default-journey")
        assert condition(claim, "Initialized")["status"] == "True"
        node = apiserver.store.get(NODES, "default-journey", None)
        assert node["metadata"]["labels"][LABEL_INITIALIZED] == "true"
        pool = {"nodepool": "default"}
        for counter in ("launched", "registered", "initialized"):
            assert sample(world, f"karpenter_nodeclaims_{counter}_total", pool) == 1

        # Deleted: the Node goes first (its own finalizer holds it for the drain) ...
        apiserver.store.delete(NODECLAIMS, "default-journey")
        await world.settled()
        assert await controller.reconcile(NodeClaimName("default-journey")) == DONE
        node = apiserver.store.get(NODES, "default-journey", None)
        assert node["metadata"].get("deletionTimestamp")
        assert FINALIZER_TERMINATION in apiserver.store.get(NODECLAIMS, "default-journey")[
            "metadata"]["finalizers"]  # fmt: skip

        # ... and once node termination has let it go, the NodeClaim follows.
        node["metadata"]["finalizers"] = []
        apiserver.store.update(NODES, node)
        await world.settled()
        await clock.advance(30)
        assert await controller.reconcile(NodeClaimName("default-journey")) == DONE
        assert apiserver.store.try_get(NODECLAIMS, "default-journey") is None
        assert apiserver.store.try_get(NODES, "default-journey") is None
        labels = claim["metadata"]["labels"]
        terminated = sample(world, "karpenter_nodeclaims_terminated_total", {
            "nodepool": "default", "capacity_type": labels["karpenter.sh/capacity-type"],
            "zone": labels["topology.kubernetes.io/zone"]})  # fmt: skip
        assert terminated == 1
        # From the deletion (stamped by the emulator's wall clock, to the second) to the
        # finalizer's removal on the fake clock, 30 seconds later.
        seconds = sample(world, "karpenter_nodeclaims_termination_duration_seconds_sum", pool)
        assert seconds == pytest.approx(30, abs=3)


async def test_a_reconcile_of_a_finished_nodeclaim_writes_nothing(apiserver):
    async with lifecycle(apiserver) as (world, ctx, _):
        controller = NodeClaimLifecycle(ctx)
        new_claim(apiserver, "default-steady")
        await world.settled()
        await controller.reconcile(NodeClaimName("default-steady"))
        kubelet_reports_ready(apiserver, "default-steady")
        await world.settled()
        await controller.reconcile(NodeClaimName("default-steady"))
        await world.settled()
        claim = apiserver.store.get(NODECLAIMS, "default-steady")
        node = apiserver.store.get(NODES, "default-steady", None)
        assert condition(claim, "Initialized")["status"] == "True"

        await controller.reconcile(NodeClaimName("default-steady"))
        assert apiserver.store.get(NODECLAIMS, "default-steady") == claim
        assert apiserver.store.get(NODES, "default-steady", None) == node


async def test_an_unregistered_nodeclaim_terminates_its_instance_and_waits_for_it(apiserver):
    """Without a registered Node there is nothing to drain: the instance is terminated,
    looked at again every five seconds, and the finalizer goes once it is gone."""
    async with lifecycle(apiserver) as (world, ctx, clock):
        controller = NodeClaimLifecycle(ctx)
        spec = f.nodeclaim("default-early", nodepool="default", launched=False,
                           requests=REQUESTS, finalizers=[FINALIZER_TERMINATION])  # fmt: skip
        await launch(ctx, NodeClaim.from_dict(apiserver.store.create(NODECLAIMS, spec)))
        apiserver.store.delete(NODECLAIMS, "default-early")
        await world.settled()

        result = await controller.reconcile(NodeClaimName("default-early"))
        assert result.requeue_after == INSTANCE_POLL
        claim = apiserver.store.get(NODECLAIMS, "default-early")
        assert condition(claim, "InstanceTerminating")["status"] == "True"
        assert FINALIZER_TERMINATION in claim["metadata"]["finalizers"]
        assert apiserver.store.try_get(NODES, "default-early") is None  # the instance

        await world.settled()
        await clock.advance(INSTANCE_POLL)
        assert await controller.reconcile(NodeClaimName("default-early")) == DONE
        assert apiserver.store.try_get(NODECLAIMS, "default-early") is None


async def test_a_termination_grace_period_is_written_as_the_deadline(apiserver):
    async with lifecycle(apiserver) as (world, ctx, _):
        controller = NodeClaimLifecycle(ctx)
        spec = f.nodeclaim("default-graced", nodepool="default", launched=False,
                           requests=REQUESTS, finalizers=[FINALIZER_TERMINATION])  # fmt: skip
        spec["spec"]["terminationGracePeriod"] = "1h"
        apiserver.store.create(NODECLAIMS, spec)
        await world.settled()
        await controller.reconcile(NodeClaimName("default-graced"))
        apiserver.store.delete(NODECLAIMS, "default-graced")
        await world.settled()
        await controller.reconcile(NodeClaimName("default-graced"))
        claim = apiserver.store.get(NODECLAIMS, "default-graced")
        deadline = claim["metadata"]["annotations"][ANNOTATION_TERMINATION_TIMESTAMP]
        deleted = claim["metadata"]["deletionTimestamp"]
        assert parse_time(deadline) == parse_time(deleted) + timedelta(hours=1)
        await eventually(lambda: world.events("TerminationGracePeriodExpiring"))


async def test_no_capacity_marks_the_offerings_and_deletes_the_nodeclaim(apiserver):
    async with lifecycle(apiserver, faults=FakeFaults([("*", "*", "*")])) as (world, ctx, _):
        controller = NodeClaimLifecycle(ctx)
        new_claim(apiserver, "default-nocap")
        await world.settled()
        assert await controller.reconcile(NodeClaimName("default-nocap")) == DONE
        assert ctx.unavailable.current(), "the offerings tried are unavailable for a while"
        claim = apiserver.store.get(NODECLAIMS, "default-nocap")
        assert claim["metadata"].get("deletionTimestamp")
        assert not (claim.get("status") or {}).get("providerID")
        await eventually(lambda: world.events("InsufficientCapacityError"))
        disrupted = sample(world, "karpenter_nodeclaims_disrupted_total", {
            "reason": "insufficient_capacity", "nodepool": "default", "capacity_type": "",
            "consolidation_policy": "", "termination_mode": ""})  # fmt: skip
        assert disrupted == 1

        # Nothing was launched, so nothing is terminated: the finalizer just goes.
        await world.settled()
        assert await controller.reconcile(NodeClaimName("default-nocap")) == DONE
        assert apiserver.store.try_get(NODECLAIMS, "default-nocap") is None
        assert apiserver.store.list(NODES) == []


async def test_pods_nominated_to_a_nodeclaim_without_capacity_are_told_so(apiserver):
    """Karpenter v1.15 (#3143): each pod still waiting for the NodeClaim gets a Warning
    Event naming it and the error; pods bound meanwhile, finished or gone get none."""
    async with lifecycle(apiserver, faults=FakeFaults([("*", "*", "*")])) as (world, base, _):
        nominated = {"default-nocap": ["default/waiting", "default/bound", "default/gone"]}
        ctx = attrs.evolve(base, nominated=lambda name: nominated.get(name, []))
        apiserver.store.create("pods", f.pod("waiting"))
        apiserver.store.create("pods", f.pod("bound", node_name="elsewhere"))
        new_claim(apiserver, "default-nocap")
        await world.settled()
        assert await NodeClaimLifecycle(ctx).reconcile(NodeClaimName("default-nocap")) == DONE
        events = await eventually(lambda: [
            e for e in world.events("InsufficientCapacityError")
            if e["involvedObject"]["kind"] == "Pod"])  # fmt: skip
        assert [e["involvedObject"]["name"] for e in events] == ["waiting"]
        assert events[0]["type"] == "Warning"
        assert events[0]["message"].startswith(
            "NodeClaim default-nocap nominated for this pod failed to launch: "
        )


async def test_a_missing_nodeclass_deletes_the_nodeclaim_with_an_event(apiserver):
    async with lifecycle(apiserver) as (world, ctx, _):
        ref = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "absent"}
        new_claim(apiserver, "default-noclass", node_class_ref=ref)
        await world.settled()
        assert await NodeClaimLifecycle(ctx).reconcile(NodeClaimName("default-noclass")) == DONE
        claim = apiserver.store.get(NODECLAIMS, "default-noclass")
        assert claim["metadata"].get("deletionTimestamp")
        await eventually(lambda: world.events("NodeClassNotReady"))
        assert apiserver.store.list(NODES) == []


async def test_a_failed_launch_is_unknown_with_the_reason_and_retried(apiserver):
    faults = FakeFaults()
    faults.fail("create", error=CreateError("the API is down", "ServiceUnavailable"))
    async with lifecycle(apiserver, faults=faults) as (world, ctx, _):
        controller = NodeClaimLifecycle(ctx)
        new_claim(apiserver, "default-retried")
        await world.settled()
        with pytest.raises(CreateError):  # the controller's per-key backoff retries it
            await controller.reconcile(NodeClaimName("default-retried"))
        launched = condition(apiserver.store.get(NODECLAIMS, "default-retried"), "Launched")
        assert (launched["status"], launched["reason"]) == ("Unknown", "ServiceUnavailable")
        assert launched["message"] == "the API is down"

        await world.settled()
        await controller.reconcile(NodeClaimName("default-retried"))
        launched = condition(apiserver.store.get(NODECLAIMS, "default-retried"), "Launched")
        assert launched["status"] == "True"
        assert apiserver.store.try_get(NODES, "default-retried") is not None
