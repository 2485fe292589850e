"""Pods and their parts: containers, sidecars, volumes, affinity."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.factories.base import (
    DEFAULT_IMAGE,
    Obj,
    Quantities,
    _drop_none,
    _quantities,
    condition,
    metadata,
    preferred_node_term,
    unique_name,
)


def container(
    name: str | None = None,
    *,
    image: str = DEFAULT_IMAGE,
    requests: Quantities | None = None,
    limits: Quantities | None = None,
    host_ports: Sequence[int] = (),
    restart_policy: str | None = None,
    command: Sequence[str] | None = None,
) -> Obj:
    """A container; ``restart_policy="Always"`` on an init container makes it a sidecar."""
    result: Obj = {"name": name or unique_name("c"), "image": image}
    resources = _drop_none({"requests": _quantities(requests), "limits": _quantities(limits)})
    result["resources"] = resources
    if host_ports:
        result["ports"] = [
            {"containerPort": 80, "hostPort": port, "protocol": "TCP"} for port in host_ports
        ]
    if restart_policy is not None:
        result["restartPolicy"] = restart_policy
    if command is not None:
        result["command"] = list(command)
    return result


def sidecar(
    name: str | None = None,
    *,
    image: str = DEFAULT_IMAGE,
    requests: Quantities | None = None,
    limits: Quantities | None = None,
) -> Obj:
    """A restartable init container (a native sidecar), for ``pod(init_containers=...)``."""
    return container(name, image=image, requests=requests, limits=limits, restart_policy="Always")


def pvc_volume(claim_name: str, *, name: str | None = None) -> Obj:
    """A pod volume backed by the PersistentVolumeClaim ``claim_name``."""
    return {"name": name or unique_name("vol"), "persistentVolumeClaim": {"claimName": claim_name}}


def ephemeral_volume(
    name: str | None = None,
    *,
    storage_class_name: str | None = None,
    storage: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
) -> Obj:
    """A generic ephemeral volume; its PVC is named ``<pod>-<volume name>``.

    ``storage_class_name=None`` leaves the class out (the default class applies);
    ``""`` explicitly asks for no class.
    """
    spec: Obj = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": storage}},
    }
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    return {
        "name": name or unique_name("ephemeral"),
        "ephemeral": {"volumeClaimTemplate": {"spec": spec}},
    }


def pod(
    name: str | None = None,
    *,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner_references: Sequence[Obj] = (),
    requests: Quantities | None = None,
    limits: Quantities | None = None,
    host_ports: Sequence[int] = (),
    containers: Sequence[Obj] | None = None,
    init_containers: Sequence[Obj] = (),
    overhead: Quantities | None = None,
    node_selector: Mapping[str, str] | None = None,
    node_requirements: Sequence[Obj] | None = None,
    node_affinity_terms: Sequence[Sequence[Obj]] | None = None,
    node_preferences: Sequence[Obj] | None = None,
    preferred_node_affinity: Sequence[Obj] | None = None,
    pod_affinity: Sequence[Obj] | None = None,
    pod_affinity_preferred: Sequence[Obj] | None = None,
    pod_anti_affinity: Sequence[Obj] | None = None,
    pod_anti_affinity_preferred: Sequence[Obj] | None = None,
    topology_spread_constraints: Sequence[Obj] = (),
    tolerations: Sequence[Obj] = (),
    pvcs: Sequence[str] = (),
    volumes: Sequence[Obj] = (),
    priority: int | None = None,
    priority_class_name: str | None = None,
    runtime_class_name: str | None = None,
    scheduler_name: str | None = None,
    node_name: str | None = None,
    nominated_node_name: str | None = None,
    phase: str | None = None,
    conditions: Sequence[Obj] = (),
    unschedulable: bool = False,
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A Pod.

    Resources: ``requests``/``limits``/``host_ports`` shape the single default container;
    pass ``containers`` instead for several. Node affinity: ``node_requirements`` is one
    required term, ``node_affinity_terms`` several ORed terms, ``node_preferences`` one
    preferred term of weight 1 and ``preferred_node_affinity`` explicit weighted terms.
    Pod (anti-)affinity lists are ``PodAffinityTerm`` (required) or ``weighted`` terms
    (preferred). ``pvcs`` name claims to mount. ``unschedulable=True`` adds the condition
    the kube-scheduler sets on pods it could not place (``PodScheduled=False``,
    ``reason=Unschedulable``), which is what autoscalers act on.
    """
    if containers is not None and (requests or limits or host_ports):
        raise ValueError("give requests/limits/host_ports or containers, not both")
    if node_requirements is not None and node_affinity_terms is not None:
        raise ValueError("give node_requirements or node_affinity_terms, not both")
    spec: Obj = {
        "containers": [dict(c) for c in containers]
        if containers is not None
        else [container(requests=requests, limits=limits, host_ports=host_ports)]
    }
    if init_containers:
        spec["initContainers"] = [dict(c) for c in init_containers]
    affinity = _affinity(
        node_requirements=node_requirements,
        node_affinity_terms=node_affinity_terms,
        node_preferences=node_preferences,
        preferred_node_affinity=preferred_node_affinity,
        pod_affinity=pod_affinity,
        pod_affinity_preferred=pod_affinity_preferred,
        pod_anti_affinity=pod_anti_affinity,
        pod_anti_affinity_preferred=pod_anti_affinity_preferred,
    )
    volume_list = [pvc_volume(claim) for claim in pvcs] + [dict(v) for v in volumes]
    spec.update(
        _drop_none(
            {
                "nodeName": node_name,
                "nodeSelector": dict(node_selector) if node_selector is not None else None,
                "affinity": affinity,
                "topologySpreadConstraints": [dict(t) for t in topology_spread_constraints] or None,
                "tolerations": [dict(t) for t in tolerations] or None,
                "volumes": volume_list or None,
                "overhead": _quantities(overhead),
                "priority": priority,
                "priorityClassName": priority_class_name,
                "runtimeClassName": runtime_class_name,
                "schedulerName": scheduler_name,
            }
        )
    )
    all_conditions = [dict(c) for c in conditions]
    if unschedulable:
        all_conditions.append(condition("PodScheduled", "False", reason="Unschedulable"))
    status = _drop_none(
        {
            "phase": phase,
            "nominatedNodeName": nominated_node_name,
            "conditions": all_conditions or None,
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata(
            name,
            prefix="pod",
            namespace=namespace,
            labels=labels,
            annotations=annotations,
            owner_references=owner_references,
            finalizers=finalizers,
            deletion_timestamp=deletion_timestamp,
        ),
        "spec": spec,
        "status": status,
    }


def _affinity(
    *,
    node_requirements: Sequence[Obj] | None,
    node_affinity_terms: Sequence[Sequence[Obj]] | None,
    node_preferences: Sequence[Obj] | None,
    preferred_node_affinity: Sequence[Obj] | None,
    pod_affinity: Sequence[Obj] | None,
    pod_affinity_preferred: Sequence[Obj] | None,
    pod_anti_affinity: Sequence[Obj] | None,
    pod_anti_affinity_preferred: Sequence[Obj] | None,
) -> Obj | None:
    affinity: Obj = {}
    terms = node_affinity_terms
    if node_requirements is not None:
        terms = [node_requirements]
    preferred = [dict(t) for t in preferred_node_affinity or ()]
    if node_preferences is not None:
        preferred.insert(0, preferred_node_term(node_preferences))
    node_affinity: Obj = {}
    if terms is not None:
        node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in t]} for t in terms]
        }
    if preferred:
        node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if node_affinity:
        affinity["nodeAffinity"] = node_affinity
    for field, required, preferred_terms in (
        ("podAffinity", pod_affinity, pod_affinity_preferred),
        ("podAntiAffinity", pod_anti_affinity, pod_anti_affinity_preferred),
    ):
        block: Obj = {}
        if required is not None:
            block["requiredDuringSchedulingIgnoredDuringExecution"] = [dict(t) for t in required]
        if preferred_terms is not None:
            block["preferredDuringSchedulingIgnoredDuringExecution"] = [
                dict(t) for t in preferred_terms
            ]
        if required is not None or preferred_terms is not None:
            affinity[field] = block
    return affinity or None


def unschedulable_pod(name: str | None = None, **options: Any) -> Obj:
    """A pending pod the kube-scheduler has marked ``Unschedulable`` (see :func:`pod`)."""
    return pod(name, unschedulable=True, **options)


def pods(count: int, **options: Any) -> list[Obj]:
    """``count`` pods built with the same options and distinct names."""
    return [pod(**options) for _ in range(count)]


def unschedulable_pods(count: int, **options: Any) -> list[Obj]:
    """``count`` identical ``Unschedulable`` pods with distinct names."""
    return [unschedulable_pod(**options) for _ in range(count)]
