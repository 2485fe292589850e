"""Applying a `karpy.apis.openapi.Schema` to plain dicts the way kube-apiserver does:
structural defaulting (`apply_defaults`), OpenAPI validation with go-openapi's messages,
and CEL rules through their Python twins (`validate`), plus the cheaper check parsers
run first (`structural_errors`: wrong JSON types, missing required fields).

Error paths follow kube-openapi: ``spec.template.spec.requirements[0].key`` for list
items, ``spec.limits.cpu`` for map entries. Messages are go-openapi's (``... in body
should match '<pattern>'``) as apiextensions-apiserver turns them into field errors.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import ErrorType, FieldError

if TYPE_CHECKING:
    from karpy.apis.openapi import Rule, Schema

__all__ = ["BLOCKED_CEL_MESSAGE", "apply_defaults", "child_path", "structural_errors", "validate"]

# OpenAPI failures after which kube-apiserver does not evaluate CEL rules (the object may
# not have the shape the rules were written for, or would be too costly to evaluate).
_BLOCKING = frozenset(
    {
        ErrorType.NOT_SUPPORTED,
        ErrorType.REQUIRED,
        ErrorType.TOO_LONG,
        ErrorType.TOO_MANY,
        ErrorType.TYPE_INVALID,
    }
)
BLOCKED_CEL_MESSAGE = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)


# --- defaulting ---------------------------------------------------------------------------


def apply_defaults(schema: Schema, value: Any) -> Any:
    """A copy of ``value`` with schema defaults filled in and JSON nulls dropped.

    Like kube-apiserver's structural defaulting: a property that is absent (or null)
    takes its default, and the default itself is then defaulted further down. Values of
    the wrong type are returned unchanged, for validation to report.
    """
    if isinstance(value, dict) and schema.type == "object":
        out: dict[str, Any] = {}
        for key, item in value.items():
            if item is None:
                continue
            child = schema.properties.get(key, schema.additional_properties)
            out[key] = apply_defaults(child, item) if child is not None else item
        for key, child in schema.properties.items():
            if key not in out and child.has_default:
                out[key] = apply_defaults(child, _copy(child.default))
        return out
    if isinstance(value, list) and schema.type == "array" and schema.items is not None:
        items = schema.items
        return [apply_defaults(items, item) for item in value if item is not None]
    return value


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


# --- validation ---------------------------------------------------------------------------


def child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def validate(
    schema: Schema,
    value: Any,
    path: str = "",
    old: Any = None,
    *,
    skip: frozenset[str] = frozenset(),
) -> list[FieldError]:
    """Every OpenAPI and CEL violation in ``value``, as kube-apiserver reports them.

    ``old`` is the previous version of the object on update (transition rules such as
    ``self == oldSelf`` are evaluated only then). Top-level properties named in ``skip``
    are not checked (karpy's models skip ``status``, which only controllers write).
    """
    errors: list[FieldError] = []
    _check(schema, value, path, errors, structural=False, skip=skip)
    if any(e.type in _BLOCKING for e in errors):
        errors.append(FieldError("<nil>", ErrorType.INVALID, "null", BLOCKED_CEL_MESSAGE))
        return errors
    _check_rules(schema, value, path, old, errors, skip=skip)
    return errors


def structural_errors(
    schema: Schema, value: Any, path: str = "", *, lenient: frozenset[str] = frozenset()
) -> list[FieldError]:
    """Only the errors that make ``value`` impossible to represent: wrong JSON types, and
    missing required properties except under the top-level properties named in
    ``lenient``. Parsers run this before reading a dict."""
    if _sound(schema, value, required=True, lenient=lenient):
        return []  # the common case, found without building any paths
    errors: list[FieldError] = []
    _check(schema, value, path, errors, structural=True, skip=lenient)
    return errors


def _type_ok(schema: Schema, value: Any) -> bool:
    if schema.int_or_string:
        return isinstance(value, int | str) and not isinstance(value, bool)
    kind = schema.type
    if kind == "string":
        return isinstance(value, str)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list)
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "boolean":
        return isinstance(value, bool)
    return True


def _sound(
    schema: Schema, value: Any, *, required: bool, lenient: frozenset[str] = frozenset()
) -> bool:
    """Whether `structural_errors` would find nothing (a fast walk with no paths)."""
    if not _type_ok(schema, value):
        return False
    if isinstance(value, dict):
        if required and any(key not in value for key in schema.required):
            return False
        for key, item in value.items():
            child = schema.properties.get(key, schema.additional_properties)
            if child is not None and not _sound(
                child, item, required=required and key not in lenient
            ):
                return False
    elif isinstance(value, list) and schema.items is not None:
        items = schema.items
        return all(_sound(items, item, required=required) for item in value)
    return True


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null" if value is None else type(value).__name__


def _type_error(schema: Schema, value: Any, path: str) -> FieldError | None:
    actual = _json_type(value)
    expected: tuple[str, ...]
    if schema.int_or_string:
        expected = ("integer", "string")
    elif schema.type is None:
        return None
    else:
        expected = (schema.type,)
    if actual in expected:
        return None
    name = "integer,string" if schema.int_or_string else expected[0]
    detail = f'{path} in body must be of type {name}: "{actual}"'
    return FieldError(path, ErrorType.TYPE_INVALID, actual, detail)


def _check(
    schema: Schema,
    value: Any,
    path: str,
    errors: list[FieldError],
    *,
    structural: bool,
    skip: frozenset[str] = frozenset(),
    required: bool = True,
) -> None:
    """Walk ``value``. ``skip`` names top-level properties to leave out (in structural
    mode: to check for types only); ``required`` is False inside such a property."""
    type_error = _type_error(schema, value, path)
    if type_error is not None:
        errors.append(type_error)
        return
    if isinstance(value, dict):
        _check_object(
            schema, value, path, errors, structural=structural, skip=skip, required=required
        )
    elif isinstance(value, list):
        _check_array(schema, value, path, errors, structural=structural, required=required)
    elif not structural:
        _check_scalar(schema, value, path, errors)


def _check_object(
    schema: Schema,
    value: dict[str, Any],
    path: str,
    errors: list[FieldError],
    *,
    structural: bool,
    skip: frozenset[str],
    required: bool,
) -> None:
    limit = schema.max_properties
    if not structural and limit is not None and len(value) > limit:
        errors.append(FieldError.too_many(path, len(value), limit))
        return
    for key, item in value.items():
        child = schema.properties.get(key, schema.additional_properties)
        if child is None:
            continue
        child_required = required
        if key in skip:
            if not structural:
                continue
            child_required = False
        _check(
            child,
            item,
            child_path(path, key),
            errors,
            structural=structural,
            required=child_required,
        )
    if required:
        errors.extend(
            FieldError.required(child_path(path, key))
            for key in schema.required
            if key not in value
        )


def _check_array(
    schema: Schema,
    value: list[Any],
    path: str,
    errors: list[FieldError],
    *,
    structural: bool,
    required: bool,
) -> None:
    if schema.items is not None:
        for index, item in enumerate(value):
            _check(
                schema.items,
                item,
                f"{path}[{index}]",
                errors,
                structural=structural,
                required=required,
            )
    if structural:
        return
    if schema.min_items is not None and len(value) < schema.min_items:
        errors.append(
            FieldError.invalid(
                path, len(value), f"{path} in body should have at least {schema.min_items} items"
            )
        )
    if schema.max_items is not None and len(value) > schema.max_items:
        errors.append(FieldError.too_many(path, len(value), schema.max_items))
    if schema.list_type == "set":
        seen: list[Any] = []
        for index, item in enumerate(value):
            if item in seen:
                errors.append(FieldError.duplicate(f"{path}[{index}]", item))
            seen.append(item)
    elif schema.list_type == "map" and schema.list_map_keys:
        keys_seen: list[tuple[Any, ...]] = []
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = tuple(item.get(k) for k in schema.list_map_keys)
            if key in keys_seen:
                shown = {k: item.get(k) for k in schema.list_map_keys}
                errors.append(FieldError.duplicate(f"{path}[{index}]", shown))
            keys_seen.append(key)


def _check_scalar(schema: Schema, value: Any, path: str, errors: list[FieldError]) -> None:
    if schema.enum and value not in schema.enum:
        errors.append(FieldError.not_supported(path, value, [str(e) for e in schema.enum]))
        return
    if isinstance(value, str):
        if schema.max_length is not None and len(value) > schema.max_length:
            errors.append(
                FieldError(
                    path,
                    ErrorType.TOO_LONG,
                    value,
                    f"may not be more than {schema.max_length} bytes",
                )
            )
        if schema.min_length is not None and len(value) < schema.min_length:
            errors.append(
                FieldError.invalid(
                    path, value, f"{path} in body should be at least {schema.min_length} chars long"
                )
            )
        if schema.pattern is not None and _regex(schema.pattern).search(value) is None:
            errors.append(
                FieldError.invalid(path, value, f"{path} in body should match '{schema.pattern}'")
            )
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = int(value)
        if schema.maximum is not None and number > schema.maximum:
            detail = f"{path} in body should be less than or equal to {schema.maximum}"
            errors.append(FieldError.invalid(path, number, detail))
        if schema.minimum is not None and number < schema.minimum:
            detail = f"{path} in body should be greater than or equal to {schema.minimum}"
            errors.append(FieldError.invalid(path, number, detail))


@cache
def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(_go_end_anchors(pattern))


def _go_end_anchors(pattern: str) -> str:
    """``pattern`` with each ``$`` outside a character class as ``\\Z``: Go's (RE2's)
    ``$`` matches only at the end of the text, Python's also before a final line break,
    which would let ``"90s\\n"`` pass ``^([0-9]+(s|m|h))+$``."""
    out: list[str] = []
    index, in_class = 0, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            head = re.match(r"\[\^?\]?", pattern[index:])
            char = head.group() if head else char  # a "]" first in a class is literal
            index += len(char) - 1
        elif char == "$":
            char = r"\Z"
        out.append(char)
        index += 1
    return "".join(out)


def _check_rules(
    schema: Schema,
    value: Any,
    path: str,
    old: Any,
    errors: list[FieldError],
    *,
    skip: frozenset[str] = frozenset(),
) -> None:
    """Evaluate each node's rules against the node's value, outermost first."""
    for rule in schema.rules:
        if rule.transition and old is None:
            continue
        try:
            ok = rule.check(value, old) if rule.transition else rule.check(value)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            # CEL fails to evaluate (e.g. a required field is missing): kube reports the
            # evaluation error with the node's type as the value.
            problem = f"no such key: {exc.args[0]}" if isinstance(exc, KeyError) else str(exc)
            detail = f"{problem} evaluating rule: {rule.message}"
            errors.append(FieldError.invalid(path, schema.type or "string", detail))
            continue
        if not ok:
            errors.append(_rule_error(schema, value, path, rule))
    if isinstance(value, dict):
        top = path == ""
        for key, item in value.items():
            if top and key in skip:
                continue
            child = schema.properties.get(key)
            old_item = old.get(key) if isinstance(old, dict) else None
            if child is not None:
                _check_rules(child, item, child_path(path, key), old_item, errors)
            elif schema.additional_properties is not None:
                _check_rules(
                    schema.additional_properties, item, child_path(path, key), old_item, errors
                )
    elif isinstance(value, list) and schema.items is not None:
        # Transition rules inside atomic lists have no correlated old value.
        for index, item in enumerate(value):
            _check_rules(schema.items, item, f"{path}[{index}]", None, errors)


def _rule_error(schema: Schema, value: Any, path: str, rule: Rule) -> FieldError:
    # kube-apiserver shows scalar values but omits objects and arrays.
    if schema.type in ("object", "array"):
        return FieldError(path, ErrorType.INVALID, detail=rule.message)
    return FieldError.invalid(path, value, rule.message)
