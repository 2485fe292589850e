"""`CapacityBuffers`: each CapacityBuffer resolved to its placeholders and its status.

A buffer names one chunk's shape, a PodTemplate (``podTemplateRef``, read from cluster
state) or a Deployment, StatefulSet or ReplicaSet (``scalableRef``, read through the API
on each reconcile: karpy does not watch workloads, so a buffer is looked at again every
``RESYNC`` seconds, as Karpenter polls them), in the buffer's own namespace. The chunk
count follows `karpy.scheduling.buffers.buffer_replicas`.

The reconciler writes the status (``ReadyForProvisioning``; ``replicas``;
``podTemplateRef`` and ``podTemplateGeneration`` for a PodTemplate; the strategy; and
``Provisioning`` from where the last provisioning round put the placeholders: True when
all fit on capacity that is there or on its way, False while some needed new NodeClaims or
fit nowhere) and files the placeholders in `karpy.rounds.buffers.BufferPods`, which opens
a provisioning window when they change. A buffer that cannot be resolved, or is gone,
has none.

Only with the ``CapacityBuffer`` gate on is this controller built, and only then are the
buffer and PodTemplate kinds watched (`karpy.state.watched`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.capacitybuffer import (
    BUFFER_CONDITIONS,
    PROVISIONING,
    READY_FOR_PROVISIONING,
    CapacityBuffer,
    CapacityBufferStatus,
)
from karpy.apis.conditions import ConditionUpdate
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import CAPACITYBUFFERS, DEPLOYMENTS, REPLICASETS, STATEFULSETS
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.scheduling.buffers import buffer_replicas, template_pod, virtual_pods
from karpy.scheduling.pods import PodFormatError
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.kube.resources import Resource
    from karpy.rounds.buffers import BufferPods
    from karpy.scheduling.pods import Pod
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["RESYNC", "CapacityBuffers", "Resolved", "Unresolved"]

log = get_logger("capacitybuffer")

RESYNC: Final = 30.0  # seconds: how stale a scalableRef's template or replicas may be
SCALABLE_KINDS: Final[dict[str, Resource]] = {
    "Deployment": DEPLOYMENTS,
    "StatefulSet": STATEFULSETS,
    "ReplicaSet": REPLICASETS,
}


@attrs.frozen(slots=True)
class Resolved:
    """One chunk's pod; the PodTemplate's name and generation, or the workload's
    replicas."""

    template: Pod
    pod_template: str | None = None
    generation: int | None = None
    workload_replicas: int | None = None


@attrs.frozen(slots=True)
class Unresolved:
    reason: str  # PodTemplateNotFound, ScalableRefNotFound, ResolutionFailed
    message: str


class CapacityBuffers:
    """The reconciler (see the module docstring), keyed by ``namespace/name``."""

    name = "capacitybuffer"
    watches = frozenset({kinds.CAPACITYBUFFER, kinds.PODTEMPLATE})

    def __init__(
        self, state: ClusterState, client: KubeClient, buffers: BufferPods, *, clock: Clock
    ) -> None:
        self.state = state
        self.client = client
        self.buffers = buffers
        self.clock = clock

    def keys_for(self, change: StateChange[Any]) -> Iterable[str]:
        if change.kind == kinds.CAPACITYBUFFER:
            return (change.key,)
        namespace, name = change.key.split("/", 1)  # a PodTemplate: the buffers naming it
        return [
            key for key, buffer in self.state.snapshot().capacitybuffers.items()
            if buffer.namespace == namespace and buffer.spec.pod_template_ref == name
        ]  # fmt: skip

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        # and those with placeholders filed, so a buffer deleted meanwhile loses them
        return {*snapshot.capacitybuffers, *self.buffers.keys()}

    async def reconcile(self, key: str) -> Result:
        snapshot = self.state.snapshot()
        buffer = snapshot.capacitybuffers.get(key)
        if buffer is None or buffer.metadata.deletion_timestamp is not None:
            self.buffers.drop(key)
            return DONE
        resolved = await self._resolve(buffer, snapshot)
        status = self._status(buffer, resolved)
        if isinstance(resolved, Resolved) and status.replicas:
            pods = virtual_pods(key, buffer.metadata.uid, resolved.template, status.replicas)
            self.buffers.set(key, pods)
        else:
            self.buffers.drop(key)
        if status != buffer.status:
            try:
                # with the resourceVersion read: a buffer changed since is looked at anew
                patch = {"metadata": {"resourceVersion": buffer.metadata.resource_version},
                         "status": status.to_dict()}  # fmt: skip
                await self.client.patch_status(CAPACITYBUFFERS, buffer.name, patch,
                                               namespace=buffer.namespace)  # fmt: skip
            except (Conflict, NotFound):
                return requeue_after(1.0)
            log.info("updated capacitybuffer status", **obj_ref("CapacityBuffer", buffer.name,
                     buffer.namespace), replicas=status.replicas)  # fmt: skip
        return requeue_after(RESYNC)

    # --- resolving ---------------------------------------------------------------------

    async def _resolve(
        self, buffer: CapacityBuffer, snapshot: StateSnapshot
    ) -> Resolved | Unresolved:
        spec, namespace = buffer.spec, buffer.namespace
        if spec.pod_template_ref is not None:
            name = spec.pod_template_ref
            found = snapshot.podtemplates.get(f"{namespace}/{name}")
            if found is None:
                return Unresolved("PodTemplateNotFound", f'podtemplate "{name}" not found')
            return Resolved(found.pod, pod_template=name, generation=found.generation)
        ref = spec.scalable_ref
        if ref is None:
            return Unresolved("ResolutionFailed", "Neither podTemplateRef nor scalableRef is set")
        resource = SCALABLE_KINDS.get(ref.kind)
        if ref.api_group not in ("", "apps") or resource is None:
            group = ref.api_group or "apps"
            return Unresolved("ResolutionFailed", f"unsupported scalableRef {group}/{ref.kind}")
        workload = await self.client.try_get(resource, ref.name, namespace)
        if workload is None:
            return Unresolved("ScalableRefNotFound",
                              f'{ref.kind.lower()} "{ref.name}" not found')  # fmt: skip
        workload_spec = workload.get("spec") or {}
        try:
            template = template_pod(namespace, workload_spec.get("template") or {})
        except PodFormatError as exc:
            return Unresolved("ResolutionFailed", f"pod template: {exc}")
        replicas = workload_spec.get("replicas")
        return Resolved(template, workload_replicas=1 if replicas is None else int(replicas))

    # --- status ------------------------------------------------------------------------

    def _status(
        self, buffer: CapacityBuffer, resolved: Resolved | Unresolved
    ) -> CapacityBufferStatus:
        """The status to write: the old one where nothing is known better."""
        now = self.clock.now()
        old = buffer.status
        conditions = BUFFER_CONDITIONS.of(old.conditions, generation=buffer.metadata.generation)
        status = attrs.evolve(old, provisioning_strategy=buffer.spec.provisioning_strategy)
        if isinstance(resolved, Unresolved):
            conditions = conditions.apply(
                ConditionUpdate.false(READY_FOR_PROVISIONING, resolved.reason, resolved.message),
                ConditionUpdate.false(PROVISIONING, "NotReadyForProvisioning",
                                      "Buffer is not ReadyForProvisioning"),
                now=now,
            )  # fmt: skip
            return attrs.evolve(status, conditions=conditions.conditions)
        spec = buffer.spec
        replicas = buffer_replicas(
            replicas=spec.replicas, percentage=spec.percentage,
            workload_replicas=resolved.workload_replicas, limits=spec.limits,
            requests=resolved.template.requests,
        )  # fmt: skip
        updates = [ConditionUpdate.true(READY_FOR_PROVISIONING, "Resolved",
                                        "Pod template resolved successfully")]  # fmt: skip
        provisioning = self._provisioning(buffer.key, replicas)
        if provisioning is not None:
            updates.append(provisioning)
        conditions = conditions.apply(*updates, now=now)
        return attrs.evolve(
            status, replicas=replicas, pod_template_ref=resolved.pod_template,
            pod_template_generation=resolved.generation, conditions=conditions.conditions,
        )  # fmt: skip

    def _provisioning(self, key: str, replicas: int) -> ConditionUpdate | None:
        """``Provisioning`` from the last round that scheduled the buffer's placeholders;
        None (left as it is) when no round has yet."""
        if replicas == 0:
            return ConditionUpdate.false(PROVISIONING, "BufferEmpty",
                                         "Buffer has zero desired replicas")  # fmt: skip
        placed = self.buffers.placement(key)
        if placed is None:
            return None
        if placed.new or placed.failed:
            return ConditionUpdate.false(
                PROVISIONING, "RequiresNewCapacity",
                f"{placed.new}/{replicas} virtual pods required new capacity, "
                f"{placed.failed} failed",
            )  # fmt: skip
        if placed.existing == replicas:
            message = f"All {replicas} virtual pods fit on existing capacity"
            return ConditionUpdate.true(PROVISIONING, "FitsExistingCapacity", message)
        return None
