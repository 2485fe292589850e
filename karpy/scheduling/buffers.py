"""CapacityBuffer placeholder pods: the pure part of buffers.

A buffer asks for room for ``n`` pods shaped like a template. The rounds schedule ``n``
*virtual pods* of that shape alongside the pending ones, so provisioning launches the room
before real pods arrive, and a consolidation what-if must find them a place as it must
for pending pods. They exist only in memory and are named so that nothing can mistake one
for a real pod: the name and UID carry a colon, which no Kubernetes object name or UID
has, and `is_virtual` tests exactly that.

Here: the template's pod (volumes that need a claim dropped, since no claim will ever
exist for a placeholder), the placeholders of one buffer, and the chunk count a buffer's
``replicas``, ``percentage`` and ``limits`` resolve to (Karpenter's, which follows the
cluster-autoscaler: the larger of replicas and the percentage, capped by the limits).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.scheduling.pods import Pod, pod_from_dict
from karpy.scheduling.resources import PODS

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["VIRTUAL_PREFIX", "buffer_of", "buffer_replicas", "is_virtual", "template_pod",
           "virtual_pods"]  # fmt: skip

VIRTUAL_PREFIX: Final = "capacitybuffer:"


def template_pod(namespace: str, template: Mapping[str, Any]) -> Pod:
    """The pod a ``PodTemplateSpec`` (``{metadata, spec}``) describes, in ``namespace``,
    without a node name and without the volumes backed by claims (and their mounts): a
    placeholder has no PersistentVolumeClaim, and an ephemeral volume's claim is named
    after a pod that will never exist. Raises `PodFormatError` on a malformed spec."""
    meta = template.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    spec.pop("nodeName", None)
    dropped = {
        v.get("name") for v in spec.get("volumes") or ()
        if "persistentVolumeClaim" in v or "ephemeral" in v
    }  # fmt: skip
    if dropped:
        spec["volumes"] = [v for v in spec["volumes"] if v.get("name") not in dropped]
        for field in ("containers", "initContainers"):
            spec[field] = [
                {**c, "volumeMounts": [m for m in c.get("volumeMounts") or ()
                                       if m.get("name") not in dropped]}
                for c in spec.get(field) or ()
            ]  # fmt: skip
    return pod_from_dict({
        "metadata": {"namespace": namespace, "name": "template",
                     "labels": dict(meta.get("labels") or {})},
        "spec": spec,
    })  # fmt: skip


def virtual_pods(buffer_key: str, buffer_uid: str, template: Pod, count: int) -> tuple[Pod, ...]:
    """``count`` placeholders of ``template`` for the buffer ``namespace/name``."""
    _, name = buffer_key.split("/", 1)
    return tuple(
        attrs.evolve(template, name=f"{VIRTUAL_PREFIX}{name}:{i}",
                     uid=f"{VIRTUAL_PREFIX}{buffer_uid}:{i}", unschedulable_condition=True)
        for i in range(1, count + 1)
    )  # fmt: skip


def is_virtual(pod: Pod) -> bool:
    """Is ``pod`` a buffer's placeholder (`virtual_pods`), not a real pod?"""
    return pod.uid.startswith(VIRTUAL_PREFIX)


def buffer_of(pod: Pod) -> str:
    """The ``namespace/name`` of the buffer a placeholder belongs to ("" for a real pod)."""
    if not is_virtual(pod):
        return ""
    return f"{pod.namespace}/{pod.name[len(VIRTUAL_PREFIX) :].rsplit(':', 1)[0]}"


def buffer_replicas(
    *,
    replicas: int | None,
    percentage: int | None,
    workload_replicas: int | None,
    limits: Mapping[str, int],
    requests: Mapping[str, int],
) -> int:
    """How many chunks a buffer keeps room for. ``workload_replicas`` is the scalable
    reference's replica count (None for a PodTemplate, where a percentage means nothing);
    ``limits`` and ``requests`` are milli-units, ``requests`` those of one chunk.

    The percentage rounds up, to at least one chunk of a workload that has replicas; with
    replicas too, the larger wins; limits cap that (floor of limit over request, the
    smallest over the resources both name), or alone give the count."""
    wanted: list[int] = []
    if percentage is not None and workload_replicas:
        share = math.ceil(workload_replicas * percentage / 100)
        wanted.append(max(share, 1) if percentage > 0 else 0)
    if replicas is not None:
        wanted.append(replicas)
    fit = [limit // requests[name] for name, limit in limits.items()
           if name != PODS and requests.get(name)]  # fmt: skip
    if not fit:
        return max(wanted, default=0)
    if not wanted:
        return min(fit)
    return min(max(wanted), *fit)
