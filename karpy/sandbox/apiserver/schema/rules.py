"""``x-kubernetes-validations`` rules, compiled with the schema.

Compiling (once per CRD version) checks each rule as kube-apiserver does before it
accepts a CRD: the expression must type-check against the schema node it is declared on
and yield a bool, ``messageExpression`` must yield a string, ``reason`` must be one of
the four allowed, ``fieldPath`` must name a field below the node, ``oldSelf`` may not be
used where values cannot be correlated (below a list that is not a ``map`` list), and
``optionalOldSelf`` only makes sense with ``oldSelf``. Problems become `FieldError`s on
the rule (``openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule``).

Evaluation is in `ruleeval`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import ErrorType, FieldError
from karpy.sandbox.apiserver.schema.cel import types as celtypes
from karpy.sandbox.apiserver.schema.cel.compiler import compile_expression
from karpy.sandbox.apiserver.schema.cel.syntax import CelCompileError
from karpy.sandbox.apiserver.schema.fieldpath import parse_rule_field_path
from karpy.sandbox.apiserver.schema.nodes import CompiledRule

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import SchemaNode

__all__ = ["CompiledRule", "compile_rules"]

_REASONS = {
    "FieldValueInvalid": ErrorType.INVALID,
    "FieldValueForbidden": ErrorType.FORBIDDEN,
    "FieldValueRequired": ErrorType.REQUIRED,
    "FieldValueDuplicate": ErrorType.DUPLICATE,
}


def _compile_node_rules(
    node: SchemaNode,
    raw_rules: tuple[Any, ...],
    *,
    rules_path: str,
    correlatable: bool,
    resource_root: bool,
    errors: list[FieldError],
) -> list[CompiledRule]:
    compiled: list[CompiledRule] = []
    self_type = schema_cel_type(node, resource_root) or celtypes.DYN
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
            errors.append(
                FieldError.invalid(f"{path}.rule", rule_text, f"compilation failed: {err}")
            )
            continue
        if program.result_type.kind not in ("bool", "dyn"):
            errors.append(
                FieldError.invalid(
                    f"{path}.rule", rule_text, "cel expression must evaluate to a bool"
                )
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
                FieldError.forbidden(
                    f"{path}.optionalOldSelf", "may not be set if oldSelf is not used in rule"
                )
            )
            continue
        message = str(raw.get("message") or "")
        if "message" in raw and raw["message"] is not None:
            if not message.strip():
                errors.append(
                    FieldError.required(f"{path}.message", "message must be non-empty if specified")
                )
                continue
            if "\n" in message:
                errors.append(
                    FieldError.invalid(
                        f"{path}.message", message, "message must not contain line breaks"
                    )
                )
                continue
        message_expression = None
        expression_text = raw.get("messageExpression")
        if expression_text:
            try:
                message_expression = compile_expression(str(expression_text), variables)
            except CelCompileError as err:
                errors.append(
                    FieldError.invalid(
                        f"{path}.messageExpression",
                        expression_text,
                        f"messageExpression compilation failed: {err}",
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
                errors.append(
                    FieldError.not_supported(f"{path}.reason", raw_reason, sorted(_REASONS))
                )
                continue
            reason = _REASONS[raw_reason]
        field_path = ""
        if raw.get("fieldPath"):
            try:
                field_path = parse_rule_field_path(str(raw["fieldPath"]), node)
            except ValueError as err:
                errors.append(
                    FieldError.invalid(
                        f"{path}.fieldPath",
                        raw["fieldPath"],
                        f"fieldPath must be a valid path: {err}",
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
    *,
    correlatable: bool = True,
    resource_root: bool = True,
) -> bool:
    """Compile every rule in the tree under ``node`` into the nodes (`SchemaNode.rules`);
    returns whether the subtree holds any rule. Problems are appended to ``errors``."""
    rules = _compile_node_rules(
        node,
        node.raw_rules,
        rules_path=f"{node.path}.x-kubernetes-validations",
        correlatable=correlatable,
        resource_root=resource_root,
        errors=errors,
    )
    for raw, branch_path in _all_of_rules(node):
        rules += _compile_node_rules(
            node,
            (raw,),
            rules_path=f"{branch_path}.x-kubernetes-validations",
            correlatable=correlatable,
            resource_root=resource_root,
            errors=errors,
        )
    node.rules = tuple(rules)
    has_rules = bool(rules)
    for child in node.properties.values():
        has_rules |= compile_rules(
            child, errors, correlatable=correlatable, resource_root=child.embedded
        )
    additional = node.additional
    if additional is not None:
        has_rules |= compile_rules(
            additional, errors, correlatable=correlatable, resource_root=additional.embedded
        )
    if node.items is not None:
        has_rules |= compile_rules(
            node.items,
            errors,
            correlatable=correlatable and node.list_type == "map",
            resource_root=node.items.embedded,
        )
    node.has_rules = has_rules
    return has_rules


# The CEL type of values at a schema node: what `self` is in the rules written there.
_CEL_STRING_FORMATS = {
    "byte": celtypes.BYTES,
    "duration": celtypes.DURATION,
    "date": celtypes.TIMESTAMP,
    "date-time": celtypes.TIMESTAMP,
}
_CEL_METADATA_FIELDS = {
    "name": ("name", celtypes.STRING),
    "generateName": ("generateName", celtypes.STRING),
}


def schema_cel_type(node: SchemaNode, resource_root: bool = False) -> celtypes.CelType | None:
    """The CEL type of values at ``node`` (None where Kubernetes leaves a value out of
    CEL's reach). At a resource root (the custom resource, or an embedded resource)
    ``apiVersion``, ``kind`` and ``metadata.name``/``generateName`` are always there."""
    if node.int_or_string:
        return celtypes.DYN
    kind = node.type
    if kind == "array":
        if node.items is None:
            return None
        elem = schema_cel_type(node.items, node.items.embedded)
        return (
            None if elem is None else celtypes.CelType("list", elem=elem, list_type=node.list_type)
        )
    if kind == "object" or (resource_root and not kind):
        if node.additional is not None:
            value = schema_cel_type(node.additional, node.additional.embedded)
            return None if value is None else celtypes.map_of(celtypes.STRING, value)
        fields: dict[str, tuple[str, celtypes.CelType]] = {}
        for name, child in node.properties.items():
            child_type = schema_cel_type(child, child.embedded)
            escaped = celtypes.escape_property(name)
            if child_type is not None and escaped is not None:
                fields[escaped] = (name, child_type)
        if resource_root or node.embedded:
            fields.setdefault("apiVersion", ("apiVersion", celtypes.STRING))
            fields.setdefault("kind", ("kind", celtypes.STRING))
            meta_fields = dict(_CEL_METADATA_FIELDS)
            existing = fields.get("metadata")
            if existing is not None and existing[1].fields:
                meta_fields.update(existing[1].fields)
            fields["metadata"] = ("metadata", celtypes.CelType("object", fields=meta_fields))
        return celtypes.CelType("object", fields=fields)
    if kind == "integer":
        return celtypes.INT
    if kind == "number":
        return celtypes.DOUBLE
    if kind == "boolean":
        return celtypes.BOOL
    if kind == "string":
        return _CEL_STRING_FORMATS.get(node.format, celtypes.STRING)
    if node.preserve_unknown:
        return celtypes.DYN
    return None
