"""Builders of Kubernetes objects as plain dicts, for tests across karpy.

Every builder returns a fresh ``dict`` shaped exactly like the object's JSON on the wire
(what ``kubectl get -o json`` prints), so the same value can be handed to ``karpy
simulate``, written to the API server emulator or parsed by the API models. Builders take
keyword arguments with defaults that make a valid, minimal object; names default to
unique generated ones (``pod-17``), so tests never collide on names by accident.

Conventions:

- ``None`` means "leave the field out"; an empty sequence means "set it to ``[]``" where
  Kubernetes distinguishes the two (pod affinity terms, for instance).
- Quantities may be given as strings (``"1500m"``, ``"2Gi"``) or ints (cores, bytes).
- Small pieces (``match_expression``, ``toleration``, ``taint``, ``topology_spread``,
  ``pod_affinity_term`` ...) compose into the big builders.

The only module state is the counter behind :func:`unique_name`.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = [
    "DEFAULT_IMAGE",
    "DEFAULT_NODE_CLASS_REF",
    "SOME_TIME",
    "Obj",
    "condition",
    "container",
    "daemonset",
    "deployment",
    "ephemeral_volume",
    "label_selector",
    "match_expression",
    "metadata",
    "namespace",
    "node",
    "node_overlay",
    "nodeclaim",
    "nodepool",
    "nodepool_requirement",
    "owned_by",
    "owner_reference",
    "persistent_volume",
    "persistent_volume_claim",
    "pod",
    "pod_affinity_term",
    "pod_disruption_budget",
    "pods",
    "preferred_node_term",
    "pvc_volume",
    "replica_set",
    "runtime_class",
    "sidecar",
    "stateful_set",
    "storage_class",
    "taint",
    "toleration",
    "topology_spread",
    "unique_name",
    "unschedulable_pod",
    "unschedulable_pods",
    "weighted",
]

Obj = dict[str, Any]
Quantities = Mapping[str, str | int]

DEFAULT_IMAGE: Final = "registry.k8s.io/pause:3.10"
DEFAULT_NODE_CLASS_REF: Final = {
    "group": "karpenter.k8s.aws",
    "kind": "EC2NodeClass",
    "name": "default",
}
# A fixed, valid RFC 3339 instant for deletion/creation timestamps in tests.
SOME_TIME: Final = "2024-01-01T00:00:00Z"

_names = itertools.count(1)


def unique_name(prefix: str = "obj") -> str:
    """A name no other call in this process returns: ``f"{prefix}-{n}"``."""
    return f"{prefix}-{next(_names)}"


def _quantities(values: Quantities | None) -> dict[str, str] | None:
    if values is None:
        return None
    return {name: str(value) for name, value in values.items()}


def _drop_none(fields: Mapping[str, Any]) -> Obj:
    return {key: value for key, value in fields.items() if value is not None}


def metadata(
    name: str | None = None,
    *,
    prefix: str = "obj",
    namespace: str | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    owner_references: Sequence[Obj] = (),
    finalizers: Sequence[str] = (),
    uid: str | None = None,
    creation_timestamp: str | None = None,
    deletion_timestamp: str | None = None,
) -> Obj:
    """``metadata`` of any object; the uid defaults to one derived from the name."""
    name = name or unique_name(prefix)
    meta = _drop_none(
        {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"uid-{namespace or '_'}-{name}",
            "labels": dict(labels) if labels is not None else None,
            "annotations": dict(annotations) if annotations is not None else None,
            "creationTimestamp": creation_timestamp,
            "deletionTimestamp": deletion_timestamp,
        }
    )
    if owner_references:
        meta["ownerReferences"] = [dict(ref) for ref in owner_references]
    if finalizers:
        meta["finalizers"] = list(finalizers)
    return meta


def condition(
    type_: str, status: str = "True", *, reason: str | None = None, message: str | None = None
) -> Obj:
    """A status condition (``type``/``status``/``reason``/``message``)."""
    return _drop_none({"type": type_, "status": status, "reason": reason, "message": message})


def owner_reference(
    kind: str,
    name: str,
    *,
    api_version: str = "apps/v1",
    uid: str | None = None,
    controller: bool = True,
    block_owner_deletion: bool = True,
) -> Obj:
    """A controller owner reference to ``kind/name``."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid or f"uid-{name}",
        "controller": controller,
        "blockOwnerDeletion": block_owner_deletion,
    }


def owned_by(owner: Mapping[str, Any], *, controller: bool = True) -> Obj:
    """A controller owner reference pointing at the object ``owner``."""
    meta = owner["metadata"]
    return owner_reference(
        owner["kind"],
        meta["name"],
        api_version=owner["apiVersion"],
        uid=meta.get("uid"),
        controller=controller,
    )


# --- selectors and scheduling pieces --------------------------------------------------


def match_expression(key: str, operator: str, values: Sequence[str] = ()) -> Obj:
    """A ``{key, operator, values}`` requirement (node selector or label selector)."""
    expression: Obj = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return expression


def nodepool_requirement(
    key: str, operator: str, values: Sequence[str] = (), *, min_values: int | None = None
) -> Obj:
    """A NodePool/NodeClaim requirement, optionally with ``minValues``."""
    requirement = match_expression(key, operator, values)
    if min_values is not None:
        requirement["minValues"] = min_values
    return requirement


def label_selector(
    match_labels: Mapping[str, str] | None = None, *, match_expressions: Sequence[Obj] = ()
) -> Obj:
    """A ``metav1.LabelSelector``; with no arguments it is the empty (match-all) selector."""
    selector: Obj = {}
    if match_labels is not None:
        selector["matchLabels"] = dict(match_labels)
    if match_expressions:
        selector["matchExpressions"] = [dict(e) for e in match_expressions]
    return selector


def toleration(
    key: str | None = None,
    *,
    operator: str = "Equal",
    value: str | None = None,
    effect: str | None = None,
    seconds: int | None = None,
) -> Obj:
    """A pod toleration; ``operator="Exists"`` with no key tolerates everything."""
    return _drop_none(
        {
            "key": key,
            "operator": operator,
            "value": value,
            "effect": effect,
            "tolerationSeconds": seconds,
        }
    )


def taint(key: str, value: str | None = None, effect: str = "NoSchedule") -> Obj:
    """A node taint."""
    return _drop_none({"key": key, "value": value, "effect": effect})


def pod_affinity_term(
    topology_key: str,
    *,
    match_labels: Mapping[str, str] | None = None,
    match_expressions: Sequence[Obj] = (),
    namespaces: Sequence[str] | None = None,
    namespace_selector: Obj | None = None,
    match_label_keys: Sequence[str] | None = None,
    mismatch_label_keys: Sequence[str] | None = None,
) -> Obj:
    """A ``PodAffinityTerm`` selecting pods by labels within ``topology_key`` domains."""
    term: Obj = {"topologyKey": topology_key}
    if match_labels is not None or match_expressions:
        term["labelSelector"] = label_selector(match_labels, match_expressions=match_expressions)
    if namespaces is not None:
        term["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        term["namespaceSelector"] = dict(namespace_selector)
    if match_label_keys is not None:
        term["matchLabelKeys"] = list(match_label_keys)
    if mismatch_label_keys is not None:
        term["mismatchLabelKeys"] = list(mismatch_label_keys)
    return term


def weighted(term: Obj, weight: int = 1) -> Obj:
    """A ``WeightedPodAffinityTerm`` (preferred pod affinity or anti-affinity)."""
    return {"weight": weight, "podAffinityTerm": term}


def preferred_node_term(match_expressions: Sequence[Obj], weight: int = 1) -> Obj:
    """A ``PreferredSchedulingTerm`` (preferred node affinity)."""
    return {
        "weight": weight,
        "preference": {"matchExpressions": [dict(e) for e in match_expressions]},
    }


def topology_spread(
    topology_key: str,
    *,
    max_skew: int = 1,
    when_unsatisfiable: str = "DoNotSchedule",
    match_labels: Mapping[str, str] | None = None,
    match_expressions: Sequence[Obj] = (),
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] | None = None,
) -> Obj:
    """A ``TopologySpreadConstraint``; without labels or expressions it has no selector."""
    constraint: Obj = {
        "maxSkew": max_skew,
        "topologyKey": topology_key,
        "whenUnsatisfiable": when_unsatisfiable,
    }
    if match_labels is not None or match_expressions:
        constraint["labelSelector"] = label_selector(
            match_labels, match_expressions=match_expressions
        )
    optional = {
        "minDomains": min_domains,
        "nodeAffinityPolicy": node_affinity_policy,
        "nodeTaintsPolicy": node_taints_policy,
        "matchLabelKeys": list(match_label_keys) if match_label_keys is not None else None,
    }
    constraint.update(_drop_none(optional))
    return constraint


# --- pods -------------------------------------------------------------------------------


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


# --- nodes and karpenter objects ---------------------------------------------------------


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


# --- workloads and policies ---------------------------------------------------------------


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


# --- storage ------------------------------------------------------------------------------

_PV_SOURCES: Final[Mapping[str, Obj]] = {
    "local": {"local": {"path": "/mnt/local-disks"}},
    "hostPath": {"hostPath": {"path": "/mnt/local-disks"}},
    "awsElasticBlockStore": {"awsElasticBlockStore": {"fsType": "ext4", "volumeID": "vol-1"}},
    "nfs": {"nfs": {"server": "fake.server", "path": "/some/path"}},
}


def persistent_volume_claim(
    name: str | None = None,
    *,
    namespace: str = "default",
    storage_class_name: str | None = None,
    volume_name: str | None = None,
    storage: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    phase: str | None = None,
    bind_completed: bool | None = None,
    annotations: Mapping[str, str] | None = None,
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A PersistentVolumeClaim.

    ``storage_class_name=None`` leaves the class out; ``""`` asks for no class. A claim
    with a ``volume_name`` carries ``pv.kubernetes.io/bind-completed`` unless
    ``bind_completed=False``, as the PV controller leaves it after binding.
    """
    all_annotations = dict(annotations or {})
    if bind_completed if bind_completed is not None else volume_name is not None:
        all_annotations["pv.kubernetes.io/bind-completed"] = "yes"
    spec: Obj = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": storage}},
    }
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    if volume_name is not None:
        spec["volumeName"] = volume_name
    result: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(
            name,
            prefix="pvc",
            namespace=namespace,
            annotations=all_annotations or None,
            finalizers=finalizers,
            deletion_timestamp=deletion_timestamp,
        ),
        "spec": spec,
    }
    if phase is not None:
        result["status"] = {"phase": phase}
    return result


def persistent_volume(
    name: str | None = None,
    *,
    zones: Sequence[str] = (),
    node_selector_terms: Sequence[Sequence[Obj]] | None = None,
    storage_class_name: str | None = None,
    source: str = "csi",
    driver: str = "test.driver",
    capacity: str = "100Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A PersistentVolume.

    ``source`` is ``"csi"`` (with ``driver``), ``"local"``, ``"hostPath"``,
    ``"awsElasticBlockStore"`` or ``"nfs"``. Node affinity comes from
    ``node_selector_terms`` (ORed terms of match expressions) or else from ``zones`` (one
    ``topology.kubernetes.io/zone In zones`` term).
    """
    spec: Obj = {
        "capacity": {"storage": capacity},
        "accessModes": list(access_modes),
    }
    if source == "csi":
        spec["csi"] = {"driver": driver, "volumeHandle": "test-handle"}
    elif source in _PV_SOURCES:
        spec.update(_PV_SOURCES[source])
    else:
        raise ValueError(f"unknown volume source {source!r}")
    terms = node_selector_terms
    if terms is None and zones:
        terms = [[match_expression("topology.kubernetes.io/zone", "In", zones)]]
    if terms is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in t]} for t in terms]
            }
        }
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata(
            name, prefix="pv", finalizers=finalizers, deletion_timestamp=deletion_timestamp
        ),
        "spec": spec,
    }


def csi_node(name: str, limits: Mapping[str, int]) -> Obj:
    """A ``storage.k8s.io/v1`` CSINode: per CSI driver, how many volumes ``name`` can attach."""
    drivers = [
        {"name": driver, "nodeID": f"{name}-{driver}", "allocatable": {"count": count}}
        for driver, count in limits.items()
    ]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": metadata(name),
        "spec": {"drivers": drivers},
    }


def storage_class(
    name: str | None = None,
    *,
    provisioner: str = "test-provisioner",
    zones: Sequence[str] | None = None,
    allowed_topologies: Sequence[Mapping[str, Sequence[str]]] | None = None,
    volume_binding_mode: str | None = None,
    default: bool = False,
    annotations: Mapping[str, str] | None = None,
    creation_timestamp: str | None = None,
) -> Obj:
    """A ``storage.k8s.io/v1`` StorageClass.

    ``allowed_topologies`` is a list of ORed terms, each a mapping of label key to allowed
    values; ``zones`` is shorthand for one zone term. ``default=True`` adds the
    is-default-class annotation.
    """
    all_annotations = dict(annotations or {})
    if default:
        all_annotations["storageclass.kubernetes.io/is-default-class"] = "true"
    terms = allowed_topologies
    if terms is None and zones is not None:
        terms = [{"topology.kubernetes.io/zone": zones}]
    result: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata(
            name,
            prefix="sc",
            annotations=all_annotations or None,
            creation_timestamp=creation_timestamp,
        ),
        "provisioner": provisioner,
    }
    if terms is not None:
        result["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": key, "values": list(values)} for key, values in term.items()
                ]
            }
            for term in terms
        ]
    if volume_binding_mode is not None:
        result["volumeBindingMode"] = volume_binding_mode
    return result
