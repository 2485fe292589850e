"""OpenAPI v3 schemas for karpy's custom resources, written once in Python.

Each kind describes its wire format with the small constructors below (`string`,
`integer`, `obj`, `array`, `string_map`, ...). That one description serves three
purposes, so the CRDs that a cluster installs and the rules karpy enforces cannot drift
apart:

- `Schema.to_openapi` renders the ``openAPIV3Schema`` of the CRDs in ``deploy/crds/``
  (see `karpy.apis.crdgen`);
- `apply_defaults` fills in ``default`` values as kube-apiserver does when an object is
  created (a default is applied where a field is absent, then defaulted itself);
- `validate` checks a plain dict against the schema and its CEL rules, and reports
  problems with the paths and the wording kube-apiserver uses.

CEL rules (``x-kubernetes-validations``) cannot be evaluated without a CEL engine, so each
`Rule` carries the CEL text that goes into the CRD *and* a Python predicate with the same
meaning; ``tests/apis/test_cel_twins.py`` evaluates both on the same values to keep them
equal. A predicate sees exactly what CEL's ``self`` would: the JSON value at that node
(dicts, lists, strings, ints), with ``has(x.f)`` spelled ``"f" in x``.

As in kube-apiserver, CEL rules are only evaluated when the OpenAPI part found no type,
enum, required, length or size error anywhere in the object (the rules may assume the
shape those guarantee); the response then carries one extra ``<nil>`` error saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = [
    "NO_DEFAULT",
    "QUANTITY_PATTERN",
    "Rule",
    "Schema",
    "array",
    "boolean",
    "integer",
    "obj",
    "quantity",
    "quantity_map",
    "string",
    "string_map",
]


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Any = _NoDefault()

# Kubernetes' resource.Quantity, as controller-gen writes it for int-or-string quantities.
QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
    r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)


@attrs.frozen(slots=True)
class Rule:
    """One ``x-kubernetes-validations`` entry and its Python twin.

    ``check(self_value)`` returns True when the value is valid. Transition rules (those
    mentioning ``oldSelf``) take ``check(self_value, old_value)`` and are only evaluated
    on update, when the node existed before.
    """

    rule: str
    message: str
    check: Callable[..., bool] = attrs.field(eq=False, repr=False)

    @property
    def transition(self) -> bool:
        return "oldSelf" in self.rule

    def to_openapi(self) -> dict[str, str]:
        return {"message": self.message, "rule": self.rule}


@attrs.frozen(slots=True)
class Schema:
    """A node of a structural OpenAPI v3 schema (the subset CRDs use)."""

    type: str | None
    description: str = ""
    properties: Mapping[str, Schema] = attrs.field(factory=dict)
    required: tuple[str, ...] = ()
    items: Schema | None = None
    additional_properties: Schema | None = None
    enum: tuple[Any, ...] = ()
    pattern: str | None = None
    format: str | None = None
    minimum: int | None = None
    maximum: int | None = None
    min_length: int | None = None
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    max_properties: int | None = None
    default: Any = NO_DEFAULT
    rules: tuple[Rule, ...] = ()
    list_type: str | None = None
    list_map_keys: tuple[str, ...] = ()
    map_type: str | None = None
    int_or_string: bool = False

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT

    def to_openapi(self) -> dict[str, Any]:
        """The JSON form that goes under ``openAPIV3Schema`` in a CRD."""
        out: dict[str, Any] = {}
        if self.description:
            out["description"] = self.description
        if self.int_or_string:
            out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
            out["x-kubernetes-int-or-string"] = True
        elif self.type is not None:
            out["type"] = self.type
        if self.properties:
            out["properties"] = {k: v.to_openapi() for k, v in self.properties.items()}
        if self.required:
            out["required"] = list(self.required)
        if self.items is not None:
            out["items"] = self.items.to_openapi()
        if self.additional_properties is not None:
            out["additionalProperties"] = self.additional_properties.to_openapi()
        scalars = {
            "enum": list(self.enum) if self.enum else None,
            "pattern": self.pattern,
            "format": self.format,
            "minimum": self.minimum,
            "maximum": self.maximum,
            "minLength": self.min_length,
            "maxLength": self.max_length,
            "minItems": self.min_items,
            "maxItems": self.max_items,
            "maxProperties": self.max_properties,
            "x-kubernetes-list-type": self.list_type,
            "x-kubernetes-list-map-keys": list(self.list_map_keys) or None,
            "x-kubernetes-map-type": self.map_type,
        }
        out.update({k: v for k, v in scalars.items() if v is not None})
        if self.default is not NO_DEFAULT:
            out["default"] = self.default
        if self.rules:
            out["x-kubernetes-validations"] = [r.to_openapi() for r in self.rules]
        return out


# --- constructors -------------------------------------------------------------------------


def string(
    description: str = "",
    *,
    pattern: str | None = None,
    enum: tuple[str, ...] = (),
    min_length: int | None = None,
    max_length: int | None = None,
    format: str | None = None,
    default: Any = NO_DEFAULT,
    rules: tuple[Rule, ...] = (),
) -> Schema:
    return Schema(
        "string",
        description,
        pattern=pattern,
        enum=enum,
        min_length=min_length,
        max_length=max_length,
        format=format,
        default=default,
        rules=rules,
    )


def integer(
    description: str = "",
    *,
    format: str | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
    default: Any = NO_DEFAULT,
) -> Schema:
    return Schema(
        "integer", description, format=format, minimum=minimum, maximum=maximum, default=default
    )


def boolean(description: str = "", *, default: Any = NO_DEFAULT) -> Schema:
    return Schema("boolean", description, default=default)


def obj(
    description: str = "",
    properties: Mapping[str, Schema] | None = None,
    *,
    required: tuple[str, ...] = (),
    default: Any = NO_DEFAULT,
    rules: tuple[Rule, ...] = (),
) -> Schema:
    return Schema(
        "object",
        description,
        properties=dict(properties or {}),
        required=required,
        default=default,
        rules=rules,
    )


def kind_schema(
    description: str, spec: Schema, status: Schema, *, required: tuple[str, ...] = ()
) -> Schema:
    """The top of a kind's schema: the type meta, metadata, ``spec`` and ``status``."""
    return obj(
        description,
        {
            "apiVersion": string("The versioned schema of this object."),
            "kind": string("The REST resource this object represents."),
            "metadata": Schema("object"),
            "spec": spec,
            "status": status,
        },
        required=required,
    )


def array(
    items: Schema,
    description: str = "",
    *,
    min_items: int | None = None,
    max_items: int | None = None,
    list_type: str | None = None,
    list_map_keys: tuple[str, ...] = (),
    default: Any = NO_DEFAULT,
    rules: tuple[Rule, ...] = (),
    pattern: str | None = None,
    max_length: int | None = None,
) -> Schema:
    """An array. ``pattern``/``max_length`` exist only to reproduce Karpenter's CRDs,
    which put them on arrays where kube-apiserver (rightly) ignores them."""
    return Schema(
        "array",
        description,
        items=items,
        min_items=min_items,
        max_items=max_items,
        list_type=list_type,
        list_map_keys=list_map_keys,
        default=default,
        rules=rules,
        pattern=pattern,
        max_length=max_length,
    )


def string_map(
    values: Schema | None = None,
    description: str = "",
    *,
    max_properties: int | None = None,
    map_type: str | None = None,
    rules: tuple[Rule, ...] = (),
) -> Schema:
    """An object used as a map from strings to ``values`` (strings by default)."""
    return Schema(
        "object",
        description,
        additional_properties=values if values is not None else Schema("string"),
        max_properties=max_properties,
        map_type=map_type,
        rules=rules,
    )


def quantity(description: str = "") -> Schema:
    """A Kubernetes quantity: an integer or a string such as ``"1500m"`` or ``"4Gi"``."""
    return Schema(None, description, pattern=QUANTITY_PATTERN, int_or_string=True)


def quantity_map(description: str = "", *, rules: tuple[Rule, ...] = ()) -> Schema:
    """A ResourceList: resource name to quantity."""
    return string_map(quantity(), description, rules=rules)
