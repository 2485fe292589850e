"""Evictions through the API server's Eviction API (UID precondition, PDB refusals,
per-pod backoff) and deletions at the deadline."""

from __future__ import annotations

from datetime import timedelta

import pytest

from karpy.lifecycle.termination.eviction import Outcome
from karpy.state.records import PodInfo, pod_info
from tests.lifecycle.termination.harness import Cluster, cluster

REASON = "Underutilized"


def info(c: Cluster, name: str) -> PodInfo:
    return pod_info(c.apiserver.store.get("pods", name, "default"))


async def test_an_accepted_eviction_is_announced_and_counted(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web")
        [attempt] = await c.termination.evictor.evict([info(c, "web")], reason=REASON)
        assert attempt.outcome is Outcome.EVICTED
        assert c.pod_names() == []
        [event] = c.recorder.about("Evicted")
        assert (event.involved.name, event.message) == ("web", "Evicted pod: Underutilized")
        assert c.metric("karpenter_pods_eviction_requests_total", code="200") == 1
        assert c.metric("karpenter_pods_drained_total", reason=REASON) == 1


async def test_pods_refused_by_a_budget_are_asked_again_with_growing_pauses(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        pods = [c.pod("n1", f"web-{i}", labels={"app": "web"}) for i in range(20)]
        c.pdb({"app": "web"}, min_available=20)
        await c.settle()
        infos = [info(c, p["metadata"]["name"]) for p in pods]
        evictor = c.termination.evictor
        for _ in range(30):  # 30 s of drain passes, one a second
            await evictor.evict(infos, reason=REASON)
            await c.clock.advance(1.0)
        # Asked at 0, 1, 2, 3, 4, 6, 10, 17 and 28 s: 9 times each, not 30.
        assert c.evictions_sent() == 20 * 9
        assert c.metric("karpenter_pods_eviction_requests_total", code="429") == 20 * 9
        assert sorted(c.pod_names()) == sorted(p["metadata"]["name"] for p in pods)
        attempts = await evictor.evict(infos, reason=REASON)
        assert {a.outcome for a in attempts} == {Outcome.PACED}
        assert {a.detail for a in attempts} == {"evicting pod violates a PDB"}


async def test_a_pod_recreated_under_the_same_name_is_not_evicted(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "db-0")
        old = info(c, "db-0")
        c.apiserver.store.delete("pods", "db-0", "default", grace_period_seconds=0)
        c.pod("n1", "db-0")
        [attempt] = await c.termination.evictor.evict([old], reason=REASON)
        assert attempt.outcome is Outcome.GONE
        assert c.pod_names() == ["db-0"]
        assert c.terminating_pods() == []
        assert c.metric("karpenter_pods_eviction_requests_total", code="409") == 1


async def test_a_pod_that_is_gone_needs_nothing_more(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web")
        gone = info(c, "web")
        c.apiserver.store.delete("pods", "web", "default", grace_period_seconds=0)
        [attempt] = await c.termination.evictor.evict([gone], reason=REASON)
        assert attempt.outcome is Outcome.GONE
        assert c.metric("karpenter_pods_eviction_requests_total", code="404") == 1


async def test_a_pod_covered_by_two_budgets_is_refused(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web", labels={"app": "web", "tier": "front"})
        c.pdb({"app": "web"}, min_available=0)
        c.pdb({"tier": "front"}, min_available=0)
        [attempt] = await c.termination.evictor.evict([info(c, "web")], reason=REASON)
        assert (attempt.outcome, attempt.detail) == (
            Outcome.REFUSED, "eviction does not support multiple PDBs",
        )  # fmt: skip
        assert c.pod_names() == ["web"]
        assert c.metric("karpenter_pods_eviction_requests_total", code="500") == 1


@pytest.mark.parametrize("apiserver_options", [{"pod_termination": "manual"}])
async def test_a_deadline_deletion_grants_the_time_left_and_ignores_budgets(apiserver):
    async with cluster(apiserver) as c:
        c.node("n1")
        c.pod("n1", "web", labels={"app": "web"})
        c.pdb({"app": "web"}, min_available=1)
        deadline = c.clock.now() + timedelta(seconds=42)
        [attempt] = await c.termination.evictor.delete([info(c, "web")], deadline=deadline,
                                                       reason=REASON)  # fmt: skip
        assert attempt.outcome is Outcome.DELETED
        pod = c.apiserver.store.get("pods", "web", "default")
        assert pod["metadata"]["deletionGracePeriodSeconds"] == 42
        [event] = c.recorder.about("Disrupted")
        assert "granted 42 seconds of grace-period of its 30" in event.message
        assert c.metric("karpenter_pods_drained_total", reason=REASON) == 1
