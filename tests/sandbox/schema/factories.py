"""Small builders for schema tests: a custom resource schema around a ``spec`` schema,
objects of that kind, and validation results as the rendered lines a user would read."""

from __future__ import annotations

import copy
from typing import Any

from karpy.sandbox.apiserver.schema import CompiledSchema, compile_schema

_NO_OLD = object()


def resource_schema(spec: dict[str, Any], **more: dict[str, Any]) -> dict[str, Any]:
    """An ``openAPIV3Schema`` with ``apiVersion``, ``kind``, ``metadata`` and ``spec``."""
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            **more,
        },
    }


def obj(**properties: dict[str, Any]) -> dict[str, Any]:
    """An object schema with these properties."""
    return {"type": "object", "properties": properties}


def widget_schema(spec: dict[str, Any], **more: dict[str, Any]) -> CompiledSchema:
    return compile_schema(resource_schema(spec, **more))


def widget(spec: Any = None, **fields: Any) -> dict[str, Any]:
    """A custom resource of the test kind."""
    found: dict[str, Any] = {
        "apiVersion": "test.karpy.dev/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
    }
    if spec is not None:
        found["spec"] = copy.deepcopy(spec)
    found.update(copy.deepcopy(fields))
    return found


def errors(schema: CompiledSchema, spec: Any, old_spec: Any = _NO_OLD) -> list[str]:
    """``validate`` of a widget with ``spec`` (an update from ``old_spec`` if given), rendered."""
    old = widget(old_spec) if old_spec is not _NO_OLD else None
    return [e.render() for e in schema.validate(widget(spec), old)]


def admitted(schema: CompiledSchema, spec: Any) -> dict[str, Any]:
    """The widget as stored after decoding: pruned, then defaulted."""
    found = widget(spec)
    schema.prune(found)
    schema.apply_defaults(found)
    return found
