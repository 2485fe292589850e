"""The compiled form of an ``openAPIV3Schema``: one `SchemaNode` per schema object.

A CRD's schema is walked once, when the CRD is stored. Each node keeps what the hot path
needs, already decoded: the accepted JSON types, bounds as numbers, the ``pattern`` as a
compiled (Go-semantics) regex, ``enum`` values, the children (``properties``, ``items``,
``additionalProperties``), the value-validation branches (``allOf``/``anyOf``/
``oneOf``/``not``), the Kubernetes extensions, and later the compiled CEL rules. Every
request then validates, prunes and defaults by walking this tree, never the raw dicts.

Building the tree also runs the checks kube-apiserver applies to a *structural* schema
(``type`` everywhere on the spine, no ``uniqueItems``, consistent list extensions,
patterns that compile); their failures are collected as `FieldError`s with paths such
as ``openAPIV3Schema.properties[spec].properties[weight].type``, so the caller can reject
the CRD the way a real cluster does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver.schema.gofmt import shown
from karpy.sandbox.apiserver.schema.regex import RegexError, compile_go_regex

if TYPE_CHECKING:
    import re
    from collections.abc import Mapping

    from karpy.apis.fielderrors import ErrorType
    from karpy.sandbox.apiserver.schema.cel.compiler import CompiledExpression

__all__ = ["JSON_TYPES", "CompiledRule", "SchemaNode", "build_tree"]

JSON_TYPES = ("array", "boolean", "integer", "number", "object", "string")
_LIST_TYPES = ("atomic", "map", "set")
_MAP_TYPES = ("atomic", "granular")
_NO_DEFAULT = object()


@attrs.frozen(slots=True)
class CompiledRule:
    """One compiled ``x-kubernetes-validations`` entry."""

    rule: str
    program: CompiledExpression
    message: str
    message_expression: CompiledExpression | None
    reason: ErrorType | None
    field_path: str
    optional_old_self: bool

    @property
    def uses_old_self(self) -> bool:
        return self.program.uses_old_self

    @property
    def error_text(self) -> str:
        """How upstream names the rule in errors: its message, else its expression."""
        return self.message or self.rule.strip()


@attrs.define(slots=True, eq=False)
class SchemaNode:
    """One schema object, decoded. Filled in once by `build_tree` (and the rule compiler
    for `rules`); read-only afterwards."""

    path: str
    type: str = ""
    types: tuple[str, ...] = ()
    format: str = ""
    nullable: bool = False
    default: Any = _NO_DEFAULT
    enum: tuple[Any, ...] | None = None
    properties: dict[str, SchemaNode] = attrs.Factory(dict)
    required: tuple[str, ...] = ()
    additional: SchemaNode | None = None
    additional_allowed: bool | None = None
    items: SchemaNode | None = None
    max_length: int | None = None
    min_length: int | None = None
    pattern: str = ""
    pattern_re: re.Pattern[str] | None = None
    max_items: int | None = None
    min_items: int | None = None
    unique_items: bool = False
    max_properties: int | None = None
    min_properties: int | None = None
    maximum: float | None = None
    exclusive_maximum: bool = False
    minimum: float | None = None
    exclusive_minimum: bool = False
    multiple_of: float | None = None
    all_of: tuple[SchemaNode, ...] = ()
    any_of: tuple[SchemaNode, ...] = ()
    one_of: tuple[SchemaNode, ...] = ()
    not_: SchemaNode | None = None
    preserve_unknown: bool = False
    embedded: bool = False
    int_or_string: bool = False
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    map_type: str | None = None
    raw_rules: tuple[Mapping[str, Any], ...] = ()
    rules: tuple[CompiledRule, ...] = ()
    # True when the subtree holds CEL rules (lets validation skip rule-free branches).
    has_rules: bool = False
    # True when the subtree holds defaults (lets defaulting skip default-free branches).
    has_defaults: bool = False
    # True when the subtree holds an embedded resource or a set/map list, which have
    # checks of their own.
    has_embedded: bool = False
    has_list_types: bool = False
    # True when values in the subtree are already what CEL sees (no date-time, duration
    # or byte strings, no numbers, no set/map lists), so rules can use them as they are.
    cel_plain: bool = True

    @property
    def has_default(self) -> bool:
        return self.default is not _NO_DEFAULT

    def child(self, key: str) -> SchemaNode | None:
        """The schema of property or map entry ``key`` (None if undeclared)."""
        node = self.properties.get(key)
        if node is not None:
            return node
        return self.additional


class _Builder:
    def __init__(self) -> None:
        self.errors: list[FieldError] = []

    def number(self, raw: Mapping[str, Any], key: str, path: str, *, integer: bool = False) -> Any:
        """A numeric keyword (None if absent); a non-number is an error on the keyword."""
        value = raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.errors.append(FieldError.invalid(f"{path}.{key}", value, "must be a number"))
            return None
        if integer:
            if isinstance(value, float) and not value.is_integer():
                self.errors.append(FieldError.invalid(f"{path}.{key}", value, "must be an integer"))
                return None
            return int(value)
        return value

    def listed(self, raw: Mapping[str, Any], key: str, path: str, kind: type) -> tuple[Any, ...]:
        """A list-valued keyword whose entries must be of ``kind`` (bad entries dropped)."""
        value = raw.get(key)
        if value is None:
            return ()
        if not isinstance(value, list):
            self.errors.append(FieldError.invalid(f"{path}.{key}", shown(value), "must be a list"))
            return ()
        good = []
        for index, entry in enumerate(value):
            if isinstance(entry, kind):
                good.append(entry)
            else:
                detail = "must be an object" if kind is dict else f"must be a {kind.__name__}"
                self.errors.append(
                    FieldError.invalid(f"{path}.{key}[{index}]", shown(entry), detail)
                )
        return tuple(good)

    def build(self, raw: Mapping[str, Any], path: str, *, spine: bool, what: str) -> SchemaNode:
        node = SchemaNode(path)
        if not isinstance(raw, dict):
            self.errors.append(FieldError.invalid(path, shown(raw), "must be a schema object"))
            return node
        node.type = str(raw.get("type") or "")
        node.format = str(raw.get("format") or "")
        node.nullable = bool(raw.get("nullable", False))
        if raw.get("default") is not None:
            node.default = raw["default"]
        if raw.get("enum") is not None:
            node.enum = self.listed(raw, "enum", path, object)
        node.required = self.listed(raw, "required", path, str)
        node.max_length = self.number(raw, "maxLength", path, integer=True)
        node.min_length = self.number(raw, "minLength", path, integer=True)
        node.max_items = self.number(raw, "maxItems", path, integer=True)
        node.min_items = self.number(raw, "minItems", path, integer=True)
        node.max_properties = self.number(raw, "maxProperties", path, integer=True)
        node.min_properties = self.number(raw, "minProperties", path, integer=True)
        node.maximum = self.number(raw, "maximum", path)
        node.minimum = self.number(raw, "minimum", path)
        node.exclusive_maximum = bool(raw.get("exclusiveMaximum", False))
        node.exclusive_minimum = bool(raw.get("exclusiveMinimum", False))
        node.multiple_of = self.number(raw, "multipleOf", path)
        node.unique_items = bool(raw.get("uniqueItems", False))
        node.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields", False))
        node.embedded = bool(raw.get("x-kubernetes-embedded-resource", False))
        node.int_or_string = bool(raw.get("x-kubernetes-int-or-string", False))
        node.list_type = raw.get("x-kubernetes-list-type")
        node.list_map_keys = self.listed(raw, "x-kubernetes-list-map-keys", path, str)
        node.map_type = raw.get("x-kubernetes-map-type")
        node.raw_rules = self.listed(raw, "x-kubernetes-validations", path, dict)
        node.types = (
            ("integer", "string") if node.int_or_string else ((node.type,) if node.type else ())
        )
        pattern = raw.get("pattern")
        if pattern:
            node.pattern = str(pattern)
            try:
                node.pattern_re = compile_go_regex(node.pattern)
            except RegexError as err:
                self.errors.append(
                    FieldError.invalid(
                        f"{path}.pattern",
                        node.pattern,
                        f"must be a valid regular expression, but isn't: {err}",
                    )
                )

        properties = raw.get("properties") or {}
        if not isinstance(properties, dict):
            self.errors.append(
                FieldError.invalid(f"{path}.properties", shown(properties), "must be an object")
            )
            properties = {}
        for name, child in properties.items():
            node.properties[name] = self.build(
                child, f"{path}.properties[{name}]", spine=spine, what="object fields"
            )
        items = raw.get("items")
        if isinstance(items, dict):
            node.items = self.build(items, f"{path}.items", spine=spine, what="array items")
        elif items is not None:
            self.errors.append(
                FieldError.forbidden(
                    f"{path}.items", "items must be a schema object and not an array"
                )
            )
        additional = raw.get("additionalProperties")
        if isinstance(additional, dict):
            node.additional = self.build(
                additional, f"{path}.additionalProperties", spine=spine, what="object fields"
            )
        elif isinstance(additional, bool):
            node.additional_allowed = additional
        for keyword in ("allOf", "anyOf", "oneOf"):
            branches = tuple(
                self.build(b, f"{path}.{keyword}[{i}]", spine=False, what="")
                for i, b in enumerate(self.listed(raw, keyword, path, dict))
            )
            setattr(
                node, {"allOf": "all_of", "anyOf": "any_of", "oneOf": "one_of"}[keyword], branches
            )
        if raw.get("not") is not None:
            node.not_ = self.build(raw["not"], f"{path}.not", spine=False, what="")

        if spine:
            self.check_structural(node, raw, what)
        children = [c for c in (*node.properties.values(), node.items, node.additional) if c]
        node.has_defaults = node.has_default or any(c.has_defaults for c in children)
        node.has_embedded = node.embedded or any(c.has_embedded for c in children)
        node.has_list_types = node.list_type in ("set", "map") or any(
            c.has_list_types for c in children
        )
        node.cel_plain = (
            node.format not in ("date-time", "date", "duration", "byte")
            and node.type != "number"
            and node.list_type not in ("set", "map")
            and all(c.cel_plain for c in children)
        )
        return node

    def check_structural(self, node: SchemaNode, raw: Mapping[str, Any], what: str) -> None:
        path = node.path
        errors = self.errors
        if node.type and node.type not in JSON_TYPES:
            errors.append(FieldError.not_supported(f"{path}.type", node.type, list(JSON_TYPES)))
        if node.int_or_string and node.type:
            errors.append(
                FieldError.invalid(
                    f"{path}.type", node.type, "must be empty if x-kubernetes-int-or-string is true"
                )
            )
        if not node.type and not node.int_or_string and not node.preserve_unknown:
            detail = f"must not be empty for specified {what}" if what else "must not be empty"
            errors.append(FieldError.required(f"{path}.type", detail))
        if node.unique_items:
            errors.append(
                FieldError.forbidden(
                    f"{path}.uniqueItems",
                    "uniqueItems cannot be set to true since the runtime complexity "
                    "becomes quadratic",
                )
            )
        if node.properties and (node.additional is not None or node.additional_allowed is False):
            errors.append(
                FieldError.forbidden(
                    f"{path}.additionalProperties",
                    "additionalProperties and properties are mutual exclusive",
                )
            )
        if node.type == "array" and node.items is None:
            errors.append(FieldError.required(f"{path}.items", "must be specified for type array"))
        if node.embedded and node.type != "object":
            errors.append(
                FieldError.invalid(
                    f"{path}.type",
                    node.type,
                    "must be object if x-kubernetes-embedded-resource is true",
                )
            )
        self.check_list_extensions(node)
        if node.map_type is not None:
            if node.map_type not in _MAP_TYPES:
                errors.append(
                    FieldError.not_supported(
                        f"{path}.x-kubernetes-map-type", node.map_type, list(_MAP_TYPES)
                    )
                )
            elif node.type != "object":
                errors.append(
                    FieldError.invalid(
                        f"{path}.type",
                        node.type,
                        "must be object if x-kubernetes-map-type is specified",
                    )
                )

    def check_list_extensions(self, node: SchemaNode) -> None:
        path = node.path
        errors = self.errors
        if node.list_type is None:
            if node.list_map_keys:
                errors.append(
                    FieldError.forbidden(
                        f"{path}.x-kubernetes-list-map-keys",
                        "must not be set if x-kubernetes-list-type is not map",
                    )
                )
            return
        if node.list_type not in _LIST_TYPES:
            errors.append(
                FieldError.not_supported(
                    f"{path}.x-kubernetes-list-type", node.list_type, list(_LIST_TYPES)
                )
            )
            return
        if node.type != "array":
            errors.append(
                FieldError.invalid(
                    f"{path}.type",
                    node.type,
                    "must be array if x-kubernetes-list-type is specified",
                )
            )
            return
        items = node.items
        if node.list_type == "set" and items is not None:
            if items.type == "object" and items.map_type != "atomic":
                errors.append(
                    FieldError.invalid(
                        f"{path}.items.x-kubernetes-map-type",
                        items.map_type or "",
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
            if items.type == "array" and items.list_type != "atomic":
                errors.append(
                    FieldError.invalid(
                        f"{path}.items.x-kubernetes-list-type",
                        items.list_type or "",
                        "must be atomic as item of a list with x-kubernetes-list-type=set",
                    )
                )
        if node.list_type != "map":
            if node.list_map_keys:
                errors.append(
                    FieldError.forbidden(
                        f"{path}.x-kubernetes-list-map-keys",
                        "must not be set if x-kubernetes-list-type is not map",
                    )
                )
            return
        if not node.list_map_keys:
            errors.append(
                FieldError.required(
                    f"{path}.x-kubernetes-list-map-keys",
                    "must not be empty if x-kubernetes-list-type is map",
                )
            )
        if items is None or items.type != "object":
            errors.append(
                FieldError.invalid(
                    f"{path}.items.type",
                    items.type if items else "",
                    "must be object if parent array's x-kubernetes-list-type is map",
                )
            )
            return
        for key in node.list_map_keys:
            key_node = items.properties.get(key)
            if key_node is None:
                errors.append(
                    FieldError.invalid(
                        f"{path}.x-kubernetes-list-map-keys",
                        list(node.list_map_keys),
                        "entries must all be names of item properties",
                    )
                )
                continue
            if (
                key_node.type not in ("string", "integer", "number", "boolean")
                and not key_node.int_or_string
            ):
                errors.append(
                    FieldError.invalid(
                        f"{path}.items.properties[{key}].type",
                        key_node.type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    )
                )
            if key not in items.required and not key_node.has_default:
                errors.append(
                    FieldError.required(
                        f"{path}.items.properties[{key}]",
                        "all map keys must be required or have a default value",
                    )
                )


def build_tree(openapi_v3_schema: Mapping[str, Any]) -> tuple[SchemaNode, list[FieldError]]:
    """The compiled tree of ``openapi_v3_schema`` and the structural-schema violations
    found on the way (empty when the CRD is acceptable so far)."""
    builder = _Builder()
    root = builder.build(openapi_v3_schema, "openAPIV3Schema", spine=True, what="")
    if root.type and root.type != "object":
        builder.errors.append(
            FieldError.invalid("openAPIV3Schema.type", root.type, "must be object at the root")
        )
    return root, builder.errors
