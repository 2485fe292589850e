"""Pruning: dropping what a structural schema does not declare, as the apiextensions
server does when it decodes a custom resource.

Fields absent from ``properties`` are removed, except below
``x-kubernetes-preserve-unknown-fields: true`` (where declared properties are still
pruned inside) or where ``additionalProperties`` gives every key a schema. At the root of
the resource, and of any ``x-kubernetes-embedded-resource``, ``apiVersion``, ``kind`` and
``metadata`` are kept whatever the schema says (``metadata`` is ObjectMeta, coerced and
validated on its own). ``additionalProperties: true`` without a schema keeps the keys
but, as upstream, prunes the content of nested objects.

Then non-nullable nulls are removed where the schema has no default for them (a
non-nullable null *with* a default is left for defaulting to replace), exactly as
``PruneNonNullableNullsWithoutDefaults`` does after pruning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.schema.embedded import coerce_embedded_metadata

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["prune", "prune_non_nullable_nulls"]

_META_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def _prune(value: Any, node: SchemaNode | None, resource_root: bool) -> None:
    if node is not None and node.preserve_unknown:
        _prune_declared(value, node, resource_root or node.embedded)
        return
    if isinstance(value, dict):
        if node is None:
            value.clear()
            return
        keep_meta = resource_root or node.embedded
        if node.embedded:
            coerce_embedded_metadata(value)
        properties = node.properties
        additional = node.additional
        for key in list(value):
            if keep_meta and key in _META_FIELDS:
                continue
            child = properties.get(key)
            if child is not None:
                _prune(value[key], child, child.embedded)
            elif additional is not None:
                _prune(value[key], additional, additional.embedded)
            elif node.additional_allowed:
                _prune(value[key], None, False)
            else:
                del value[key]
    elif isinstance(value, list):
        items = node.items if node is not None else None
        for item in value:
            _prune(item, items, items.embedded if items is not None else False)


def _prune_declared(value: Any, node: SchemaNode, resource_root: bool) -> None:
    """Below preserve-unknown-fields: keep unknown keys, prune inside declared ones."""
    if isinstance(value, dict):
        if node.embedded:
            coerce_embedded_metadata(value)
        properties = node.properties
        additional = node.additional
        for key, item in value.items():
            if resource_root and key in _META_FIELDS:
                continue
            child = properties.get(key)
            if child is not None:
                _prune(item, child, child.embedded)
            elif additional is not None:
                _prune(item, additional, additional.embedded)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            _prune_declared(item, node.items, node.items.embedded)


def prune(obj: dict[str, Any], root: SchemaNode) -> None:
    """Remove undeclared fields from a whole custom resource, in place."""
    _prune(obj, root, True)


def prune_non_nullable_nulls(value: Any, node: SchemaNode | None) -> None:
    """Remove nulls the schema neither allows (``nullable``) nor defaults, in place."""
    if node is None:
        return
    if isinstance(value, dict):
        for key in list(value):
            child = node.child(key)
            item = value[key]
            if item is None:
                if child is not None and not child.nullable and not child.has_default:
                    del value[key]
            elif child is not None:
                prune_non_nullable_nulls(item, child)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            prune_non_nullable_nulls(item, node.items)
