"""Defaulting: filling in schema ``default`` values, as the apiextensions server does.

At each object, every declared property that is absent (or a null the schema does not
allow) gets a deep copy of its default; then every present field is defaulted in turn,
so defaults apply inside defaulted objects, list items and map values too. A null list
item or map value that is not nullable takes the item's default. Nullable nulls are
kept. The walk skips subtrees whose schema holds no defaults.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["apply_defaults"]


def apply_defaults(value: Any, node: SchemaNode | None) -> None:
    """Default ``value`` in place according to ``node``."""
    if node is None or not node.has_defaults:
        return
    if isinstance(value, dict):
        for key, child in node.properties.items():
            if not child.has_default:
                continue
            if key not in value or (value[key] is None and not child.nullable):
                value[key] = copy.deepcopy(child.default)
        additional = node.additional
        for key in value:
            declared = node.properties.get(key)
            if declared is not None:
                apply_defaults(value[key], declared)
            elif additional is not None:
                if value[key] is None and not additional.nullable and additional.has_default:
                    value[key] = copy.deepcopy(additional.default)
                apply_defaults(value[key], additional)
    elif isinstance(value, list):
        items = node.items
        if items is None:
            return
        for index in range(len(value)):
            if value[index] is None and not items.nullable and items.has_default:
                value[index] = copy.deepcopy(items.default)
            apply_defaults(value[index], items)
