"""Embedded resources (``x-kubernetes-embedded-resource: true``) inside a custom resource.

An embedded object is a Kubernetes object in its own right: it must carry ``apiVersion``
and ``kind`` (``spec.template.kind: Required value: must not be empty``), with a
parseable group/version and a kind that is a DNS-1035 label once lower-cased, and its
``metadata`` is ObjectMeta: unknown metadata fields are dropped when pruning, labels and
annotations are checked. The resource root is not handled here; its metadata is the
API server's business.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import FieldError
from karpy.base.names import is_dns1035_label, is_qualified_name, is_valid_label_value
from karpy.sandbox.apiserver.schema.gofmt import shown

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["OBJECT_META_FIELDS", "coerce_embedded_metadata", "validate_embedded_resources"]

OBJECT_META_FIELDS = frozenset(
    {
        "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
        "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
        "labels", "annotations", "ownerReferences", "finalizers", "managedFields",
    }
)  # fmt: skip


def coerce_embedded_metadata(obj: dict[str, Any]) -> None:
    """Drop the fields ObjectMeta does not have from an embedded object's metadata."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for key in [k for k in metadata if k not in OBJECT_META_FIELDS]:
            del metadata[key]


def _parse_group_version(text: str) -> str | None:
    """``schema.ParseGroupVersion``'s error text, or None when valid."""
    if text.count("/") > 1:
        return f"unexpected GroupVersion string: {text}"
    return None


def _validate_resource(path: str, obj: dict[str, Any], errors: list[FieldError]) -> None:
    errors.extend(
        FieldError.required(f"{path}.{field}", "must not be empty")
        for field in ("apiVersion", "kind")
        if field not in obj
    )
    api_version = obj.get("apiVersion")
    if "apiVersion" in obj:
        if not isinstance(api_version, str):
            errors.append(
                FieldError.invalid(f"{path}.apiVersion", shown(api_version), "must be a string")
            )
        elif not api_version:
            errors.append(FieldError.invalid(f"{path}.apiVersion", "", "must not be empty"))
        elif (problem := _parse_group_version(api_version)) is not None:
            errors.append(FieldError.invalid(f"{path}.apiVersion", api_version, problem))
    kind = obj.get("kind")
    if "kind" in obj:
        if not isinstance(kind, str):
            errors.append(FieldError.invalid(f"{path}.kind", shown(kind), "must be a string"))
        elif not kind:
            errors.append(FieldError.invalid(f"{path}.kind", "", "must not be empty"))
        elif problems := is_dns1035_label(kind.lower()):
            detail = f"may have mixed case, but should otherwise match: {problems[0]}"
            errors.append(FieldError.invalid(f"{path}.kind", kind, detail))
    metadata = obj.get("metadata")
    if metadata is None:
        return
    if not isinstance(metadata, dict):
        errors.append(FieldError.invalid(f"{path}.metadata", shown(metadata), "must be an object"))
        return
    labels = metadata.get("labels") or {}
    if not isinstance(labels, dict):
        return
    label_path = f"{path}.metadata.labels"
    for key, value in labels.items():
        if is_qualified_name(key):
            errors.append(
                FieldError.invalid(label_path, key, "name part must be a valid label key")
            )
        if not isinstance(value, str) or is_valid_label_value(value):
            errors.append(
                FieldError.invalid(label_path, shown(value), "must be a valid label value")
            )


def _walk(path: str, node: SchemaNode | None, value: Any, errors: list[FieldError]) -> None:
    if node is None or not node.has_embedded:
        return
    if isinstance(value, dict):
        if node.embedded and path:
            _validate_resource(path, value, errors)
        for key, item in value.items():
            child = node.properties.get(key)
            if child is not None:
                _walk(f"{path}.{key}" if path else key, child, item, errors)
            elif node.additional is not None:
                _walk(f"{path}[{key}]", node.additional, item, errors)
    elif isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            _walk(f"{path}[{index}]", node.items, item, errors)


def validate_embedded_resources(root: SchemaNode, obj: Any) -> list[FieldError]:
    """Violations of every embedded resource in ``obj`` (not of ``obj`` itself)."""
    errors: list[FieldError] = []
    _walk("", root, obj, errors)
    return errors
