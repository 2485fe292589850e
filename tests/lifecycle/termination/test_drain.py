"""Draining a terminating node through the controller: the order of the four groups,
what blocks a drain (PodDisruptionBudgets, do-not-disrupt), what the deadline overrides,
and which pods are never touched."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpy.apis.core import format_time
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.lifecycle.termination.harness import Cluster, cluster

ANNOTATION = "karpenter.sh/nodeclaim-termination-timestamp"
DAEMONSET = f.owner_reference("DaemonSet", "agent")
CRITICAL = "system-node-critical"


def drained(c: Cluster, name: str = "n1") -> bool:
    return c.claim_status(name, "Drained") == "True"


def deadline_in(c: Cluster, seconds: int) -> dict[str, str]:
    return {ANNOTATION: format_time(c.clock.now() + timedelta(seconds=seconds))}


@pytest.mark.parametrize("apiserver_options", [{"pod_termination": "manual"}])
async def test_groups_leave_in_order_each_once_the_one_before_is_gone(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web")
        c.pod("n1", "logs", owner_references=[DAEMONSET])
        c.pod("n1", "dns", priority_class_name=CRITICAL)
        c.pod("n1", "cni", owner_references=[DAEMONSET], priority_class_name=CRITICAL)
        c.delete_node("n1")
        for name in ("web", "logs", "dns", "cni"):
            await c.reconcile("n1")
            await c.reconcile("n1")  # still terminating: the next group waits
            await c.settle()
            assert c.terminating_pods() == [name]
            c.finish_pod(name)
        await c.until("n1", lambda: drained(c))
        assert c.pod_names() == []


async def test_a_budget_blocks_the_drain_until_it_allows_the_eviction(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web", labels={"app": "web"})
        pdb = c.pdb({"app": "web"}, min_available=1)
        c.delete_node("n1")
        for _ in range(20):  # 20 s of passes, one a second
            await c.reconcile("n1")
            await c.clock.advance(1.0)
        assert c.pod_names() == ["web"]
        assert c.claim_status("n1", "Drained") == "Unknown"
        assert 3 < c.evictions_sent() <= 8  # backed off: not 20
        [event] = c.recorder.about("FailedDraining")  # deduplicated
        assert (event.type, event.involved.kind, event.involved.name) == ("Warning", "Node", "n1")
        assert event.message == (
            "Failed to drain node, 1 pod is waiting to be evicted: "
            "1 refused (evicting pod violates a PDB: default/web)"
        )
        await eventually(lambda: any(
            e["reason"] == "FailedDraining" and e["involvedObject"]["name"] == "n1"
            for e in c.apiserver.store.list("events")
        ))  # fmt: skip
        c.apiserver.store.patch("poddisruptionbudgets", pdb["metadata"]["name"],
                                {"spec": {"minAvailable": 0}}, "default")  # fmt: skip
        await c.until("n1", lambda: drained(c))
        assert c.pod_names() == []
        assert [e.involved.name for e in c.recorder.about("Evicted")] == ["web"]


async def test_a_do_not_disrupt_pod_is_waited_for_until_the_deadline_then_deleted(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1", annotations=deadline_in(c, 60))
        c.pod("n1", "batch", annotations={"karpenter.sh/do-not-disrupt": "true"})
        c.pod("n1", "logs", owner_references=[DAEMONSET])
        c.delete_node("n1")
        for _ in range(25):  # its 30 s grace still fits before the deadline: wait
            await c.reconcile("n1")
            await c.clock.advance(1.0)
        assert c.pod_names() == ["batch", "logs"]
        assert c.evictions_sent() == 0
        assert "1 protected by karpenter.sh/do-not-disrupt (default/batch)" in (
            c.recorder.about("FailedDraining")[0].message
        )
        assert c.recorder.reasons("n1")[0] == "TerminationGracePeriodExpiring"
        await c.until("n1", lambda: "batch" not in c.pod_names())
        # Deleted, not evicted; the DaemonSet pod's deadline came at the same time.
        assert sorted(e.involved.name for e in c.recorder.about("Disrupted")) == ["batch", "logs"]
        assert c.evictions_sent() == 0
        await c.until("n1", lambda: drained(c))
        assert c.pod_names() == []


async def test_at_the_deadline_a_budget_protected_pod_is_deleted_anyway(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1", annotations=deadline_in(c, 40))
        c.pod("n1", "web", labels={"app": "web"})
        c.pdb({"app": "web"}, min_available=1)
        c.delete_node("n1")
        await c.reconcile("n1")
        assert c.pod_names() == ["web"]  # refused: 40 s left, 30 s needed
        passes = await c.until("n1", lambda: c.pod_names() == [])
        assert 5 <= passes <= 15  # gone 10 s in, when 30 s of grace remained
        assert [e.involved.name for e in c.recorder.about("Disrupted")] == ["web"]


async def test_pods_that_stay_on_draining_nodes_are_never_evicted(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        stay = f.toleration("karpenter.sh/disrupted", operator="Exists", effect="NoSchedule")
        c.pod("n1", "tolerates", tolerations=[stay])
        c.pod("n1", "agent", owner_references=[DAEMONSET],
              tolerations=[f.toleration(operator="Exists")])  # fmt: skip
        c.pod("n1", "mirror", owner_references=[f.owner_reference("Node", "n1",
                                                                  api_version="v1")])  # fmt: skip
        c.pod("n1", "done", phase="Succeeded")
        c.pod("n1", "logs", owner_references=[DAEMONSET])  # a DaemonSet pod that does not stay
        c.delete_node("n1")
        await c.until("n1", lambda: drained(c))
        assert c.pod_names() == ["agent", "done", "mirror", "tolerates"]
        assert [e.involved.name for e in c.recorder.about("Evicted")] == ["logs"]
