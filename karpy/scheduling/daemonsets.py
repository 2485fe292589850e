"""DaemonSet overhead: the resources DaemonSet pods will take on a node before any pod.

A new node runs one pod of every DaemonSet whose pod template would schedule there, so a
NodePool's instance types are partitioned by *which* DaemonSets would run on them (their
labels differ: arch, instance family, ...). Each part (`DaemonOverheadGroup`) carries the
summed requests and host ports of its DaemonSet pods; an instance type fits a node only if
it fits the node's pods plus its own group's overhead.

Compatibility follows Karpenter: the DaemonSet pod must tolerate the pool's taints
(``PreferNoSchedule`` ones are ignored), and one of its required node-affinity terms
together with its node selector must be compatible with the pool's requirements and
overlap the instance type's own requirements. On an existing node, a DaemonSet counts if it
tolerates the node's taints and its strict requirements are compatible with the labels; the
DaemonSet pods already bound there are subtracted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.scheduling.pods import pod_from_dict
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import ResourceList, clamp_negative, merge, subtract
from karpy.scheduling.shapes import node_alternatives
from karpy.scheduling.taints import PREFER_NO_SCHEDULE_TOLERATION, tolerates_all

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.scheduling.index import InstanceTypeIndex
    from karpy.scheduling.nodes import ClusterNode
    from karpy.scheduling.pods import HostPort, Pod
    from karpy.scheduling.templates import NodeClaimTemplate

__all__ = [
    "DaemonOverheadGroup",
    "daemon_overhead_groups",
    "daemonset_pod",
    "daemonset_pods",
    "daemonset_pods_of",
    "existing_node_daemon_overhead",
]


@attrs.frozen(slots=True)
class DaemonOverheadGroup:
    mask: int  # instance types (bitset) on which exactly these DaemonSets run
    overhead: ResourceList
    host_ports: tuple[HostPort, ...]


def daemonset_pods(daemonsets: Iterable[Mapping[str, Any]], pods: Iterable[Pod]) -> list[Pod]:
    """One pod per DaemonSet (given as dicts); see `daemonset_pods_of`."""
    templates = []
    for daemonset in daemonsets:
        meta = daemonset.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        templates.append((namespace, str(meta.get("name", "")), daemonset_pod(daemonset)))
    return daemonset_pods_of(templates, pods)


def daemonset_pods_of(templates: Iterable[tuple[str, str, Pod]], pods: Iterable[Pod]) -> list[Pod]:
    """One pod per DaemonSet (``(namespace, name, template pod)``): a running pod of it if
    there is one, else its template.

    A running pod reflects what the DaemonSet really requests (admission and VPA may have
    changed it). The DaemonSet controller pins each pod to its node with required node
    affinity, so the template's required node affinity, when it has one, replaces the
    pod's, as Karpenter does.
    """
    running: dict[tuple[str, str], Pod] = {}
    for pod in sorted(pods, key=lambda p: (p.namespace, p.name)):
        for api_version, kind, name in pod.owners:
            if api_version == "apps/v1" and kind == "DaemonSet":
                running.setdefault((pod.namespace, name), pod)
    out = []
    for namespace, name, template in templates:
        live = running.get((namespace, name))
        if live is None:
            out.append(template)
        elif template.required_node_terms:
            out.append(attrs.evolve(live, required_node_terms=template.required_node_terms))
        else:
            out.append(live)
    return out


def daemonset_pod(daemonset: Mapping[str, Any]) -> Pod:
    """The pod a DaemonSet would create, from its template."""
    meta = daemonset.get("metadata") or {}
    template = (daemonset.get("spec") or {}).get("template") or {}
    pod = {
        "metadata": {
            **(template.get("metadata") or {}),
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace") or "default",
            "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta.get("name", "")}
            ],
        },
        "spec": template.get("spec") or {},
    }
    return pod_from_dict(pod)


def _compatible_mask(
    template: NodeClaimTemplate,
    index: InstanceTypeIndex,
    options: int,
    pod: Pod,
    well_known: frozenset[str],
) -> int:
    tolerations = (*pod.tolerations, PREFER_NO_SCHEDULE_TOLERATION)
    if not tolerates_all(template.taints, tolerations):
        return 0
    mask = 0
    for reqs in node_alternatives(pod):
        if template.requirements.compatible(reqs, well_known) is None:
            mask |= options & index.requirements_mask(reqs)
    return mask


def daemon_overhead_groups(
    template: NodeClaimTemplate,
    index: InstanceTypeIndex,
    options: int,
    daemon_pods: Sequence[Pod],
    well_known: frozenset[str],
) -> tuple[DaemonOverheadGroup, ...]:
    """Partition ``options`` by the set of DaemonSets that would run on each type."""
    parts: list[tuple[int, tuple[int, ...]]] = [(options, ())]
    for j, pod in enumerate(daemon_pods):
        if pod.has_dra_claims:
            continue  # Karpenter ignores DRA requests, so such DaemonSets add no overhead
        mask = _compatible_mask(template, index, options, pod, well_known)
        if not mask:
            continue
        split: list[tuple[int, tuple[int, ...]]] = []
        for part, members in parts:
            inside, outside = part & mask, part & ~mask
            if inside:
                split.append((inside, (*members, j)))
            if outside:
                split.append((outside, members))
        parts = split
    groups = []
    for part, members in parts:
        pods = [daemon_pods[j] for j in members]
        groups.append(
            DaemonOverheadGroup(
                mask=part,
                overhead=merge(*(p.requests for p in pods)) if pods else {},
                host_ports=tuple(hp for p in pods for hp in p.host_ports),
            )
        )
    return tuple(groups)


def existing_node_daemon_overhead(
    node: ClusterNode, daemon_pods: Iterable[Pod], bound_daemon_requests: Mapping[str, int]
) -> ResourceList:
    """DaemonSet requests still to come on ``node``: compatible DaemonSets minus those bound."""
    labels = Requirements.from_labels(node.labels)
    compatible = [
        p
        for p in daemon_pods
        if not p.has_dra_claims
        and tolerates_all(node.taints, p.tolerations)
        and labels.compatible(node_alternatives(p)[0]) is None
    ]
    if not compatible:
        return {}
    total = merge(*(p.requests for p in compatible))
    remaining = subtract(
        merge(total, dict.fromkeys(bound_daemon_requests, 0)), bound_daemon_requests
    )
    return clamp_negative(remaining)
