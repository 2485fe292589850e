"""``x-kubernetes-validations`` rules: compiled with the schema, evaluated per value.

Compiling (once per CRD version) checks each rule as kube-apiserver does before it
accepts a CRD: the expression must type-check against the schema node it is declared on
and yield a bool, ``messageExpression`` must yield a string, ``reason`` must be one of
the four allowed, ``fieldPath`` must name a field below the node, ``oldSelf`` may not be
used where values cannot be correlated (below a list that is not a ``map`` list), and
``optionalOldSelf`` only makes sense with ``oldSelf``. Problems become `FieldError`s on
the rule (``openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule``).

Evaluation walks the object along the schema, only into subtrees that hold rules. At each
non-null value with rules, ``self`` is the value (converted to CEL: ``date-time``
strings become timestamps, ``set``/``map`` lists compare ignoring order), and
``oldSelf`` the correlated old value on update. A transition rule (one that uses
``oldSelf``) runs only when an old value exists, unless ``optionalOldSelf`` is set, in
which case ``oldSelf`` is an optional. A failing rule is reported at the node (or its
``fieldPath``) with the node's schema type as the value::

    spec: Invalid value: "object": Cannot transition NodePool between static and dynamic
    spec.x: Invalid value: "string": failed rule: self == oldSelf

An evaluation error is reported with cel-go's text (``... evaluating rule: <message or
rule>``). On update, failures of non-transition rules at values that did not change are
ratcheted (dropped), as kube-apiserver turns them into warnings.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.fielderrors import ErrorType, FieldError
from karpy.sandbox.apiserver.schema.cel import types as celtypes
from karpy.sandbox.apiserver.schema.cel.compiler import (
    CelCompileError,
    CompiledExpression,
    compile_expression,
)
from karpy.sandbox.apiserver.schema.cel.stdlib import parse_timestamp
from karpy.sandbox.apiserver.schema.cel.values import (
    CelEvalError,
    CelOptional,
    Duration,
    MapList,
    SetList,
)
from karpy.sandbox.apiserver.schema.fieldpath import parse_rule_field_path
from karpy.sandbox.apiserver.schema.ratchet import MISSING, Correlation, map_list_key

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["CompiledRule", "compile_rules", "evaluate_rules"]

_REASONS = {
    "FieldValueInvalid": ErrorType.INVALID,
    "FieldValueForbidden": ErrorType.FORBIDDEN,
    "FieldValueRequired": ErrorType.REQUIRED,
    "FieldValueDuplicate": ErrorType.DUPLICATE,
}
_MAX_MESSAGE_BYTES = 5 * 1024


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


def _compile_node_rules(
    node: SchemaNode,
    raw_rules: tuple[Any, ...],
    rules_path: str,
    correlatable: bool,
    resource_root: bool,
    errors: list[FieldError],
) -> list[CompiledRule]:
    compiled: list[CompiledRule] = []
    self_type = celtypes.schema_cel_type(node, resource_root) or celtypes.DYN
    for index, raw in enumerate(raw_rules):
        path = f"{rules_path}[{index}]"
        rule_text = str(raw.get("rule") or "")
        if not rule_text.strip():
            errors.append(FieldError.required(f"{path}.rule", "rule is not specified"))
            continue
        optional_old_self = bool(raw.get("optionalOldSelf", False))
        old_type = celtypes.optional_of(self_type) if optional_old_self else self_type
        variables = {"self": self_type, "oldSelf": old_type}
        try:
            program = compile_expression(rule_text, variables)
        except CelCompileError as err:
            errors.append(FieldError.invalid(f"{path}.rule", rule_text, f"compilation failed: {err}"))
            continue
        if program.result_type.kind not in ("bool", "dyn"):
            errors.append(
                FieldError.invalid(f"{path}.rule", rule_text, "cel expression must evaluate to a bool")
            )
            continue
        if program.uses_old_self and not correlatable:
            errors.append(
                FieldError.invalid(
                    f"{path}.rule",
                    rule_text,
                    "oldSelf cannot be used on the uncorrelatable portion of the schema",
                )
            )
            continue
        if optional_old_self and not program.uses_old_self:
            errors.append(
                FieldError.forbidden(f"{path}.optionalOldSelf", "may not be set if oldSelf is not used in rule")
            )
            continue
        message = str(raw.get("message") or "")
        if "message" in raw and raw["message"] is not None:
            if not message.strip():
                errors.append(FieldError.required(f"{path}.message", "message must be non-empty if specified"))
                continue
            if "\n" in message:
                errors.append(FieldError.invalid(f"{path}.message", message, "message must not contain line breaks"))
                continue
        message_expression = None
        expression_text = raw.get("messageExpression")
        if expression_text:
            try:
                message_expression = compile_expression(str(expression_text), variables)
            except CelCompileError as err:
                errors.append(
                    FieldError.invalid(
                        f"{path}.messageExpression", expression_text, f"messageExpression compilation failed: {err}"
                    )
                )
                continue
            if message_expression.result_type.kind not in ("string", "dyn"):
                errors.append(
                    FieldError.invalid(
                        f"{path}.messageExpression", expression_text, "must evaluate to a string"
                    )
                )
                continue
        reason: ErrorType | None = None
        raw_reason = raw.get("reason")
        if raw_reason:
            if raw_reason not in _REASONS:
                errors.append(FieldError.not_supported(f"{path}.reason", raw_reason, sorted(_REASONS)))
                continue
            reason = _REASONS[raw_reason]
        field_path = ""
        if raw.get("fieldPath"):
            try:
                field_path = parse_rule_field_path(str(raw["fieldPath"]), node)
            except ValueError as err:
                errors.append(
                    FieldError.invalid(
                        f"{path}.fieldPath", raw["fieldPath"], f"fieldPath must be a valid path: {err}"
                    )
                )
                continue
        compiled.append(
            CompiledRule(
                rule=rule_text,
                program=program,
                message=message.strip(),
                message_expression=message_expression,
                reason=reason,
                field_path=field_path,
                optional_old_self=optional_old_self,
            )
        )
    return compiled


def _all_of_rules(node: SchemaNode) -> list[tuple[Any, str]]:
    found: list[tuple[Any, str]] = []
    for branch in node.all_of:
        found.extend((raw, branch.path) for raw in branch.raw_rules)
        found.extend(_all_of_rules(branch))
    return found


def compile_rules(
    node: SchemaNode,
    errors: list[FieldError],
    correlatable: bool = True,
    resource_root: bool = True,
) -> bool:
    """Compile every rule in the tree under ``node`` into the nodes (`SchemaNode.rules`);
    returns whether the subtree holds any rule. Problems are appended to ``errors``."""
    rules = _compile_node_rules(
        node, node.raw_rules, f"{node.path}.x-kubernetes-validations", correlatable, resource_root, errors
    )
    for raw, branch_path in _all_of_rules(node):
        rules.extend(
            _compile_node_rules(
                node, (raw,), f"{branch_path}.x-kubernetes-validations", correlatable, resource_root, errors
            )
        )
    node.rules = tuple(rules)
    has_rules = bool(rules)
    for child in node.properties.values():
        has_rules |= compile_rules(child, errors, correlatable, child.embedded)
    if node.additional is not None:
        has_rules |= compile_rules(node.additional, errors, correlatable, node.additional.embedded)
    if node.items is not None:
        items_correlatable = correlatable and node.list_type == "map"
        has_rules |= compile_rules(node.items, errors, items_correlatable, node.items.embedded)
    node.has_rules = has_rules
    return has_rules


# --- JSON values as CEL values -------------------------------------------------------------


def _adapt(value: Any, node: SchemaNode | None) -> Any:
    """``value`` as CEL sees it at ``node`` (formats, number types, list semantics)."""
    if node is None or value is None:
        return value
    if isinstance(value, str):
        fmt = node.format
        if fmt == "date-time" or fmt == "date":
            text = value if fmt == "date-time" else f"{value}T00:00:00Z"
            stamp = parse_timestamp(text)
            return stamp if stamp is not None else value
        if fmt == "duration":
            from karpy.durations import DurationError, parse_duration

            try:
                return Duration(parse_duration(value))
            except DurationError:
                return value
        if fmt == "byte":
            try:
                return base64.b64decode(value, validate=True)
            except ValueError:
                return value
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value) if node.type == "number" else value
    if isinstance(value, float):
        return int(value) if node.type == "integer" and value.is_integer() else value
    if isinstance(value, list):
        items = [_adapt(item, node.items) for item in value]
        if node.list_type == "set":
            return SetList(items)
        if node.list_type == "map":
            return MapList(items, node.list_map_keys)
        return items
    if isinstance(value, dict):
        return {key: _adapt(item, node.child(key)) for key, item in value.items()}
    return value


def _type_value(node: SchemaNode, resource_root: bool) -> str:
    return "object" if resource_root and not node.type else node.type


class _RuleWalk:
    def __init__(self, old_object_present: bool) -> None:
        self.errors: list[FieldError] = []
        self.correlation = Correlation() if old_object_present else None

    def walk(
        self,
        node: SchemaNode,
        value: Any,
        path: str,
        old: Any,
        ratchet_old: Any,
        unchanged: bool,
        resource_root: bool,
    ) -> None:
        if value is None or not node.has_rules:
            return
        if ratchet_old is not MISSING and self.correlation is not None:
            unchanged = self.correlation.unchanged(node, ratchet_old, value)
        if node.rules:
            self.evaluate(node, value, path, old, unchanged, resource_root)
        if isinstance(value, dict):
            old_map = old if isinstance(old, dict) else None
            ratchet_map = ratchet_old if isinstance(ratchet_old, dict) else None
            for key, item in value.items():
                child = node.properties.get(key)
                if child is not None:
                    child_path = f"{path}.{key}" if path else key
                elif node.additional is not None:
                    child = node.additional
                    child_path = f"{path}[{key}]"
                else:
                    continue
                if not child.has_rules:
                    continue
                self.walk(
                    child,
                    item,
                    child_path,
                    old_map.get(key, MISSING) if old_map is not None else MISSING,
                    ratchet_map.get(key, MISSING) if ratchet_map is not None else MISSING,
                    unchanged,
                    child.embedded,
                )
        elif isinstance(value, list) and node.items is not None and node.items.has_rules:
            correlation = self.correlation
            for index, item in enumerate(value):
                item_old = MISSING
                if node.list_type == "map" and isinstance(old, list) and correlation is not None:
                    item_old = correlation.map_list(node, old).get(map_list_key(node, item), MISSING)
                item_ratchet = (
                    correlation.list_item(node, ratchet_old, item, index)
                    if correlation is not None and ratchet_old is not MISSING
                    else MISSING
                )
                self.walk(node.items, item, f"{path}[{index}]", item_old, item_ratchet, unchanged, node.items.embedded)

    def evaluate(
        self, node: SchemaNode, value: Any, path: str, old: Any, unchanged: bool, resource_root: bool
    ) -> None:
        type_value = _type_value(node, resource_root)
        self_value = _adapt(value, node)
        old_value = _adapt(old, node) if old is not MISSING and old is not None else MISSING
        for rule in node.rules:
            if rule.optional_old_self:
                old_arg: Any = CelOptional(old_value is not MISSING, None if old_value is MISSING else old_value)
            elif rule.uses_old_self:
                if old_value is MISSING:
                    continue
                old_arg = old_value
            else:
                old_arg = None
            try:
                result = rule.program.run(self_value, old_arg)
            except CelEvalError as err:
                text = str(err)
                if text.startswith("no such overload"):
                    detail = (
                        f"'{text}': call arguments did not match a supported operator, function or "
                        f"macro signature for rule: {rule.error_text}"
                    )
                else:
                    detail = f"{text} evaluating rule: {rule.error_text}"
                self.errors.append(FieldError(path or "<nil>", ErrorType.INVALID, type_value, detail))
                continue
            if result is True:
                continue
            if unchanged and not rule.uses_old_self:
                continue
            error_path = path
            if rule.field_path:
                error_path = f"{path}.{rule.field_path}" if path else rule.field_path
            detail = self.message(rule, self_value, old_arg)
            self.errors.append(_rule_error(error_path or "<nil>", type_value, detail, rule.reason))

    @staticmethod
    def message(rule: CompiledRule, self_value: Any, old_arg: Any) -> str:
        if rule.message_expression is not None:
            try:
                text = rule.message_expression.run(self_value, old_arg)
            except CelEvalError:
                text = None
            if isinstance(text, str):
                trimmed = text.strip()
                if trimmed and "\n" not in trimmed and len(trimmed.encode()) <= _MAX_MESSAGE_BYTES:
                    return trimmed
        return rule.message or f"failed rule: {rule.rule.strip()}"


def _rule_error(path: str, type_value: str, detail: str, reason: ErrorType | None) -> FieldError:
    if reason is ErrorType.FORBIDDEN:
        return FieldError.forbidden(path, detail)
    if reason is ErrorType.REQUIRED:
        return FieldError.required(path, detail)
    if reason is ErrorType.DUPLICATE:
        return FieldError.duplicate(path, type_value)
    return FieldError(path, ErrorType.INVALID, type_value, detail)


def evaluate_rules(root: SchemaNode, obj: Any, old: Any | None) -> list[FieldError]:
    """Failures of every CEL rule in ``obj``; ``old`` is the stored object on update."""
    if not root.has_rules:
        return []
    walk = _RuleWalk(old is not None)
    start_old = old if old is not None else MISSING
    walk.walk(root, obj, "", start_old, start_old, False, True)
    return walk.errors

