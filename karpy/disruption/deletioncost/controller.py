"""The pod-deletion-cost controller (gate ``PodDeletionCostManagement``): writes each
node's rank (`karpy.disruption.deletioncost.ranking`) onto its ReplicaSet pods.

It is a singleton that runs once a minute, like Karpenter's: often enough to be in place
before an autoscaler's next scale-down, seldom enough not to add to the watch traffic a
busy cluster already makes. Two things keep its writes few:

* *Nothing changed, nothing done.* A run whose snapshot has the generation the last
  complete run saw returns at once: no ranking, no request.
* *Only differences are written*, at most `MAX_WRITES_PER_RUN` of them a run, the most
  important first (the floor of nodes being disrupted, then drifted nodes, then the
  other ranks, then the clearing of nodes that should carry none); what is left waits
  for the next run, which ranks afresh. A 40,000-pod cluster in steady state sees no
  writes; a reshuffle of the 50 ranked nodes costs a few runs' worth, not 40,000 patches.

Each write is a JSON merge patch of the one annotation with the resourceVersion the
snapshot holds, so a pod that changed since (another writer, a kubelet update) answers
409 and is looked at again next run with what it is now; a pod already gone answers 404.
Neither is an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import structlog

from karpy.disruption.deletioncost.ranking import Group, rank_nodes, writes_for
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import PODS
from karpy.reconcile import DONE
from karpy.state.records import POD_DELETION_COST

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.disruption.deletioncost.ranking import PodWrite
    from karpy.kube.client import KubeClient
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.reconcile.controller import Result
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["MAX_WRITES_PER_RUN", "PERIOD", "PodDeletionCost"]

log = structlog.get_logger(__name__)

PERIOD: Final = 60.0  # seconds between runs (Karpenter's reconcile interval)
MAX_WRITES_PER_RUN: Final = 500


class PodDeletionCost:
    """Keeps ``controller.kubernetes.io/pod-deletion-cost`` on the ReplicaSet pods of
    managed nodes equal to their node's rank; see the module docstring."""

    name = "pod.deletioncost"
    watches: frozenset[str] = frozenset()  # periodic only: changes never call for a run

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        *,
        clock: Clock,
        metrics: KarpenterMetrics,
        max_writes: int = MAX_WRITES_PER_RUN,
    ) -> None:
        self.state = state
        self.client = client
        self.clock = clock
        self.metrics = metrics
        self.max_writes = max_writes
        self._converged_at: int | None = None  # generation of the last complete run

    def wants(self, change: StateChange[Any]) -> bool:
        return False

    def due(self, snapshot: StateSnapshot) -> bool:
        return True

    async def reconcile(self) -> Result:
        snapshot = self.state.snapshot()
        if snapshot.generation == self._converged_at:
            self.metrics.pod_deletion_cost_runs.labels(outcome="unchanged").inc()
            return DONE
        ranks = rank_nodes(snapshot, now=self.clock.now())
        pending = list(writes_for(snapshot, ranks))
        batch = pending[: self.max_writes]
        counts = {"updated": 0, "conflict": 0, "gone": 0}
        for write in batch:
            counts[await self._write(write)] += 1
        for result, count in counts.items():
            if count:
                self.metrics.pod_deletion_cost_writes.labels(result=result).inc(count)
        left = len(pending) - len(batch)
        # Writes that met a conflict or were cut off by the bound leave work for the next
        # run; so do our own writes, which change the generation, and that run confirms.
        self._converged_at = snapshot.generation if not pending else None
        self.metrics.pod_deletion_cost_runs.labels(outcome="ranked").inc()
        if pending:
            groups = {g: sum(1 for r in ranks if r.group is g) for g in Group}
            log.info("wrote pod deletion costs", **counts, left=left,
                     nodes={str(g): n for g, n in groups.items()})  # fmt: skip
        return DONE

    async def _write(self, write: PodWrite) -> str:
        pod = write.pod
        value = None if write.cost is None else str(write.cost)
        patch = {"metadata": {"resourceVersion": pod.resource_version,
                              "annotations": {POD_DELETION_COST: value}}}  # fmt: skip
        try:
            await self.client.patch(PODS, pod.pod.name, patch, namespace=pod.pod.namespace)
        except NotFound:
            return "gone"
        except Conflict:
            log.debug("pod changed before its deletion cost was written", pod=pod.key)
            return "conflict"
        return "updated"
