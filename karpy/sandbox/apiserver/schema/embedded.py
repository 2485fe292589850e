"""Embedded resources (``x-kubernetes-embedded-resource: true``) inside a custom resource.

An embedded object is a Kubernetes object in its own right: it must carry ``apiVersion``
and ``kind`` (``spec.template.kind: Required value: must not be empty``), with a
parseable group/version and a kind that is a DNS-1035 label once lower-cased, and its
``metadata`` is ObjectMeta: unknown metadata fields are dropped when pruning, labels and
annotations are checked. The resource root is not handled here; its metadata is the
API server's business.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import FieldError
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
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?\Z")
_DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")


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


def _label_key_errors(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return True
    return not name or len(name) > 63 or not _QUALIFIED_NAME.match(name)


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
        elif len(kind) > 63 or not _DNS1035.match(kind.lower()):
            problem = "must be no more than 63 characters" if len(kind) > 63 else _DNS1035_MESSAGE
            detail = f"may have mixed case, but should otherwise match: {problem}"
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
        if _label_key_errors(key):
            errors.append(
                FieldError.invalid(label_path, key, "name part must be a valid label key")
            )
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE.match(value):
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
