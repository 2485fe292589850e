"""Uniqueness of ``x-kubernetes-list-type: set`` and ``map`` lists.

A set may not hold the same item twice and a map-list may not hold two items with the
same map keys; each second occurrence of a value is reported once, as
``spec.values[2]: Duplicate value: "a"`` or, for a map-list,
``status.conditions[1]: Duplicate value: map[string]interface {}{"type":"Ready"}``.
Items of a map-list must be objects (or null). kube-apiserver runs this check after the
OpenAPI validation; on update it runs only when the old object passed it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import ErrorType, FieldError
from karpy.sandbox.apiserver.schema.gofmt import go_json, shown

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["validate_list_sets_and_maps"]

_UNSPECIFIED = object()


def _scalar_key(value: Any) -> Any:
    """Identity of a scalar as Go's ``map[interface{}]`` sees it (1 and 1.0 differ)."""
    return (type(value).__name__, value)


def _duplicates(items: list[Any]) -> list[int]:
    """Indices where an item is seen for the second time."""
    counts: dict[Any, int] = {}
    duplicates = []
    for index, item in enumerate(items):
        if isinstance(item, dict | list):
            key: Any = ("compound", go_json(item))
        elif item is _UNSPECIFIED:
            key = ("unspecified",)
        else:
            key = _scalar_key(item)
        seen = counts.get(key, 0)
        counts[key] = seen + 1
        if seen == 1:
            duplicates.append(index)
    return duplicates


def _validate_map_list(path: str, node: SchemaNode, items: list[Any]) -> list[FieldError]:
    for index, item in enumerate(items):
        if item is not None and not isinstance(item, dict):
            detail = "must be an object for an array of list-type map"
            return [FieldError(f"{path}[{index}]", ErrorType.INVALID, shown(item), detail)]
    if len(items) <= 1:
        return []
    keys = node.list_map_keys
    if len(keys) == 1:
        key_field = keys[0]
        values = [
            item[key_field] if isinstance(item, dict) and key_field in item else _UNSPECIFIED
            for item in items
        ]
        return [
            FieldError(
                f"{path}[{index}]",
                ErrorType.DUPLICATE,
                shown({} if values[index] is _UNSPECIFIED else {key_field: values[index]}),
            )
            for index in _duplicates(values)
        ]
    composite = [
        {k: item[k] for k in keys if k in item} if isinstance(item, dict) else {} for item in items
    ]
    return [
        FieldError(f"{path}[{index}]", ErrorType.DUPLICATE, shown(composite[index]))
        for index in _duplicates(composite)
    ]


def _walk(path: str, node: SchemaNode | None, value: Any, errors: list[FieldError]) -> None:
    if node is None or not node.has_list_types:
        return
    if isinstance(value, list):
        if node.list_type == "set" and len(value) > 1:
            errors.extend(
                FieldError(f"{path}[{index}]", ErrorType.DUPLICATE, shown(value[index]))
                for index in _duplicates(value)
            )
        elif node.list_type == "map":
            errors.extend(_validate_map_list(path, node, value))
        if node.items is not None:
            for index, item in enumerate(value):
                _walk(f"{path}[{index}]", node.items, item, errors)
    elif isinstance(value, dict):
        additional = node.additional
        for key, item in value.items():
            child = node.properties.get(key)
            if child is not None:
                _walk(f"{path}.{key}" if path else key, child, item, errors)
            elif additional is not None:
                _walk(f"{path}[{key}]", additional, item, errors)


def validate_list_sets_and_maps(root: SchemaNode, obj: Any) -> list[FieldError]:
    """Duplicate items of set and map lists anywhere in ``obj``."""
    errors: list[FieldError] = []
    _walk("", root, obj, errors)
    return errors
