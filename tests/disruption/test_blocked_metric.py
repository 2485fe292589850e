"""``karpy_disruption_blocked_nodes{nodepool,reason}``: each pass counts the nodes
disruption may not touch, by NodePool and rule, and drops the series that no longer
block anything."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from karpy.disruption.controller import Disruption
from karpy.disruption.explain import state_from_objects
from karpy.observability.karpenter_metrics import KarpenterMetrics
from karpy.settings import Settings
from tests import factories as f
from tests.disruption.deciders import Contexts, Recorder
from tests.disruption.world import NOW, World, managed_node, nodepool, pod_on
from tests.kube.fakeclock import FakeClock

POOL = nodepool()


def blocked_series(objects: list[dict[str, object]]) -> dict[tuple[str, str], float]:
    registry = CollectorRegistry()
    metrics = KarpenterMetrics(registry)
    state = state_from_objects(objects)
    for kind in state.watched:
        state.set_synced(kind)
    disruption = Disruption(state, None, Recorder(), Settings(),  # type: ignore[arg-type]
                            contexts=Contexts(World(objects).compiled),  # type: ignore[arg-type]
                            nominations=lambda _: {}, clock=FakeClock(NOW),
                            metrics=metrics)  # fmt: skip
    asyncio.run(disruption.reconcile())
    family = next(m for m in registry.collect() if m.name == "karpy_disruption_blocked_nodes")
    return {(s.labels["nodepool"], s.labels["reason"]): s.value for s in family.samples}


def test_blocked_nodes_are_counted_by_pool_and_rule() -> None:
    pinned = pod_on("b", "pinned", annotations={"karpenter.sh/do-not-disrupt": "true"})
    guarded = pod_on("c", "db-0", labels={"app": "db"})
    pdb = f.pod_disruption_budget("db", match_labels={"app": "db"}, max_unavailable=0)
    objects = [POOL, *managed_node("a", "c-2x-amd64-linux"), pod_on("a", "web-1"),
               *managed_node("b", "c-2x-amd64-linux"), pinned,
               *managed_node("c", "c-2x-amd64-linux"), guarded, pdb,
               *managed_node("d", "c-2x-amd64-linux"), pod_on("d", "web-2", annotations={
                   "karpenter.sh/do-not-disrupt": "true"})]  # fmt: skip
    assert blocked_series(objects) == {
        ("default", "DoNotDisruptPod"): 2.0,
        ("default", "PodDisruptionBudget"): 1.0,
    }


def test_a_pool_with_nothing_blocked_has_no_series() -> None:
    objects = [POOL, *managed_node("a", "c-2x-amd64-linux"), pod_on("a", "web-1")]
    assert blocked_series(objects) == {}
