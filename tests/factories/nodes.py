"""Nodes and Karpenter's objects: NodePool, NodeClaim, NodeOverlay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tests.factories.base import (
    DEFAULT_NODE_CLASS_REF,
    Obj,
    Quantities,
    _drop_none,
    _quantities,
    condition,
    metadata,
    unique_name,
)


def node(
    name: str | None = None,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Obj] = (),
    capacity: Quantities | None = None,
    allocatable: Quantities | None = None,
    ready: str = "True",
    unschedulable: bool = False,
    provider_id: str | None = None,
    conditions: Sequence[Obj] = (),
    hostname_label: bool = True,
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A Node with a ``Ready`` condition of status ``ready`` ("True", "False", "Unknown").

    ``capacity`` defaults to ``allocatable``. Like a kubelet, the builder labels the node
    ``kubernetes.io/hostname=<name>`` unless ``hostname_label=False``.
    """
    name = name or unique_name("node")
    all_labels = dict(labels or {})
    if hostname_label:
        all_labels.setdefault("kubernetes.io/hostname", name)
    spec = _drop_none(
        {
            "providerID": provider_id,
            "taints": [dict(t) for t in taints] or None,
            "unschedulable": True if unschedulable else None,
        }
    )
    status = _drop_none(
        {
            "capacity": _quantities(capacity if capacity is not None else allocatable),
            "allocatable": _quantities(allocatable),
            "conditions": [condition("Ready", ready), *(dict(c) for c in conditions)],
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata(
            name,
            labels=all_labels,
            annotations=annotations,
            finalizers=finalizers,
            deletion_timestamp=deletion_timestamp,
        ),
        "spec": spec,
        "status": status,
    }


def nodepool(
    name: str | None = None,
    *,
    requirements: Sequence[Obj] = (),
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Obj] = (),
    startup_taints: Sequence[Obj] = (),
    limits: Quantities | None = None,
    weight: int | None = None,
    node_class_ref: Mapping[str, str] | None = None,
    expire_after: str = "720h",
    termination_grace_period: str | None = None,
    disruption: Mapping[str, Any] | None = None,
    ready: bool | None = None,
    conditions: Sequence[Obj] = (),
    replicas: int | None = None,
) -> Obj:
    """A ``karpenter.sh/v1`` NodePool, with the defaults the API server would fill in.

    ``labels``/``annotations`` go on the node template. ``ready=None`` leaves ``status``
    out (karpy then treats the pool as ready); ``True``/``False`` set a ``Ready``
    condition.
    """
    template_spec: Obj = {
        "nodeClassRef": dict(node_class_ref or DEFAULT_NODE_CLASS_REF),
        "requirements": [dict(r) for r in requirements],
        "expireAfter": expire_after,
    }
    if taints:
        template_spec["taints"] = [dict(t) for t in taints]
    if startup_taints:
        template_spec["startupTaints"] = [dict(t) for t in startup_taints]
    if termination_grace_period is not None:
        template_spec["terminationGracePeriod"] = termination_grace_period
    template_meta = _drop_none(
        {
            "labels": dict(labels) if labels is not None else None,
            "annotations": dict(annotations) if annotations is not None else None,
        }
    )
    spec: Obj = {
        "template": {"metadata": template_meta, "spec": template_spec},
        "disruption": dict(disruption)
        if disruption is not None
        else {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "0s",
            "budgets": [{"nodes": "10%"}],
        },
    }
    if limits is not None:
        spec["limits"] = _quantities(limits)
    if weight is not None:
        spec["weight"] = weight
    if replicas is not None:
        spec["replicas"] = replicas  # a static pool
    result: Obj = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": metadata(name, prefix="nodepool"),
        "spec": spec,
    }
    status_conditions = [dict(c) for c in conditions]
    if ready is not None:
        status_conditions.append(condition("Ready", "True" if ready else "False"))
    if status_conditions:
        result["status"] = {"conditions": status_conditions}
    return result


def nodeclaim(
    name: str | None = None,
    *,
    nodepool: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    requirements: Sequence[Obj] = (),
    taints: Sequence[Obj] = (),
    startup_taints: Sequence[Obj] = (),
    requests: Quantities | None = None,
    node_class_ref: Mapping[str, str] | None = None,
    expire_after: str = "720h",
    provider_id: str | None = None,
    node_name: str | None = None,
    capacity: Quantities | None = None,
    allocatable: Quantities | None = None,
    launched: bool = True,
    registered: bool = False,
    initialized: bool = False,
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A ``karpenter.sh/v1`` NodeClaim; ``nodepool`` sets the ``karpenter.sh/nodepool`` label.

    ``launched``/``registered``/``initialized`` add the matching ``True`` conditions;
    ``provider_id`` defaults to a fake id derived from the name.
    """
    name = name or unique_name("nodeclaim")
    all_labels = dict(labels or {})
    if nodepool is not None:
        all_labels["karpenter.sh/nodepool"] = nodepool
    spec: Obj = {
        "nodeClassRef": dict(node_class_ref or DEFAULT_NODE_CLASS_REF),
        "requirements": [dict(r) for r in requirements],
        "expireAfter": expire_after,
    }
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    if startup_taints:
        spec["startupTaints"] = [dict(t) for t in startup_taints]
    if requests is not None:
        spec["resources"] = {"requests": _quantities(requests)}
    flags = (("Launched", launched), ("Registered", registered), ("Initialized", initialized))
    status = _drop_none(
        {
            "providerID": provider_id or f"fake:///{name}",
            "nodeName": node_name,
            "capacity": _quantities(capacity),
            "allocatable": _quantities(allocatable),
            "conditions": [condition(kind) for kind, on in flags if on] or None,
        }
    )
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodeClaim",
        "metadata": metadata(
            name,
            labels=all_labels,
            annotations=annotations,
            finalizers=finalizers,
            deletion_timestamp=deletion_timestamp,
        ),
        "spec": spec,
        "status": status,
    }


def node_overlay(
    name: str | None = None,
    *,
    requirements: Sequence[Obj] = (),
    capacity: Quantities | None = None,
    price: str | None = None,
    price_adjustment: str | None = None,
    weight: int | None = None,
) -> Obj:
    """A ``karpenter.sh/v1alpha1`` NodeOverlay adjusting matching instance types."""
    spec = _drop_none(
        {
            "requirements": [dict(r) for r in requirements],
            "capacity": _quantities(capacity),
            "price": price,
            "priceAdjustment": price_adjustment,
            "weight": weight,
        }
    )
    return {
        "apiVersion": "karpenter.sh/v1alpha1",
        "kind": "NodeOverlay",
        "metadata": metadata(name, prefix="overlay"),
        "spec": spec,
    }
