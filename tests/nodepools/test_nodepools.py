"""NodePool readiness, counter and hash controllers against the API server emulator."""

from __future__ import annotations

from karpy.apis.hashes import nodepool_template_hash
from karpy.apis.nodepool import NodePool
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.fake import NODE_CLASSES
from karpy.nodepools.counter import NodePoolCounter
from karpy.nodepools.hash import NodePoolHash
from karpy.nodepools.readiness import NodePoolReadiness, unimplemented
from karpy.reconcile import DONE, requeue_after
from karpy.state.keys import NodePoolName
from tests import factories as f
from tests.fixtures.apiserver import create_with_status
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock


def conditions(apiserver, name: str) -> dict[str, tuple[str, str]]:
    pool = apiserver.store.get("nodepools.karpenter.sh", name)
    return {c["type"]: (c["status"], c["reason"])
            for c in (pool.get("status") or {}).get("conditions", [])}  # fmt: skip


READY = {"type": "Ready", "status": "True", "reason": "Ready", "message": "",
         "lastTransitionTime": "2025-01-01T00:00:00Z"}  # fmt: skip


def readiness_in(world: World) -> NodePoolReadiness:
    return NodePoolReadiness(world.state, world.client, world.recorder,
                             node_classes=NODE_CLASSES, clock=SYSTEM_CLOCK)  # fmt: skip


def mark_ready(apiserver, name: str = "default") -> None:
    nodeclass = apiserver.store.get("ec2nodeclasses.karpenter.k8s.aws", name)
    nodeclass["status"] = {"conditions": [READY]}
    apiserver.store.update_status("ec2nodeclasses.karpenter.k8s.aws", nodeclass)


async def test_a_pool_whose_nodeclass_is_missing_says_so_and_becomes_ready_with_it(apiserver):
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("general"))
    async with controller_world(apiserver) as world:
        readiness = readiness_in(world)
        await readiness.reconcile(NodePoolName("general"))
        assert conditions(apiserver, "general") == {
            "NodeClassReady": ("False", "NodeClassNotFound"),
            "ValidationSucceeded": ("True", "ValidationSucceeded"),
            "Ready": ("False", "NodeClassNotFound"),
        }
        apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
        mark_ready(apiserver)
        await world.settled()
        await readiness.reconcile(NodePoolName("general"))
        assert conditions(apiserver, "general")["Ready"] == ("True", "Ready")
        await world.settled()
        before = apiserver.store.get("nodepools.karpenter.sh", "general")["metadata"]
        await readiness.reconcile(NodePoolName("general"))
        after = apiserver.store.get("nodepools.karpenter.sh", "general")["metadata"]
        assert after["resourceVersion"] == before["resourceVersion"], "no write when unchanged"


async def test_a_pool_failing_runtime_validation_is_not_ready(apiserver):
    apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
    mark_ready(apiserver)
    budget = {"nodes": "1", "schedule": "0 0 * * 7", "duration": "1h"}
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s",
                  "budgets": [budget]}  # fmt: skip
    pool = f.nodepool("weekly", disruption=disruption)
    apiserver.store.create("nodepools.karpenter.sh", pool)
    async with controller_world(apiserver) as world:
        readiness = readiness_in(world)
        await readiness.reconcile(NodePoolName("weekly"))
        found = conditions(apiserver, "weekly")
        assert found["ValidationSucceeded"] == ("False", "NodePoolValidationFailed")
        assert found["Ready"][0] == "False"


async def test_a_pool_whose_class_is_unreconciled_and_that_fails_validation_says_the_false_one(
    apiserver,
):
    """Ready is False because validation failed; it carries that reason and message, not
    those of the NodeClass condition that is merely Unknown."""
    apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
    budget = {"nodes": "1", "schedule": "0 0 * * 7", "duration": "1h"}
    disruption = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s",
                  "budgets": [budget]}  # fmt: skip
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("weekly", disruption=disruption))
    async with controller_world(apiserver) as world:
        readiness = readiness_in(world)
        await readiness.reconcile(NodePoolName("weekly"))
        found = conditions(apiserver, "weekly")
        assert found["NodeClassReady"] == ("Unknown", "AwaitingReconciliation")
        assert found["Ready"] == ("False", "NodePoolValidationFailed")
        pool = apiserver.store.get("nodepools.karpenter.sh", "weekly")
        by_type = {c["type"]: c for c in pool["status"]["conditions"]}
        assert by_type["Ready"]["message"] == by_type["ValidationSucceeded"]["message"]


async def test_the_counter_sums_the_pools_nodeclaims(apiserver):
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("general"))
    for name, cpu in (("a", "4"), ("b", "8")):
        create_with_status(apiserver, "nodeclaims.karpenter.sh", f.nodeclaim(
            f"general-{name}", nodepool="general", capacity={"cpu": cpu, "memory": "16Gi"},
            launched=False))  # fmt: skip
    create_with_status(apiserver, "nodeclaims.karpenter.sh", f.nodeclaim(
        "other-c", nodepool="other", capacity={"cpu": "2"}, launched=False))  # fmt: skip
    async with controller_world(apiserver) as world:
        counter = NodePoolCounter(world.state, world.client, clock=SYSTEM_CLOCK)
        await counter.reconcile(NodePoolName("general"))
        status = apiserver.store.get("nodepools.karpenter.sh", "general")["status"]
        assert status["nodes"] == 2
        assert status["resources"] == {"cpu": "12", "memory": "32Gi", "nodes": "2"}
        assert NodePool.from_dict(apiserver.store.get("nodepools.karpenter.sh", "general"))


async def test_the_hash_annotation_is_written_once(apiserver):
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("general"))
    async with controller_world(apiserver) as world:
        hashing = NodePoolHash(world.state, world.client)
        await hashing.reconcile(NodePoolName("general"))
        pool = apiserver.store.get("nodepools.karpenter.sh", "general")
        expected = nodepool_template_hash(NodePool.from_dict(pool).spec.template)
        assert pool["metadata"]["annotations"]["karpenter.sh/nodepool-hash"] == expected
        assert pool["metadata"]["annotations"]["karpenter.sh/nodepool-hash-version"] == "v3"
        await world.settled()
        await hashing.reconcile(NodePoolName("general"))
        again = apiserver.store.get("nodepools.karpenter.sh", "general")
        assert again["metadata"]["resourceVersion"] == pool["metadata"]["resourceVersion"]


async def test_the_counter_counts_a_pool_at_most_once_per_interval(apiserver):
    """During a scale-up every NodeClaim change asks to count its pool again; counting
    walks the pool's nodes, so it happens at most once per interval, and the change
    that came meanwhile lands when the interval is over."""
    counted = {"resources": {"nodes": "0"}, "nodes": 0}  # nothing to write at first
    create_with_status(apiserver, "nodepools.karpenter.sh",
                       {**f.nodepool("general"), "status": counted})  # fmt: skip
    clock = FakeClock()
    async with controller_world(apiserver) as world:
        counter = NodePoolCounter(world.state, world.client, clock=clock, min_interval=2.0)
        assert await counter.reconcile(NodePoolName("general")) == DONE
        assert apiserver.store.get("nodepools.karpenter.sh", "general")["status"]["nodes"] == 0
        create_with_status(apiserver, "nodeclaims.karpenter.sh", f.nodeclaim(
            "general-a", nodepool="general", capacity={"cpu": "4"}, launched=False))  # fmt: skip
        await world.settled()
        await clock.advance(0.5)
        assert await counter.reconcile(NodePoolName("general")) == requeue_after(1.5)
        assert apiserver.store.get("nodepools.karpenter.sh", "general")["status"]["nodes"] == 0
        await clock.advance(1.5)
        assert await counter.reconcile(NodePoolName("general")) == DONE
        status = apiserver.store.get("nodepools.karpenter.sh", "general")["status"]
        assert status["nodes"] == 1
        assert status["resources"] == {"cpu": "4", "nodes": "1"}


async def test_a_pool_asking_for_what_karpy_lacks_says_so_once_and_stops_when_it_no_longer_asks(
    apiserver,
):
    """spec.replicas is admitted by the API but ignored with the StaticCapacity gate off:
    the pool says what happens instead (a condition outside Ready, one Warning Event)."""
    apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
    mark_ready(apiserver)
    static = f.nodepool("tidy")
    static["spec"]["replicas"] = 2
    apiserver.store.create("nodepools.karpenter.sh", static)
    async with controller_world(apiserver) as world:
        readiness = readiness_in(world)
        await readiness.reconcile(NodePoolName("tidy"))
        found = conditions(apiserver, "tidy")
        assert found["karpy.sh/Implemented"] == ("False", "NotImplemented")
        assert found["Ready"] == ("True", "Ready"), "the pool is still used for what karpy does"
        (event,) = await eventually(lambda: world.events("NotImplemented"))
        assert "spec.replicas" in event["message"] and "no nodes" in event["message"]
        await world.settled()
        await readiness.reconcile(NodePoolName("tidy"))
        assert len(world.events("NotImplemented")) == 1, "said once"


async def test_a_balanced_pool_loses_the_not_implemented_condition_an_older_karpy_gave_it(
    apiserver,
):
    apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
    mark_ready(apiserver)
    disruption = {"consolidationPolicy": "Balanced", "consolidateAfter": "0s"}
    pool = f.nodepool("tidy", disruption=disruption)
    said = "consolidationPolicy Balanced is not implemented by karpy yet"
    pool["status"] = {"conditions": [{**f.condition("karpy.sh/Implemented", "False",
                                                    reason="NotImplemented", message=said),
                                      "lastTransitionTime": "2025-01-01T00:00:00Z"}]}  # fmt: skip
    create_with_status(apiserver, "nodepools.karpenter.sh", pool)
    assert "karpy.sh/Implemented" in conditions(apiserver, "tidy")
    async with controller_world(apiserver) as world:
        await readiness_in(world).reconcile(NodePoolName("tidy"))
        assert "karpy.sh/Implemented" not in conditions(apiserver, "tidy")
        assert world.events("NotImplemented") == []


def test_a_static_pool_is_said_to_be_ignored_while_the_gate_is_off():
    static = NodePool.from_dict(f.nodepool("fixed", replicas=3))
    (said,) = unimplemented(static)
    assert said.startswith("spec.replicas") and "the StaticCapacity gate is off" in said
    assert unimplemented(NodePool.from_dict(f.nodepool("dynamic"))) == []


def test_a_balanced_pool_asks_for_nothing_karpy_lacks():
    disruption = {"consolidationPolicy": "Balanced", "consolidateAfter": "0s"}
    assert unimplemented(NodePool.from_dict(f.nodepool("scored", disruption=disruption))) == []


def test_a_static_pool_is_implemented_with_the_gate_on():
    static = NodePool.from_dict(f.nodepool("fixed", replicas=3))
    assert unimplemented(static, static_capacity=True) == []
