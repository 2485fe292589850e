"""The node termination controller, step by step: NodeClaim deletion, the shortcut for
a node whose instance is gone, the taint, the conditions, the instance, the finalizer."""

from __future__ import annotations

import asyncio

from karpy.lifecycle.termination import termination_controllers
from karpy.reconcile import DONE
from tests.fixtures.waiting import eventually
from tests.lifecycle.termination.harness import (
    NODEPOOL,
    TERMINATION,
    ZONE,
    Cluster,
    advancing,
    cluster,
)

DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}
OTHER_FINALIZER = "example.com/keep"


def taints(c: Cluster, name: str) -> list[dict[str, str]]:
    node = c.get_node(name) or {}
    return list((node.get("spec") or {}).get("taints") or ())


def finalizers(c: Cluster, name: str) -> list[str]:
    node = c.get_node(name) or {}
    return list(node["metadata"].get("finalizers") or ()) if node else []


async def test_nodes_not_being_deleted_or_not_ours_are_left_alone(apiserver):
    async with cluster(apiserver) as c:
        c.node("alive")
        c.node("foreign", finalizers=[OTHER_FINALIZER])
        c.pod("alive", "web")
        c.pod("foreign", "db")
        c.delete_node("foreign")
        assert await c.reconcile("alive") == DONE
        assert await c.reconcile("foreign") == DONE
        assert await c.reconcile("missing") == DONE
        assert taints(c, "alive") == taints(c, "foreign") == []
        assert c.pod_names() == ["db", "web"]
        assert c.claim_obj("alive")["metadata"].get("deletionTimestamp") is None
        assert list(c.termination.all_keys(c.state.snapshot())) == []


async def test_the_taint_is_added_to_the_whole_list_of_taints(apiserver):
    existing = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute",
         "timeAdded": "2025-01-01T00:00:00Z"},
        {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        {"key": "karpenter.sh/disrupted", "effect": "NoExecute"},  # same key, other effect
    ]  # fmt: skip
    async with cluster(apiserver) as c:
        c.node("n1", taints=existing)
        c.delete_node("n1")
        await c.reconcile("n1")
        assert taints(c, "n1") == [*existing[:2], DISRUPTED]
        labels = c.node_obj("n1")["metadata"]["labels"]
        assert labels["node.kubernetes.io/exclude-from-external-load-balancers"] == "karpenter"
        version = c.node_obj("n1")["metadata"]["resourceVersion"]
        await c.reconcile("n1")  # tainted already: no write
        assert c.node_obj("n1")["metadata"]["resourceVersion"] == version


async def test_the_nodeclaim_of_a_deleted_node_is_deleted_too(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.delete_node("n1")
        await c.reconcile("n1")
        assert c.claim_obj("n1")["metadata"].get("deletionTimestamp") is not None


async def test_a_not_ready_node_whose_instance_is_gone_loses_its_finalizer_at_once(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1", ready=False)
        c.pod("n1", "web")
        c.cloud.finish("test:///n1")
        c.delete_node("n1")
        assert await c.reconcile("n1") == DONE
        assert c.get_node("n1") is None
        assert c.pod_names() == ["web"]  # nothing to drain it to: the kubelet is gone
        assert c.cloud.gets == ["test:///n1"]
        assert c.metric("karpenter_nodes_terminated_total", nodepool=NODEPOOL, zone=ZONE) == 1


async def test_a_ready_node_is_drained_even_when_the_cloud_has_lost_its_instance(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web")
        c.cloud.finish("test:///n1")
        c.delete_node("n1")
        await c.reconcile("n1")
        assert c.cloud.gets == []  # a Ready kubelet is still running pods
        assert c.pod_names() == []


async def test_the_finalizer_goes_only_once_the_instance_is_gone_and_others_stay(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1", finalizers=[TERMINATION, OTHER_FINALIZER])
        c.pod("n1", "web")
        c.delete_node("n1")
        await c.until("n1", lambda: c.cloud.terminating("test:///n1"))
        assert c.claim_status("n1", "Drained") == "True"
        assert c.claim_status("n1", "VolumesDetached") == "True"
        assert c.claim_status("n1", "InstanceTerminating") == "True"
        for _ in range(3):  # terminating, not gone: asked again every 5 s
            assert (await c.reconcile("n1")).requeue_after == 5.0
            await c.clock.advance(5.0)
        assert finalizers(c, "n1") == [TERMINATION, OTHER_FINALIZER]
        c.cloud.finish("test:///n1")
        assert await c.reconcile("n1") == DONE
        assert finalizers(c, "n1") == [OTHER_FINALIZER]
        assert c.metric("karpenter_nodes_drained_total", nodepool=NODEPOOL) == 1
        assert c.metric("karpenter_nodes_terminated_total", nodepool=NODEPOOL, zone=ZONE) == 1
        assert c.metric("karpenter_nodes_termination_duration_seconds_count",
                        nodepool=NODEPOOL) == 1  # fmt: skip
        assert c.metric("karpenter_nodes_lifetime_duration_seconds_count", nodepool=NODEPOOL) == 1


async def test_drained_becomes_true_no_sooner_than_five_seconds_after_draining_began(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.delete_node("n1")
        await c.reconcile("n1")  # empty at once: Drained=Unknown, wait
        drained = c.claim_condition("n1", "Drained") or {}
        assert (drained.get("status"), drained.get("reason")) == ("Unknown", "Draining")
        await c.clock.advance(3.0)
        await c.reconcile("n1")
        assert c.claim_status("n1", "Drained") == "Unknown"
        assert c.cloud.deletes == []
        await c.clock.advance(3.0)
        await c.reconcile("n1")
        assert c.claim_status("n1", "Drained") == "True"
        assert c.cloud.deletes == ["test:///n1"]


async def test_a_node_without_a_nodeclaim_is_drained_and_released(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1", nodeclaim=False)
        c.pod("n1", "web")
        c.delete_node("n1")
        await c.until("n1", lambda: c.get_node("n1") is None)
        assert c.pod_names() == []
        assert c.cloud.deletes == []  # no NodeClaim, no instance to ask about


async def test_a_node_without_a_nodeclaim_is_held_for_the_minimum_drain_time(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1", nodeclaim=False)
        c.delete_node("n1")
        assert (await c.reconcile("n1")).requeue_after == 1.0
        assert c.get_node("n1") is not None  # a pod its informer has not shown yet may be there
        await c.clock.advance(10.0)
        assert await c.reconcile("n1") == DONE
        assert c.get_node("n1") is None


async def test_the_controller_starts_on_node_deletion_and_finishes_on_its_own(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web")
        await c.settle()
        [controller] = termination_controllers(c.state, c.client, c.cloud, c.recorder,
                                               metrics=c.metrics, clock=c.clock)  # fmt: skip
        stop = asyncio.Event()
        task = asyncio.create_task(controller.run(stop))
        await controller.started.wait()
        c.delete_node("n1")
        await eventually(lambda: c.pod_names() == [] and taints(c, "n1") == [DISRUPTED])
        # The drain's minimum time passes; then the instance terminates.
        await advancing(c.clock, lambda: c.cloud.terminating("test:///n1"))
        c.cloud.finish("test:///n1")
        await advancing(c.clock, lambda: c.get_node("n1") is None)
        stop.set()
        await task
