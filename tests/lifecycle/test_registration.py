"""A Node that is Ready when it registers is registered and initialized in the same two
writes (the Node patch, the NodeClaim's status); one that a startup taint still holds
back is registered only, and initialized later, as before."""

from __future__ import annotations

from typing import Any

import attrs

from karpy.apis.labels import FINALIZER_TERMINATION, LABEL_INITIALIZED, LABEL_REGISTERED
from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.provider import Instance
from karpy.kube.client import REQUEST_PRIORITY
from karpy.lifecycle.conditions import INITIALIZED, REGISTERED, is_true
from karpy.lifecycle.launch import launch
from karpy.lifecycle.nodeclaim import LIFECYCLE_PRIORITY, NodeClaimLifecycle
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.fixtures.cluster import World
from tests.fixtures.lifecycle import lifecycle

NODECLAIMS = "nodeclaims.karpenter.sh"
FINALIZER = FINALIZER_TERMINATION
NODES = "nodes"


class PriorityRecordingProvider(FakeCloudProvider):
    """The fake cloud, noting the rate limiter's priority each launch is asked at."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.priorities: list[int] = []

    async def create(self, nodeclaim: NodeClaim) -> Instance:
        self.priorities.append(REQUEST_PRIORITY.get())
        return await super().create(nodeclaim)


def patches(world: World) -> float:
    registry = world.metrics.registry
    return (
        registry.get_sample_value(
            "karpy_kube_client_requests_total", {"client": "main", "code": "200", "verb": "patch"}
        )
        or 0.0
    )


def make_ready(apiserver: Any, name: str) -> None:
    node = apiserver.store.get(NODES, name, None)
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                     "message": ""}]  # fmt: skip
    apiserver.store.update_status(NODES, node)


async def launched_and_ready(apiserver: Any, world: World, ctx: Any, name: str,
                             **options: Any) -> None:  # fmt: skip
    """A NodeClaim as provisioning creates it (with its finalizer), launched (the fake
    cloud writes its Node), whose Node is Ready before the lifecycle looks again."""
    requests = {"cpu": "500m", "memory": "1Gi", "pods": "1"}
    spec = f.nodeclaim(name, nodepool="default", launched=False, requests=requests,
                       finalizers=[FINALIZER_TERMINATION], **options)  # fmt: skip
    created = apiserver.store.create(NODECLAIMS, spec)
    await launch(ctx, NodeClaim.from_dict(created))
    await world.settled()
    make_ready(apiserver, name)
    await world.settled()


async def test_a_ready_node_is_registered_and_initialized_in_two_writes(apiserver):
    async with lifecycle(apiserver) as (world, ctx, _):
        await launched_and_ready(apiserver, world, ctx, "default-ready")
        controller = NodeClaimLifecycle(ctx)
        before = patches(world)
        await controller.reconcile(NodeClaimName("default-ready"))
        assert patches(world) - before == 2
        claim = NodeClaim.from_dict(apiserver.store.get(NODECLAIMS, "default-ready"))
        assert is_true(claim, REGISTERED) and is_true(claim, INITIALIZED)
        labels = apiserver.store.get(NODES, "default-ready", None)["metadata"]["labels"]
        assert labels[LABEL_REGISTERED] == "true" and labels[LABEL_INITIALIZED] == "true"
        sample = world.metrics.registry.get_sample_value(
            "karpenter_nodeclaims_initialized_total", {"nodepool": "default"})  # fmt: skip
        assert sample == 1


async def test_a_node_a_startup_taint_holds_back_is_initialized_once_it_goes(apiserver):
    startup = [{"key": "example.com/agent-not-ready", "effect": "NoSchedule"}]
    async with lifecycle(apiserver) as (world, ctx, _):
        await launched_and_ready(apiserver, world, ctx, "default-tainted", startup_taints=startup)
        controller = NodeClaimLifecycle(ctx)
        await controller.reconcile(NodeClaimName("default-tainted"))
        await world.settled()
        claim = NodeClaim.from_dict(apiserver.store.get(NODECLAIMS, "default-tainted"))
        assert is_true(claim, REGISTERED) and not is_true(claim, INITIALIZED)
        node = apiserver.store.get(NODES, "default-tainted", None)
        assert LABEL_INITIALIZED not in node["metadata"]["labels"]
        node["spec"]["taints"] = [t for t in node["spec"]["taints"]
                                  if t["key"] != "example.com/agent-not-ready"]  # fmt: skip
        apiserver.store.update(NODES, node)
        await world.settled()
        await controller.reconcile(NodeClaimName("default-tainted"))
        claim = NodeClaim.from_dict(apiserver.store.get(NODECLAIMS, "default-tainted"))
        assert is_true(claim, INITIALIZED)


async def test_the_launch_labels_a_nodeclaim_whose_status_changed_meanwhile(apiserver):
    """The launch's label patch sends no resourceVersion: a status write by another
    controller between reading the NodeClaim and patching it costs no 409 and retry."""
    async with lifecycle(apiserver) as (_, ctx, _):
        spec = f.nodeclaim("default-moved", nodepool="default", launched=False,
                           requests={"cpu": "500m"}, finalizers=[FINALIZER])  # fmt: skip
        read = NodeClaim.from_dict(apiserver.store.create(NODECLAIMS, spec))
        moved = apiserver.store.get(NODECLAIMS, "default-moved")
        moved["status"] = {"lastPodEventTime": "2026-01-01T00:00:00Z"}
        apiserver.store.update_status(NODECLAIMS, moved)  # the resourceVersion moves on
        launched = await launch(ctx, read)
        assert launched is not None and is_true(launched, "Launched")
        stored = apiserver.store.get(NODECLAIMS, "default-moved")
        assert "node.kubernetes.io/instance-type" in stored["metadata"]["labels"]


async def test_bringing_capacity_up_goes_ahead_of_housekeeping_in_the_rate_limiter(apiserver):
    async with lifecycle(apiserver) as (world, plain, _):
        provider = PriorityRecordingProvider(
            embedded_catalog(), client=world.client, state=world.state,
            unavailable=plain.unavailable,
        )  # fmt: skip
        ctx = attrs.evolve(plain, provider=provider)
        spec = f.nodeclaim("default-first", nodepool="default", launched=False,
                           requests={"cpu": "500m"}, finalizers=[FINALIZER])  # fmt: skip
        apiserver.store.create(NODECLAIMS, spec)
        await world.settled()
        await NodeClaimLifecycle(ctx).reconcile(NodeClaimName("default-first"))
    assert provider.priorities == [LIFECYCLE_PRIORITY]
    assert REQUEST_PRIORITY.get() == 0
