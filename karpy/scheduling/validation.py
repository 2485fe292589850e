"""Pods Karpenter will not provision for, and why.

Before scheduling, Karpenter sets aside pods whose node constraints it cannot honour on
capacity it launches: node-selector terms using ``matchFields``, unsupported operators,
malformed label keys or values, restricted labels (``kubernetes.io/hostname``, anything in
a restricted domain that is not a well-known label: ``karpenter.sh`` and the domains the
cloud provider restricts, as Karpenter's providers add theirs),
capacity-type values that do not exist, and pods that explicitly avoid Karpenter nodes
(``karpenter.sh/nodepool DoesNotExist``). `pod_problem` returns that reason, or None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.labels import (
    LABEL_NODEPOOL,
    RESTRICTED_LABELS,
    WELL_KNOWN_VALUES,
    label_domain,
    normalize_label,
)
from karpy.base import names
from karpy.scheduling.requirements import (
    DOES_NOT_EXIST,
    GT,
    GTE,
    IN,
    LT,
    LTE,
    SUPPORTED_OPERATORS,
)

if TYPE_CHECKING:
    from karpy.scheduling.pods import Pod

__all__ = ["AVOIDS_KARPENTER", "pod_problem"]

AVOIDS_KARPENTER: Final = "configured to not run on a Karpenter provisioned node"


def is_qualified_name(key: str) -> bool:
    return not names.is_qualified_name(key)


def is_label_value(value: str) -> bool:
    return not names.is_valid_label_value(value)


def restricted_label(
    key: str, well_known: frozenset[str], restricted_domains: frozenset[str]
) -> bool:
    if key in well_known:
        return False
    domain = label_domain(key)
    if any(domain == d or domain.endswith("." + d) for d in restricted_domains):
        return True
    return key in RESTRICTED_LABELS


def requirement_problem(
    key: str, operator: str, values: tuple[str, ...], well_known: frozenset[str],
    restricted_domains: frozenset[str],
) -> str | None:  # fmt: skip
    key = normalize_label(key)
    if operator not in SUPPORTED_OPERATORS:
        return f"key {key} has an unsupported operator {operator}"
    if restricted_label(key, well_known, restricted_domains):
        return f"label {key} is restricted: it might interfere with karpenter's provisioning"
    if not is_qualified_name(key):
        return f"key {key} is not a qualified name"
    for value in values:
        if not is_label_value(value):
            return f"invalid value {value!r} for key {key}"
    if operator == IN and not values:
        return f"key {key} with operator In must have a value defined"
    known = WELL_KNOWN_VALUES.get(key)
    if (
        known is not None
        and operator == IN
        and key in well_known
        and not known.intersection(values)
    ):
        return f"no valid values in {list(values)} for {key}, expected one of {sorted(known)}"
    if operator in (GT, LT, GTE, LTE) and (len(values) != 1 or not values[0].isdigit()):
        return f"key {key} with operator {operator} must have a single positive integer value"
    return None


def pod_problem(
    pod: Pod, well_known: frozenset[str], restricted_domains: frozenset[str]
) -> str | None:
    """Why Karpenter would ignore ``pod``, or None if it can try to schedule it.
    ``well_known`` and ``restricted_domains`` are Karpenter's and the provider's
    (`karpy.scheduling.context.SchedulingContext`)."""
    for key, value in pod.node_selector:
        problem = requirement_problem(key, IN, (value,), well_known, restricted_domains)
        if problem is not None:
            return f"invalid node selector: {problem}"
    if pod.uses_match_fields:
        return "node selector term with matchFields is not supported"
    for term in pod.required_node_terms:
        for expr in term:
            problem = requirement_problem(expr.key, expr.operator, tuple(expr.values),
                                          well_known, restricted_domains)  # fmt: skip
            if problem is not None:
                return f"invalid node affinity: {problem}"
    if _avoids_karpenter(pod):
        return AVOIDS_KARPENTER
    if pod.has_dra_claims:
        return "pod has Dynamic Resource Allocation requirements, which karpy does not support"
    return None


def _avoids_karpenter(pod: Pod) -> bool:
    def avoids(key: str, operator: str) -> bool:
        return normalize_label(key) == LABEL_NODEPOOL and operator == DOES_NOT_EXIST

    if any(avoids(r.key, r.operator) for t in pod.required_node_terms[:1] for r in t):
        return True
    if pod.preferred_node_terms:
        heaviest = max(pod.preferred_node_terms, key=lambda p: p.weight)
        if any(avoids(r.key, r.operator) for r in heaviest.term):
            return True
    return False
