"""ResourceLists (``{cpu: "4", memory: "16Gi"}``) as ``dict[str, int]`` of milli-units.

Karpenter's ``limits``, ``capacity``, ``allocatable`` and ``resources`` fields are
Kubernetes ResourceLists. karpy holds them as exact integer milli-units
(`karpy.base.quantity`), so the scheduler adds and compares plain integers, and
prints them back with the suffix a person would write (``16Gi``, ``1500m``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.core import InvalidObject
from karpy.apis.fielderrors import FieldError
from karpy.apis.openapi import QUANTITY_PATTERN
from karpy.apis.openapi_engine import child_path
from karpy.base.quantity import QuantityError, format_resource, parse_quantity

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["format_resource_list", "parse_resource_list"]


def parse_resource_list(value: Mapping[str, Any] | None, path: str) -> dict[str, int]:
    """Milli-units per resource; a quantity that does not parse raises `InvalidObject`
    with the message kube-apiserver gives for the quantity pattern."""
    if not value:
        return {}
    parsed: dict[str, int] = {}
    errors: list[FieldError] = []
    for name, quantity in value.items():
        at = child_path(path, name)
        try:
            parsed[name] = parse_quantity(quantity)
        except QuantityError:
            detail = f"{at} in body should match '{QUANTITY_PATTERN}'"
            errors.append(FieldError.invalid(at, quantity, detail))
    if errors:
        raise InvalidObject(errors)
    return parsed


def format_resource_list(resources: Mapping[str, int]) -> dict[str, str]:
    return {name: format_resource(name, milli) for name, milli in resources.items()}
