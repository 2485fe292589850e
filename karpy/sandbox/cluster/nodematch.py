"""Does a pod's node selector and required node affinity accept a node?

kube-scheduler's NodeAffinity filter and the DaemonSet controller's "should this node run
the daemon" both ask this, of raw pod specs (`node_accepts`) or of the kube-scheduler
stand-in's parsed pods (`info_accepts`): every ``nodeSelector`` pair must be a node label,
and when ``requiredDuringSchedulingIgnoredDuringExecution`` is set, one of its terms must
match — all of the term's ``matchExpressions`` on labels (``In``, ``NotIn``, ``Exists``,
``DoesNotExist``, ``Gt``, ``Lt``) and ``matchFields`` on ``metadata.name``. A term with no
requirements matches nothing, as upstream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence


def _integer(text: Any) -> int | None:
    try:
        return int(str(text))
    except ValueError:
        return None


def requirement_matches(value: str | None, operator: str, values: Sequence[Any]) -> bool:
    """One ``NodeSelectorRequirement`` against a label's value (None: no such label)."""
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _integer(value), _integer(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False


def term_matches(term: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    expressions = term.get("matchExpressions") or ()
    fields = term.get("matchFields") or ()
    if not expressions and not fields:
        return False
    for expr in expressions:
        key = str(expr.get("key", ""))
        if not requirement_matches(
            labels.get(key), str(expr.get("operator", "")), expr.get("values") or ()
        ):
            return False
    for expr in fields:
        value = name if expr.get("key") == "metadata.name" else None
        if not requirement_matches(value, str(expr.get("operator", "")), expr.get("values") or ()):
            return False
    return True


def node_accepts(pod_spec: Mapping[str, Any], labels: Mapping[str, str], name: str) -> bool:
    """Whether ``pod_spec``'s node selector and required node affinity match the node."""
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    affinity = (pod_spec.get("affinity") or {}).get("nodeAffinity") or {}
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not required:
        return True
    terms = required.get("nodeSelectorTerms") or ()
    return any(term_matches(term, labels, name) for term in terms)


def info_accepts(
    node_selector: Mapping[str, str],
    required_terms: Sequence[Mapping[str, Any]] | None,
    labels: Mapping[str, str],
    name: str,
) -> bool:
    """`node_accepts` for the kube-scheduler stand-in's parsed pod (``None``: no required
    node affinity; an empty list of terms matches nothing)."""
    for key, value in node_selector.items():
        if labels.get(key) != value:
            return False
    if required_terms is None:
        return True
    return any(term_matches(term, labels, name) for term in required_terms)
