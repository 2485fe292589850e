"""OpenAPI v3 value validation of a custom resource, as kube-openapi's validator does it.

For each value the validator runs, in kube-openapi's order, the checks that apply to
the value's JSON kind: the type check, ``allOf``/``anyOf``/``oneOf``/``not``, string
checks (``maxLength``, then ``minLength``, then ``pattern``; the first failure wins),
``format``, number bounds, array checks (items first, then ``minItems``/``maxItems``),
``enum`` (for every value, null included), and object checks (``minProperties``/
``maxProperties`` stop the object's validation, then ``additionalProperties``,
``properties``, ``required``). A null only gets the type and enum checks.

Errors are translated to field errors as ``apiextensions-apiserver``'s
``ValidateCustomResource`` does, so the text matches a real cluster's::

    spec.weight: Invalid value: "string": spec.weight in body must be of type integer: "string"
    spec.weight: Invalid value: 500: spec.weight in body should be less than or equal to 100
    spec.operator: Unsupported value: "Maybe": supported values: "In", "NotIn"
    spec.name: Too long: may not be more than 63 bytes
    spec.items: Too many: 101: must have at most 100 items
    spec.template: Required value

On update, validation *ratchets* (the ``CRDValidationRatcheting`` behaviour, on by
default since Kubernetes 1.30): a value that is unchanged from the old object, where the
two can be correlated (object fields and map entries by key, ``list-type: map`` items by
key, lists without a list type by index; never through ``set``/``atomic`` lists), is
not validated again, so a tightened schema does not block updates to other fields.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import ErrorType, FieldError
from karpy.sandbox.apiserver.schema.formats import check_format
from karpy.sandbox.apiserver.schema.gofmt import go_float, go_json, go_quote, shown
from karpy.sandbox.apiserver.schema.ratchet import MISSING, Correlation

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["validate_openapi"]

_MAX_JSON_FLOAT = float(2**53)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def _field_path(name: str) -> str:
    """The field path of an error named ``name`` (Go prints a nil path as ``<nil>``)."""
    trimmed = name.removeprefix(".")
    return trimmed if name and name != "." else "<nil>"


def _is_json_integer(value: float) -> bool:
    """``swag.IsFloat64AJSONInteger``: integral within 1e-9 relative error."""
    if math.isnan(value) or math.isinf(value) or abs(value) > _MAX_JSON_FLOAT:
        return False
    if value.is_integer():
        return True
    nearest = float(round(value))
    difference = abs(value - nearest)
    if nearest == 0:
        return difference < 1e-9 * 5e-324
    return difference / min(abs(value) + abs(nearest), 1.7976931348623157e308) < 1e-9


def _bound_text(bound: float, value: Any) -> str:
    """How the bound prints: as an integer when checked against an integer value."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(math.trunc(bound))
    return go_float(float(bound))


class _Validator:
    def __init__(self, correlation: Correlation | None) -> None:
        self.errors: list[FieldError] = []
        self.correlation = correlation

    def invalid(self, name: str, value: Any, detail: str) -> None:
        self.errors.append(FieldError(_field_path(name), ErrorType.INVALID, shown(value), detail))

    def composite(self, detail: str) -> None:
        self.errors.append(FieldError("<nil>", ErrorType.INVALID, "", detail))

    def validate(self, node: SchemaNode, value: Any, name: str, old: Any = MISSING) -> None:
        correlation = self.correlation
        if (
            old is not MISSING
            and correlation is not None
            and correlation.unchanged(node, old, value)
        ):
            return
        if value is None:
            self.check_type(node, value, name)
            if node.enum is not None:
                self.check_enum(node, value, name)
            return
        if node.types or node.format:
            self.check_type(node, value, name)
        if node.all_of or node.any_of or node.one_of or node.not_ is not None:
            self.check_branches(node, value, name)
        if isinstance(value, str):
            self.check_string(node, value, name)
            if node.format:
                self.check_string_format(node, value, name)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self.check_number(node, value, name)
        elif isinstance(value, list):
            self.check_array(node, value, name, old)
        if node.enum is not None:
            self.check_enum(node, value, name)
        if isinstance(value, dict):
            self.check_object(node, value, name, old)

    def check_type(self, node: SchemaNode, value: Any, name: str) -> None:
        types = node.types
        if value is None:
            if types and "null" not in types and not node.nullable:
                self.type_error(name, ",".join(types), "null")
            return
        kind = _json_kind(value)
        data_format = "int64" if kind == "integer" else "float64" if kind == "number" else ""
        float_int = kind == "number" and "integer" in types and _is_json_integer(value)
        int_float = kind == "integer" and "number" in types
        fmt = node.format
        if kind not in ("string", "array") and fmt:
            lower_int = fmt == "int64" and data_format == "int32"
            if not (kind in types or data_format == fmt or float_int or int_float or lower_int):
                self.type_error(name, fmt, data_format)
                return
        if fmt and "number" not in types and "integer" not in types and kind in ("string", "array"):
            return
        if not (kind in types or float_int or int_float):
            self.type_error(name, ",".join(types), kind)

    def type_error(self, name: str, expected: str, actual: str) -> None:
        detail = f"{name} in body must be of type {expected}: {go_quote(actual)}"
        self.errors.append(FieldError(_field_path(name), ErrorType.TYPE_INVALID, actual, detail))

    def check_string(self, node: SchemaNode, value: str, name: str) -> None:
        if node.max_length is not None and len(value) > node.max_length:
            unit = "byte" if node.max_length == 1 else "bytes"
            detail = f"may not be more than {node.max_length} {unit}"
            self.errors.append(FieldError(_field_path(name), ErrorType.TOO_LONG, detail=detail))
            return
        if node.min_length is not None and len(value) < node.min_length:
            self.invalid(
                name, value, f"{name} in body should be at least {node.min_length} chars long"
            )
            return
        if node.pattern_re is not None and node.pattern_re.search(value) is None:
            self.invalid(name, value, f"{name} in body should match '{node.pattern}'")

    def check_string_format(self, node: SchemaNode, value: str, name: str) -> None:
        if not check_format(node.format, value):
            detail = f"{name} in body must be of type {node.format}: {go_quote(value)}"
            self.errors.append(
                FieldError(_field_path(name), ErrorType.TYPE_INVALID, shown(value), detail)
            )

    def check_number(self, node: SchemaNode, value: float, name: str) -> None:
        factor = node.multiple_of
        if factor is not None:
            self.check_multiple_of(factor, value, name)
        if node.minimum is not None:
            bound = node.minimum
            limit = math.trunc(bound) if isinstance(value, int) else bound
            below = value <= limit if node.exclusive_minimum else value < limit
            if below:
                relation = "greater than" if node.exclusive_minimum else "greater than or equal to"
                self.invalid(
                    name, value, f"{name} in body should be {relation} {_bound_text(bound, value)}"
                )
        if node.maximum is not None:
            bound = node.maximum
            limit = math.trunc(bound) if isinstance(value, int) else bound
            above = value >= limit if node.exclusive_maximum else value > limit
            if above:
                relation = "less than" if node.exclusive_maximum else "less than or equal to"
                self.invalid(
                    name, value, f"{name} in body should be {relation} {_bound_text(bound, value)}"
                )

    def check_multiple_of(self, factor: float, value: float, name: str) -> None:
        if factor < 0:
            shown_factor = _bound_text(factor, value)
            self.invalid(
                name,
                factor,
                f"factor MultipleOf declared for {name} must be positive: {shown_factor}",
            )
            return
        if isinstance(value, int) and math.trunc(factor) != 0:
            whole = math.trunc(factor)
            if value % whole != 0:
                self.invalid(name, value, f"{name} in body should be a multiple of {whole}")
            return
        ratio = (1 / factor * value) if factor < 1 else (value / factor)
        if not _is_json_integer(ratio):
            self.invalid(
                name, value, f"{name} in body should be a multiple of {go_float(float(factor))}"
            )

    def check_array(self, node: SchemaNode, value: list[Any], name: str, old: Any) -> None:
        items = node.items
        if items is not None:
            correlation = self.correlation
            for index, item in enumerate(value):
                old_item = (
                    correlation.list_item(node, old, item, index)
                    if correlation is not None and old is not MISSING
                    else MISSING
                )
                self.validate(items, item, f"{name}[{index}]", old_item)
        size = len(value)
        if node.min_items is not None and size < node.min_items:
            self.invalid(name, size, f"{name} in body should have at least {node.min_items} items")
        if node.max_items is not None and size > node.max_items:
            self.too_many(name, size, node.max_items)
        if node.unique_items:
            seen: list[str] = []
            for item in value:
                encoded = go_json(item)
                if encoded in seen:
                    self.invalid(name, "", f"{name} in body shouldn't contain duplicates")
                    break
                seen.append(encoded)

    def too_many(self, name: str, actual: int, limit: int) -> None:
        unit = "item" if limit == 1 else "items"
        self.errors.append(
            FieldError(
                _field_path(name), ErrorType.TOO_MANY, actual, f"must have at most {limit} {unit}"
            )
        )

    def check_enum(self, node: SchemaNode, value: Any, name: str) -> None:
        allowed = node.enum or ()
        if value is not None and any(_enum_match(value, choice) for choice in allowed):
            return
        supported = ", ".join(
            go_quote(choice if isinstance(choice, str) else go_json(choice)) for choice in allowed
        )
        detail = f"supported values: {supported}" if allowed else ""
        self.errors.append(
            FieldError(_field_path(name), ErrorType.NOT_SUPPORTED, shown(value), detail)
        )

    def check_object(self, node: SchemaNode, value: dict[str, Any], name: str, old: Any) -> None:
        size = len(value)
        if node.min_properties is not None and size < node.min_properties:
            self.invalid(
                name, size, f"{name} in body should have at least {node.min_properties} properties"
            )
            return
        if node.max_properties is not None and size > node.max_properties:
            self.too_many(name, size, node.max_properties)
            return
        prefix = f"{name}." if name else ""
        old_map = old if isinstance(old, dict) else None
        properties = node.properties
        if node.additional_allowed is False:
            for key in value:
                if key not in properties:
                    detail = f"{name}.{key} in body is a forbidden property"
                    self.invalid(name, key, detail)
        elif node.additional is not None:
            additional = node.additional
            for key, item in value.items():
                if key not in properties:
                    old_item = old_map.get(key, MISSING) if old_map is not None else MISSING
                    self.validate(additional, item, f"{name}.{key}", old_item)
        for key, child in properties.items():
            if key in value:
                old_item = old_map.get(key, MISSING) if old_map is not None else MISSING
                self.validate(child, value[key], prefix + key, old_item)
        for key in node.required:
            if key not in value:
                self.errors.append(FieldError(_field_path(f"{name}.{key}"), ErrorType.REQUIRED))

    def check_branches(self, node: SchemaNode, value: Any, name: str) -> None:
        quoted = go_quote(name)
        if node.any_of:
            failures: list[FieldError] | None = None
            for branch in node.any_of:
                errors = self.branch_errors(branch, value, name)
                if not errors:
                    failures = None
                    break
                if failures is None:
                    failures = errors
            else:
                self.composite(f"{quoted} must validate at least one schema (anyOf)")
            if failures:
                self.errors.extend(failures)
        if node.one_of:
            valid = 0
            best: list[FieldError] | None = None
            for branch in node.one_of:
                errors = self.branch_errors(branch, value, name)
                if not errors:
                    valid += 1
                    best = None
                elif valid == 0 and best is None:
                    best = errors
            if valid != 1:
                found = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                self.composite(f"{quoted} must validate one and only one schema (oneOf). {found}")
                if best:
                    self.errors.extend(best)
        if node.all_of:
            valid = 0
            for branch in node.all_of:
                errors = self.branch_errors(branch, value, name)
                if not errors:
                    valid += 1
                self.errors.extend(errors)
            if valid != len(node.all_of):
                suffix = ". None validated" if valid == 0 else ""
                self.composite(f"{quoted} must validate all the schemas (allOf){suffix}")
        if node.not_ is not None and not self.branch_errors(node.not_, value, name):
            self.composite(f"{quoted} must not validate the schema (not)")

    def branch_errors(self, branch: SchemaNode, value: Any, name: str) -> list[FieldError]:
        saved, self.errors = self.errors, []
        try:
            self.validate(branch, value, name)
            return self.errors
        finally:
            self.errors = saved


def _enum_match(value: Any, choice: Any) -> bool:
    if isinstance(value, bool) or isinstance(choice, bool):
        return isinstance(value, bool) and isinstance(choice, bool) and value == choice
    if isinstance(value, int | float) and isinstance(choice, int | float):
        if isinstance(value, float) and isinstance(choice, int):
            return math.trunc(value) == choice if math.isfinite(value) else False
        return value == choice
    return type(value) is type(choice) and _deep_equal(value, choice)


def _deep_equal(left: Any, right: Any) -> bool:
    if type(left) is not type(right):
        return False
    if isinstance(left, list):
        return len(left) == len(right) and all(
            _deep_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(_deep_equal(left[k], right[k]) for k in left)
    return bool(left == right)


def validate_openapi(root: SchemaNode, obj: Any, old: Any | None = None) -> list[FieldError]:
    """Every OpenAPI violation of ``obj`` (a whole custom resource); with ``old`` (an
    update), unchanged correlated values are not re-validated."""
    correlation = Correlation() if old is not None else None
    validator = _Validator(correlation)
    validator.validate(root, obj, "", old if old is not None else MISSING)
    return validator.errors
