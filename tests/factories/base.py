"""Shared pieces of the object builders: names, metadata, owner references, selectors,
tolerations, taints, affinity terms and spread constraints."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Final

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
