"""Evaluating ``x-kubernetes-validations`` rules against an object.

The walk follows the object along the schema, only into subtrees that hold rules. At
each non-null value with rules, ``self`` is the value converted to CEL (``date-time``
strings become timestamps, ``duration`` strings durations, ``byte`` strings bytes,
``set``/``map`` lists compare ignoring order), and ``oldSelf`` the correlated old value
on update (through object fields, map entries and ``map``-list items, never through
other lists). A transition rule (one that uses ``oldSelf``) runs only when an old value
exists, unless ``optionalOldSelf`` is set, in which case ``oldSelf`` is an optional.

A failing rule is reported at the node (or below it, at its ``fieldPath``) with
``reason`` choosing the error type. The bad value shown is the value itself when it is a
scalar, and no value at all for objects and lists or when the message came from a
``messageExpression`` (current kube-apiserver; older releases showed the schema type)::

    spec: Invalid value: Cannot transition NodePool between static and dynamic
    spec.template.spec.requirements[1].key: Invalid value: "karpenter.sh/nodepool": label
        "karpenter.sh/nodepool" is restricted

An evaluation error is reported with cel-go's text (``<error> evaluating rule:
<message or rule>``). On update, failures of non-transition rules at values that did not
change are ratcheted (dropped), as kube-apiserver turns them into warnings. Cost budgets
are not enforced.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from karpy.apis.fielderrors import OMITTED, ErrorType, FieldError
from karpy.durations import DurationError, parse_duration
from karpy.sandbox.apiserver.schema.cel.stdlib import parse_timestamp
from karpy.sandbox.apiserver.schema.cel.values import (
    CelEvalError,
    CelOptional,
    Duration,
    MapList,
    SetList,
)
from karpy.sandbox.apiserver.schema.gofmt import shown
from karpy.sandbox.apiserver.schema.ratchet import MISSING, Correlation, map_list_key

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.schema.nodes import CompiledRule, SchemaNode

__all__ = ["evaluate_rules"]

_MAX_MESSAGE_BYTES = 5 * 1024


def _adapt(value: Any, node: SchemaNode | None) -> Any:
    """``value`` as CEL sees it at ``node`` (formats, number types, list semantics)."""
    if node is None or value is None or node.cel_plain:
        return value
    if isinstance(value, str):
        fmt = node.format
        if fmt in {"date-time", "date"}:
            text = value if fmt == "date-time" else f"{value}T00:00:00Z"
            stamp = parse_timestamp(text)
            return stamp if stamp is not None else value
        if fmt == "duration":
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
        self._adapted: dict[tuple[int, int], Any] = {}

    def adapt(self, value: Any, node: SchemaNode) -> Any:
        """`_adapt`, once per value: rules at several depths share the conversion."""
        if node.cel_plain or not isinstance(value, dict | list):
            return _adapt(value, node)
        key = (id(value), id(node))
        found = self._adapted.get(key)
        if found is None:
            found = self._adapted[key] = _adapt(value, node)
        return found

    def walk(
        self,
        node: SchemaNode,
        value: Any,
        *,
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
            self.evaluate(node, value, path, old, unchanged=unchanged, root=resource_root)
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
                    path=child_path,
                    old=old_map.get(key, MISSING) if old_map is not None else MISSING,
                    ratchet_old=ratchet_map.get(key, MISSING)
                    if ratchet_map is not None
                    else MISSING,
                    unchanged=unchanged,
                    resource_root=child.embedded,
                )
        elif isinstance(value, list) and node.items is not None and node.items.has_rules:
            correlation = self.correlation
            for index, item in enumerate(value):
                item_old = MISSING
                if node.list_type == "map" and isinstance(old, list) and correlation is not None:
                    item_old = correlation.map_list(node, old).get(
                        map_list_key(node, item), MISSING
                    )
                item_ratchet = (
                    correlation.list_item(node, ratchet_old, item, index)
                    if correlation is not None and ratchet_old is not MISSING
                    else MISSING
                )
                self.walk(
                    node.items,
                    item,
                    path=f"{path}[{index}]",
                    old=item_old,
                    ratchet_old=item_ratchet,
                    unchanged=unchanged,
                    resource_root=node.items.embedded,
                )

    def evaluate(
        self, node: SchemaNode, value: Any, path: str, old: Any, *, unchanged: bool, root: bool
    ) -> None:
        type_value = _type_value(node, root)
        self_value = self.adapt(value, node)
        old_value = self.adapt(old, node) if old is not MISSING and old is not None else MISSING
        for rule in node.rules:
            if rule.optional_old_self:
                old_arg: Any = CelOptional(
                    old_value is not MISSING, None if old_value is MISSING else old_value
                )
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
                self.errors.append(
                    FieldError(path or "<nil>", ErrorType.INVALID, type_value, detail)
                )
                continue
            if result is True:
                continue
            if unchanged and not rule.uses_old_self:
                continue
            error_path = path
            if rule.field_path:
                error_path = f"{path}.{rule.field_path}" if path else rule.field_path
            detail, from_expression = self.message(rule, self_value, old_arg)
            shown_value = OMITTED if from_expression else _display_value(value)
            self.errors.append(_rule_error(error_path or "<nil>", shown_value, detail, rule.reason))

    @staticmethod
    def message(rule: CompiledRule, self_value: Any, old_arg: Any) -> tuple[str, bool]:
        """The failure message, and whether a ``messageExpression`` produced it."""
        if rule.message_expression is not None:
            try:
                text = rule.message_expression.run(self_value, old_arg)
            except CelEvalError:
                text = None
            if isinstance(text, str):
                trimmed = text.strip()
                if trimmed and "\n" not in trimmed and len(trimmed.encode()) <= _MAX_MESSAGE_BYTES:
                    return trimmed, True
        return rule.message or f"failed rule: {rule.rule.strip()}", False


def _display_value(value: Any) -> Any:
    """The bad value a failed rule shows: scalars as they are, compound values omitted."""
    if isinstance(value, dict | list):
        return OMITTED
    return shown(value)


def _rule_error(path: str, value: Any, detail: str, reason: ErrorType | None) -> FieldError:
    if reason is ErrorType.FORBIDDEN:
        return FieldError.forbidden(path, detail)
    if reason is ErrorType.REQUIRED:
        return FieldError.required(path, detail)
    if reason is ErrorType.DUPLICATE:
        return FieldError(path, ErrorType.DUPLICATE, value)
    return FieldError(path, ErrorType.INVALID, value, detail)


def evaluate_rules(root: SchemaNode, obj: Any, old: Any | None) -> list[FieldError]:
    """Failures of every CEL rule in ``obj``; ``old`` is the stored object on update."""
    if not root.has_rules:
        return []
    walk = _RuleWalk(old is not None)
    start_old = old if old is not None else MISSING
    walk.walk(
        root,
        obj,
        path="",
        old=start_old,
        ratchet_old=start_old,
        unchanged=False,
        resource_root=True,
    )
    return walk.errors
