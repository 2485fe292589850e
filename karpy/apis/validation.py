"""Karpenter's runtime validation: the checks its controllers run on objects the API
server has already admitted, whose failures become a ``ValidationSucceeded=False``
condition rather than a rejected request.

Most of these overlap with the CRDs' CEL rules; they exist because a CRD installed from
an older release, or an object written before a rule existed, can still hold values the
current rules reject. The label and name checks reproduce
``k8s.io/apimachinery/pkg/util/validation`` word for word, so messages read as they do
from Karpenter (``name part must consist of alphanumeric characters, ...``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from karpy.apis import labels
from karpy.apis.fielderrors import ErrorType, FieldError
from karpy.base.names import is_dns1123_subdomain, is_qualified_name, is_valid_label_value

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.core import NodeSelectorRequirement, Taint

__all__ = [
    "SUPPORTED_OPERATORS",
    "is_dns1123_subdomain",
    "is_qualified_name",
    "is_valid_label_value",
    "restricted_label_error",
    "validate_label_map",
    "validate_requirement",
    "validate_taints",
]

SUPPORTED_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# Karpenter's well-known labels and restricted domains as the AWS provider extends them.
WELL_KNOWN_LABELS = labels.CORE_WELL_KNOWN_LABELS | labels.AWS_WELL_KNOWN_LABELS
RESTRICTED_LABEL_DOMAINS = (
    labels.CORE_RESTRICTED_LABEL_DOMAINS | labels.AWS_RESTRICTED_LABEL_DOMAINS
)


def _go_list(items: Iterable[str]) -> str:
    return "[" + " ".join(sorted(items)) + "]"


def restricted_label_error(key: str) -> str | None:
    """Karpenter's IsRestrictedLabel: keys in a restricted domain (and subdomains) that
    are not well-known, and ``kubernetes.io/hostname``, may not be required or set."""
    if key in WELL_KNOWN_LABELS:
        return None
    domain = labels.label_domain(key)
    restricted = (
        any(domain == d or domain.endswith("." + d) for d in RESTRICTED_LABEL_DOMAINS)
        or key in labels.RESTRICTED_LABELS
    )
    if not restricted:
        return None
    return (
        f"using label {key} is not allowed as it might interfere with the internal "
        f"provisioning logic; specify a well known label: {_go_list(WELL_KNOWN_LABELS)}, "
        f"or a custom label that does not use a restricted domain: "
        f"{_go_list(RESTRICTED_LABEL_DOMAINS)}"
    )


def validate_label_map(values: Mapping[str, str], path: str) -> list[FieldError]:
    """A NodePool template's labels: valid keys and values, not restricted."""
    errors: list[FieldError] = []
    for key, value in values.items():
        if key == labels.LABEL_NODEPOOL:
            errors.append(FieldError.invalid(path, key, "restricted"))
        errors.extend(FieldError.invalid(path, key, m) for m in is_qualified_name(key))
        errors.extend(FieldError.invalid(path, value, m) for m in is_valid_label_value(value))
        restricted = restricted_label_error(key)
        if restricted is not None:
            errors.append(FieldError.invalid(path, key, restricted))
    return errors


def validate_requirement(
    requirement: NodeSelectorRequirement, path: str, *, values_required_for_not_in: bool = False
) -> list[FieldError]:
    """Karpenter's ValidateRequirement, one field error per problem found."""
    errors: list[FieldError] = []
    key = labels.normalize_label(requirement.key)
    operator = requirement.operator
    if operator not in SUPPORTED_OPERATORS:
        errors.append(
            FieldError.not_supported(f"{path}.operator", operator, list(SUPPORTED_OPERATORS))
        )
    restricted = restricted_label_error(key)
    if restricted is not None:
        errors.append(FieldError.invalid(f"{path}.key", requirement.key, restricted))
    well_known = _well_known_values_error(requirement, key)
    if well_known is not None:
        errors.append(FieldError.invalid(f"{path}.values", list(requirement.values), well_known))
    errors.extend(
        FieldError.invalid(
            f"{path}.key", requirement.key, f"key {key} is not a qualified name, {m}"
        )
        for m in is_qualified_name(key)
    )
    for index, value in enumerate(requirement.values):
        errors.extend(
            FieldError.invalid(
                f"{path}.values[{index}]", value, f"invalid value {value} for key {key}, {m}"
            )
            for m in is_valid_label_value(value)
        )
    values = requirement.values
    if operator == "In" and not values:
        errors.append(
            FieldError.required(
                f"{path}.values", f"key {key} with operator {operator} must have a value defined"
            )
        )
    if values_required_for_not_in and operator == "NotIn" and not values:
        errors.append(
            FieldError.required(
                f"{path}.values", f"key {key} with operator {operator} must have a value defined"
            )
        )
    if (
        operator == "In"
        and requirement.min_values is not None
        and len(values) < requirement.min_values
    ):
        errors.append(
            FieldError.invalid(
                f"{path}.values",
                list(values),
                f"key {key} with operator {operator} must have at least minimum number of values "
                "defined in 'values' field",
            )
        )
    if operator in ("Gt", "Lt", "Gte", "Lte") and not (
        len(values) == 1 and _non_negative_int(values[0])
    ):
        errors.append(
            FieldError.invalid(
                f"{path}.values",
                list(values),
                f"key {key} with operator {operator} must have a single positive integer value",
            )
        )
    return errors


def _non_negative_int(text: str) -> bool:
    """Go's strconv.Atoi accepts an optional sign and decimal digits."""
    return re.fullmatch(r"[+-]?[0-9]+", text) is not None and int(text) >= 0


def _well_known_values_error(requirement: NodeSelectorRequirement, key: str) -> str | None:
    """Keys with a closed set of values (capacity type, tenancy) need a valid one."""
    if key not in WELL_KNOWN_LABELS or requirement.operator != "In":
        return None
    known = labels.WELL_KNOWN_VALUES.get(key)
    if known is None:
        return None
    valid = [v for v in requirement.values if v in known]
    invalid = [v for v in requirement.values if v not in known]
    if not valid:
        return (
            f"no valid values found in {_go_list_unsorted(requirement.values)} for {key}, "
            f"expected one of: {_go_list(known)}, got: {_go_list_unsorted(invalid)}"
        )
    if requirement.min_values is not None and len(valid) < requirement.min_values:
        return (
            f"not enough valid values found in {_go_list_unsorted(requirement.values)} for "
            f"{key}, expected at least {requirement.min_values} valid values from: "
            f"{_go_list(known)}, got: {len(valid)}"
        )
    return None


def _go_list_unsorted(items: Sequence[str]) -> str:
    return "[" + " ".join(items) + "]"


def validate_taints(
    groups: Sequence[tuple[str, Sequence[Taint]]],
) -> list[FieldError]:
    """Taint keys, values and effects, and no key/effect pair twice across all groups
    (a NodePool's ``taints`` and ``startupTaints`` share one namespace)."""
    errors: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for path, taints in groups:
        for index, taint in enumerate(taints):
            at = f"{path}[{index}]"
            errors.extend(
                FieldError.invalid(f"{at}.key", taint.key, m) for m in is_qualified_name(taint.key)
            )
            if taint.value:
                errors.extend(
                    FieldError.invalid(f"{at}.value", taint.value, m)
                    for m in is_qualified_name(taint.value)
                )
            if taint.effect not in (*TAINT_EFFECTS, ""):
                errors.append(
                    FieldError.not_supported(f"{at}.effect", taint.effect, list(TAINT_EFFECTS))
                )
            pair = (taint.key, taint.effect)
            if pair in seen:
                errors.append(
                    FieldError(
                        at,
                        ErrorType.DUPLICATE,
                        taint.key,
                        f"duplicate taint Key/Effect pair {taint.key}={taint.effect}",
                    )
                )
            seen.add(pair)
    return errors
