"""The static capacity controller against the API server emulator: a static NodePool
(``spec.replicas``) is kept at ``replicas`` NodeClaims (Karpenter's static provisioning
and deprovisioning suites)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, cast

import attrs

from karpy.apis.labels import CORE_WELL_KNOWN_LABELS
from karpy.base.clock import SYSTEM_CLOCK
from karpy.operator.controllers import build_controllers
from karpy.operator.timings import DEFAULT_TIMINGS
from karpy.settings import Settings, add_arguments
from karpy.state.keys import NodePoolName
from karpy.static.controller import StaticCapacity
from tests import factories as f
from tests.fixtures.cluster import World, controller_world
from tests.fixtures.lifecycle import lifecycle

if TYPE_CHECKING:
    from karpy.lifecycle.context import Lifecycle
    from karpy.state.cluster import ClusterState
    from karpy.state.snapshot import StateSnapshot

Obj = dict[str, Any]
CLAIMS = "nodeclaims.karpenter.sh"
POOLS = "nodepools.karpenter.sh"
FAMILY = f.nodepool_requirement("karpenter.kwok.sh/instance-family", "In", ["c"])


def static_pool(replicas: int, *, ready: bool = True, **kw: Any) -> Obj:
    pool = f.nodepool("fixed", replicas=replicas, requirements=[FAMILY], **kw)
    status = "True" if ready else "False"
    ready_condition = {"type": "Ready", "status": status, "reason": "Ready", "message": "",
                       "lastTransitionTime": "2026-01-01T00:00:00Z"}  # fmt: skip
    pool["status"] = {"conditions": [ready_condition]}
    return pool


def add_pool(apiserver: Any, pool: Obj) -> None:
    """Create ``pool`` with its status (the store takes status through its subresource)."""
    created = apiserver.store.create(POOLS, pool)
    created["status"] = pool.get("status", {})
    apiserver.store.update_status(POOLS, created)


def controller_in(world: World) -> StaticCapacity:
    return StaticCapacity(world.state, world.client, well_known_labels=CORE_WELL_KNOWN_LABELS,
                          clock=SYSTEM_CLOCK)  # fmt: skip


def claims(apiserver: Any, pool: str = "fixed") -> list[Obj]:
    return [c for c in apiserver.store.list(CLAIMS)
            if c["metadata"]["labels"].get("karpenter.sh/nodepool") == pool
            and not c["metadata"].get("deletionTimestamp")]  # fmt: skip


def names(apiserver: Any) -> set[str]:
    return {c["metadata"]["name"] for c in claims(apiserver)}


def add_claim(apiserver: Any, name: str, *, launched: bool = True, node: bool = True) -> None:
    """A NodeClaim of the pool (and its Node, when ``node``), as the API server holds it."""
    claim = f.nodeclaim(name, nodepool="fixed", launched=False, node_name=name if node else None)
    if not launched:
        claim["status"].pop("providerID")
    created = apiserver.store.create(CLAIMS, claim)
    created["status"] = claim["status"]
    apiserver.store.update_status(CLAIMS, created)
    if node:
        labels = {"karpenter.sh/nodepool": "fixed"}
        apiserver.store.create("nodes", f.node(name, provider_id=f"fake:///{name}", labels=labels))


def add_pod(apiserver: Any, node: str, name: str, **kw: Any) -> None:
    apiserver.store.create("pods", f.pod(name, node_name=node, phase="Running", **kw))


async def scale(world: World, replicas: int) -> None:
    pool = world.apiserver.store.get(POOLS, "fixed")
    pool["spec"]["replicas"] = replicas
    world.apiserver.store.update(POOLS, pool)
    await world.settled()


async def test_a_static_pool_gets_replicas_nodeclaims_from_its_template(apiserver):
    add_pool(apiserver, static_pool(3))
    async with controller_world(apiserver) as world:
        await controller_in(world).reconcile(NodePoolName("fixed"))
        made = claims(apiserver)
        assert len(made) == 3
        claim = made[0]
        assert claim["metadata"]["ownerReferences"][0]["name"] == "fixed"
        assert claim["metadata"]["finalizers"] == ["karpenter.sh/termination"]
        assert "karpenter.sh/nodepool-hash" in claim["metadata"]["annotations"]
        keys = {r["key"]: r["values"] for r in claim["spec"]["requirements"]}
        assert keys["karpenter.kwok.sh/instance-family"] == ["c"]
        # No instance type is chosen for it: the cloud provider picks at launch.
        assert "node.kubernetes.io/instance-type" not in keys
        assert "karpenter.sh/registered" not in keys
        assert "resources" not in claim["spec"]


async def test_only_the_missing_nodeclaims_are_created(apiserver):
    add_pool(apiserver, static_pool(3))
    add_claim(apiserver, "fixed-a")
    async with controller_world(apiserver) as world:
        await controller_in(world).reconcile(NodePoolName("fixed"))
        assert len(claims(apiserver)) == 3


@attrs.frozen
class InformerBehind:
    """Cluster state whose informers have not caught up: always this snapshot."""

    held: StateSnapshot

    def snapshot(self) -> StateSnapshot:
        return self.held


async def test_a_second_look_before_the_informer_catches_up_creates_nothing_more(apiserver):
    add_pool(apiserver, static_pool(2))
    async with controller_world(apiserver) as world:
        behind = cast("ClusterState", InformerBehind(world.state.snapshot()))
        static = StaticCapacity(behind, world.client, well_known_labels=CORE_WELL_KNOWN_LABELS,
                                clock=SYSTEM_CLOCK)  # fmt: skip
        await static.reconcile(NodePoolName("fixed"))
        await static.reconcile(NodePoolName("fixed"))  # the snapshot does not show them yet
        assert len(claims(apiserver)) == 2


async def test_limits_nodes_caps_the_pool_counting_deleting_nodeclaims(apiserver):
    add_pool(apiserver, static_pool(5, limits={"nodes": "3"}))
    gone = f.nodeclaim("fixed-old", nodepool="fixed", finalizers=["karpenter.sh/termination"])
    apiserver.store.create(CLAIMS, gone)
    apiserver.store.delete(CLAIMS, "fixed-old")  # held by its finalizer: still an instance
    async with controller_world(apiserver) as world:
        await controller_in(world).reconcile(NodePoolName("fixed"))
        assert len(claims(apiserver)) == 2


async def test_a_pool_that_is_not_ready_is_not_scaled_up(apiserver):
    add_pool(apiserver, static_pool(2, ready=False))
    async with controller_world(apiserver) as world:
        await controller_in(world).reconcile(NodePoolName("fixed"))
        assert claims(apiserver) == []


async def test_dynamic_pools_are_left_alone(apiserver):
    add_pool(apiserver, f.nodepool("fixed"))
    async with controller_world(apiserver) as world:
        static = controller_in(world)
        assert list(static.all_keys(world.state.snapshot())) == []
        await static.reconcile(NodePoolName("fixed"))
        assert claims(apiserver) == []


async def test_scaling_down_deletes_unlaunched_then_empty_then_the_cheapest_to_disrupt(
    apiserver,
):
    add_pool(apiserver, static_pool(5))
    add_claim(apiserver, "fixed-unlaunched", launched=False, node=False)
    for name in ("fixed-empty", "fixed-one-pod", "fixed-two-pods", "fixed-protected"):
        add_claim(apiserver, name)
    add_pod(apiserver, "fixed-empty", "agent",
            owner_references=[f.owner_reference("DaemonSet", "agent")])  # fmt: skip
    add_pod(apiserver, "fixed-one-pod", "a")
    add_pod(apiserver, "fixed-two-pods", "b")
    add_pod(apiserver, "fixed-two-pods", "c")
    add_pod(apiserver, "fixed-protected", "d",
            annotations={"karpenter.sh/do-not-disrupt": "true"})  # fmt: skip
    async with controller_world(apiserver) as world:
        static = controller_in(world)
        await scale(world, 3)
        await static.reconcile(NodePoolName("fixed"))
        assert names(apiserver) == {"fixed-one-pod", "fixed-two-pods", "fixed-protected"}
        await world.settled()
        await scale(world, 1)
        await static.reconcile(NodePoolName("fixed"))
        assert names(apiserver) == {"fixed-protected"}, "a do-not-disrupt pod's node goes last"


async def test_a_deleted_nodeclaim_goes_through_termination(apiserver):
    """Scale-down deletes the NodeClaim; its finalizer keeps it until termination has
    drained the node and removed the instance."""
    add_pool(apiserver, static_pool(1))
    for name in ("fixed-a", "fixed-b"):
        add_claim(apiserver, name)
        claim = apiserver.store.get(CLAIMS, name)
        claim["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        apiserver.store.update(CLAIMS, claim)
    add_pod(apiserver, "fixed-a", "web")
    async with controller_world(apiserver) as world:
        static = controller_in(world)
        await static.reconcile(NodePoolName("fixed"))
        deleting = apiserver.store.get(CLAIMS, "fixed-b")
        assert deleting["metadata"]["deletionTimestamp"], "deleted, held by its finalizer"
        await static.reconcile(NodePoolName("fixed"))  # the informer may be behind
        await world.settled()
        await static.reconcile(NodePoolName("fixed"))
        assert names(apiserver) == {"fixed-a"}, "one deletion, and nothing created again"


async def test_nodeclaims_chosen_for_drift_are_not_counted_as_running(apiserver):
    """A drifted node being replaced and its replacement are replicas + 1 NodeClaims:
    neither is surplus, and nothing more is created."""
    add_pool(apiserver, static_pool(2))
    for name in ("fixed-a", "fixed-b", "fixed-new"):
        add_claim(apiserver, name)
    marked = apiserver.store.get(CLAIMS, "fixed-a")
    marked["metadata"]["annotations"] = {"disruption.karpy.dev/replacements": "fixed-new"}
    marked = apiserver.store.update(CLAIMS, marked)
    marked["status"]["conditions"] = [{"type": "DisruptionReason", "status": "True",
                                       "reason": "Drifted", "message": "",
                                       "lastTransitionTime": "2026-01-01T00:00:00Z"}]  # fmt: skip
    apiserver.store.update_status(CLAIMS, marked)
    async with controller_world(apiserver) as world:
        await controller_in(world).reconcile(NodePoolName("fixed"))
        assert names(apiserver) == {"fixed-a", "fixed-b", "fixed-new"}


def controller_names(world: World, ctx: Lifecycle, gates: str) -> set[str]:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    env = {"CLUSTER_NAME": "test", "FEATURE_GATES": gates}
    settings = Settings.from_env_and_args(env, parser.parse_args([]))
    built = build_controllers(settings, state=world.state, client=world.client,
                              recorder=world.recorder, provider=ctx.provider,
                              unavailable=ctx.unavailable, metrics=world.metrics,
                              clock=ctx.clock, timings=DEFAULT_TIMINGS)  # fmt: skip
    return {c.name for c in built}


async def test_the_controller_runs_only_with_the_static_capacity_gate(apiserver):
    async with lifecycle(apiserver) as (world, ctx, _):
        assert "static.capacity" in controller_names(world, ctx, "StaticCapacity=true")
        assert "static.capacity" not in controller_names(world, ctx, "StaticCapacity=false")
