"""`MeteredCloudProvider`: every cloud call timed and its failures counted.

Wraps any `CloudProvider` and records ``karpenter_cloudprovider_duration_seconds`` and
``karpenter_cloudprovider_errors_total`` (by error type) as Karpenter's decorator does, so
a slow or failing cloud shows on a dashboard before it shows as pending pods.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodeclass import NodeClassKind
    from karpy.apis.nodepool import NodePool
    from karpy.base.component import Component
    from karpy.cloud.provider import CloudProvider, Instance, RepairPolicy
    from karpy.kube.client import WriteGate
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.scheduling.instancetypes import InstanceType

__all__ = ["MeteredCloudProvider"]


class MeteredCloudProvider:
    def __init__(
        self, inner: CloudProvider, metrics: KarpenterMetrics, *, controller: str = "",
        write_gate: WriteGate | None = None,
    ) -> None:  # fmt: skip
        self.inner = inner
        self.write_gate = write_gate  # launches and deletes refused once the lease is lost
        self.metrics = metrics
        self.controller = controller

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def well_known_labels(self) -> frozenset[str]:
        return self.inner.well_known_labels

    @property
    def restricted_label_domains(self) -> frozenset[str]:
        return self.inner.restricted_label_domains

    @property
    def node_classes(self) -> Sequence[NodeClassKind[Any]]:
        return self.inner.node_classes

    async def _call(self, method: str, call: Callable[[], Awaitable[Any]]) -> Any:
        started = time.perf_counter()
        try:
            return await call()
        except Exception as exc:
            self.metrics.cloudprovider_errors.labels(
                self.controller, method, self.name, type(exc).__name__
            ).inc()
            raise
        finally:
            self.metrics.cloudprovider_duration.labels(self.controller, method, self.name).observe(
                time.perf_counter() - started
            )

    async def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        result: Sequence[InstanceType] = await self._call(
            "GetInstanceTypes", lambda: self.inner.get_instance_types(nodepool)
        )
        return result

    async def create(self, nodeclaim: NodeClaim) -> Instance:
        if self.write_gate is not None:
            self.write_gate.check("Create", nodeclaim.name)
        result: Instance = await self._call("Create", lambda: self.inner.create(nodeclaim))
        return result

    async def delete(self, nodeclaim: NodeClaim) -> None:
        if self.write_gate is not None:
            self.write_gate.check("Delete", nodeclaim.name)
        await self._call("Delete", lambda: self.inner.delete(nodeclaim))

    async def reboot(self, nodeclaim: NodeClaim) -> None:
        if self.write_gate is not None:
            self.write_gate.check("Reboot", nodeclaim.name)
        await self._call("Reboot", lambda: self.inner.reboot(nodeclaim))

    async def get(self, provider_id: str) -> Instance:
        result: Instance = await self._call("Get", lambda: self.inner.get(provider_id))
        return result

    async def list(self) -> Sequence[Instance]:
        result: Sequence[Instance] = await self._call("List", self.inner.list)
        return result

    async def is_drifted(self, nodeclaim: NodeClaim) -> str:
        result: str = await self._call("IsDrifted", lambda: self.inner.is_drifted(nodeclaim))
        return result

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return self.inner.repair_policies()

    def controllers(self, recorder: EventRecorder) -> Sequence[Component]:
        return self.inner.controllers(recorder)
