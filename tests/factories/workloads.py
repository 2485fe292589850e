"""Workloads and policies: DaemonSets, ReplicaSets, Deployments, StatefulSets, Services,
PodDisruptionBudgets, Namespaces, RuntimeClasses, PodTemplates and CapacityBuffers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.factories.base import (
    Obj,
    Quantities,
    _drop_none,
    _quantities,
    label_selector,
    metadata,
    unique_name,
)
from tests.factories.pods import pod


def _pod_template(template: Mapping[str, Any] | None, default_labels: Mapping[str, str]) -> Obj:
    source = template if template is not None else pod()
    labels = source["metadata"].get("labels") or dict(default_labels)
    template_meta: Obj = {"labels": dict(labels)}
    if source["metadata"].get("annotations"):
        template_meta["annotations"] = dict(source["metadata"]["annotations"])
    return {"metadata": template_meta, "spec": dict(source["spec"])}


def _workload(
    kind: str,
    name: str | None,
    *,
    namespace: str,
    template: Mapping[str, Any] | None,
    replicas: int | None,
    extra_spec: Mapping[str, Any] | None = None,
) -> Obj:
    name = name or unique_name(kind.lower())
    pod_template = _pod_template(template, {"app": name})
    spec: Obj = {
        "selector": {"matchLabels": dict(pod_template["metadata"]["labels"])},
        "template": pod_template,
    }
    if replicas is not None:
        spec["replicas"] = replicas
    spec.update(extra_spec or {})
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": metadata(name, namespace=namespace),
        "spec": spec,
    }


def daemonset(
    name: str | None = None,
    *,
    namespace: str = "default",
    template: Mapping[str, Any] | None = None,
) -> Obj:
    """A DaemonSet whose pod template is the spec and labels of the pod ``template``.

    Build the template with :func:`pod` (its name and status are dropped); a template
    without labels gets ``app=<daemonset name>``, which is also the selector.
    """
    return _workload("DaemonSet", name, namespace=namespace, template=template, replicas=None)


def replica_set(
    name: str | None = None,
    *,
    namespace: str = "default",
    template: Mapping[str, Any] | None = None,
    replicas: int = 1,
) -> Obj:
    """A ReplicaSet (see :func:`daemonset` for the template convention)."""
    return _workload("ReplicaSet", name, namespace=namespace, template=template, replicas=replicas)


def deployment(
    name: str | None = None,
    *,
    namespace: str = "default",
    template: Mapping[str, Any] | None = None,
    replicas: int = 1,
) -> Obj:
    """A Deployment (see :func:`daemonset` for the template convention)."""
    return _workload("Deployment", name, namespace=namespace, template=template, replicas=replicas)


def stateful_set(
    name: str | None = None,
    *,
    namespace: str = "default",
    template: Mapping[str, Any] | None = None,
    replicas: int = 1,
) -> Obj:
    """A StatefulSet (see :func:`daemonset` for the template convention)."""
    return _workload(
        "StatefulSet",
        name,
        namespace=namespace,
        template=template,
        replicas=replicas,
        extra_spec={"serviceName": name or "statefulset"},
    )


def pod_template(
    name: str | None = None,
    *,
    namespace: str = "default",
    template: Mapping[str, Any] | None = None,
) -> Obj:
    """A PodTemplate (see :func:`daemonset` for the template convention)."""
    name = name or unique_name("podtemplate")
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": metadata(name, namespace=namespace),
        "template": _pod_template(template, {"app": name}),
    }


def capacity_buffer(
    name: str | None = None,
    *,
    namespace: str = "default",
    pod_template: str | None = None,
    scalable: tuple[str, str] | None = None,
    replicas: int | None = None,
    percentage: int | None = None,
    limits: Quantities | None = None,
) -> Obj:
    """An ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer of the PodTemplate named
    ``pod_template`` or of the ``scalable`` (kind, name) apps/v1 workload."""
    spec: Obj = _drop_none({
        "podTemplateRef": None if pod_template is None else {"name": pod_template},
        "scalableRef": None if scalable is None
        else {"apiGroup": "apps", "kind": scalable[0], "name": scalable[1]},
        "replicas": replicas,
        "percentage": percentage,
        "limits": None if limits is None else _quantities(limits),
    })  # fmt: skip
    return {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": metadata(name or unique_name("buffer"), namespace=namespace),
        "spec": spec,
    }


def service(
    name: str | None = None,
    *,
    namespace: str = "default",
    selector: Mapping[str, str] | None = None,
) -> Obj:
    """A ClusterIP Service selecting pods by ``selector`` (none: a selector-less Service)."""
    spec: Obj = {"ports": [{"port": 80}]}
    if selector is not None:
        spec["selector"] = dict(selector)
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, prefix="svc", namespace=namespace),
        "spec": spec,
    }


def pod_disruption_budget(
    name: str | None = None,
    *,
    namespace: str = "default",
    match_labels: Mapping[str, str] | None = None,
    match_expressions: Sequence[Obj] = (),
    min_available: int | str | None = None,
    max_unavailable: int | str | None = None,
    unhealthy_pod_eviction_policy: str | None = None,
    disruptions_allowed: int = 0,
    current_healthy: int = 0,
    desired_healthy: int = 0,
    expected_pods: int = 0,
) -> Obj:
    """A ``policy/v1`` PodDisruptionBudget with a status as the disruption controller writes it."""
    spec = _drop_none(
        {
            "selector": label_selector(match_labels, match_expressions=match_expressions),
            "minAvailable": min_available,
            "maxUnavailable": max_unavailable,
            "unhealthyPodEvictionPolicy": unhealthy_pod_eviction_policy,
        }
    )
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": metadata(name, prefix="pdb", namespace=namespace),
        "spec": spec,
        "status": {
            "observedGeneration": 1,
            "disruptionsAllowed": disruptions_allowed,
            "currentHealthy": current_healthy,
            "desiredHealthy": desired_healthy,
            "expectedPods": expected_pods,
        },
    }


def namespace(name: str | None = None, *, labels: Mapping[str, str] | None = None) -> Obj:
    """A Namespace (Kubernetes adds ``kubernetes.io/metadata.name`` to its labels)."""
    name = name or unique_name("ns")
    all_labels = {"kubernetes.io/metadata.name": name, **(labels or {})}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": metadata(name, labels=all_labels),
    }


def runtime_class(
    name: str | None = None,
    *,
    handler: str = "runc",
    overhead: Quantities | None = None,
    node_selector: Mapping[str, str] | None = None,
    tolerations: Sequence[Obj] = (),
) -> Obj:
    """A ``node.k8s.io/v1`` RuntimeClass; ``overhead`` is its ``podFixed`` overhead."""
    result: Obj = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": metadata(name, prefix="runtime"),
        "handler": handler,
    }
    if overhead is not None:
        result["overhead"] = {"podFixed": _quantities(overhead)}
    if node_selector is not None or tolerations:
        result["scheduling"] = _drop_none(
            {
                "nodeSelector": dict(node_selector) if node_selector is not None else None,
                "tolerations": [dict(t) for t in tolerations] or None,
            }
        )
    return result
