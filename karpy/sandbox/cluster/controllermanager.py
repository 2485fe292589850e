"""The kube-controller-manager stand-in: the controllers a karpy cluster relies on.

Deployments → ReplicaSets → Pods, DaemonSet pods, the owner-reference garbage collector
and pod garbage collection for pods on missing nodes, each its own module and work queue.
PodDisruptionBudget status is not here: the emulator's `DisruptionController` already
keeps it, on every write, with upstream's formulas. Node lifecycle (NotReady taints,
evictions after ``tolerationSeconds``), Jobs, StatefulSets, Services/Endpoints and the
namespace controller's emulated counterpart are not modelled here either (the emulator
runs its own namespace controller).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.sandbox.cluster.daemonsets import DaemonSetController
from karpy.sandbox.cluster.deployments import DeploymentController
from karpy.sandbox.cluster.garbage import OwnerGarbageCollector, PodGarbageCollector
from karpy.sandbox.cluster.replicasets import ReplicaSetController

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.ownership import Ownership
    from karpy.sandbox.cluster.workqueue import WorkQueue


class ControllerManager:
    def __init__(
        self,
        access: ClusterAccess,
        ownership: Ownership,
        *,
        orphan_pod_quarantine: float = 5.0,
    ) -> None:
        self.deployments = DeploymentController(access, ownership)
        self.replicasets = ReplicaSetController(access, ownership)
        self.daemonsets = DaemonSetController(access, ownership)
        self.garbage_collector = OwnerGarbageCollector(access, ownership)
        self.pod_garbage_collector = PodGarbageCollector(access, quarantine=orphan_pod_quarantine)

    @property
    def queues(self) -> tuple[WorkQueue[object], ...]:
        return (
            self.deployments.queue,  # type: ignore[return-value]
            self.replicasets.queue,
            self.daemonsets.queue,
            self.garbage_collector.queue,
            self.pod_garbage_collector.queue,
        )

    def on_change(self, kind: Kind, change: Change) -> None:
        self.deployments.on_change(kind, change)
        self.replicasets.on_change(kind, change)
        self.daemonsets.on_change(kind, change)
        self.garbage_collector.on_change(kind, change)
        self.pod_garbage_collector.on_change(kind, change)

    def resync(self) -> None:
        """Look at every workload again (level-triggered safety net)."""
        self.deployments.resync()
        self.replicasets.resync()
        self.daemonsets.resync()

    def start(self) -> None:
        for queue in self.queues:
            queue.start()

    async def stop(self) -> None:
        for queue in self.queues:
            await queue.stop()

    def idle(self) -> bool:
        return not any(len(q) for q in self.queues)
