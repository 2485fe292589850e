"""Structural-schema handling of custom resources, as kube-apiserver's apiextensions
server does it: defaulting, pruning, OpenAPI v3 validation and CEL
``x-kubernetes-validations`` rules.

The emulator compiles each CRD version's ``openAPIV3Schema`` once (`compile_schema`,
which raises `InvalidSchema` for a schema a real cluster would refuse) and then, for
every write, calls on the `CompiledSchema`, in kube-apiserver's order:

1. `CompiledSchema.prune` (decoding: unknown fields and disallowed nulls go),
2. `CompiledSchema.apply_defaults` (also when reading stored objects),
3. `CompiledSchema.validate` (``old`` is the stored object on update).

`validate` returns field errors in kube-apiserver's order and wording: the OpenAPI
errors, embedded-resource errors, list set/map duplicates, then either the CEL rule
failures or, when an OpenAPI error of a blocking kind (type, required, enum, too long,
too many) is present, the single error saying the rules were not checked.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.fielderrors import ErrorType, FieldError
from karpy.errors import KarpyError
from karpy.sandbox.apiserver.schema.defaulting import apply_defaults
from karpy.sandbox.apiserver.schema.embedded import validate_embedded_resources
from karpy.sandbox.apiserver.schema.listtype import validate_list_sets_and_maps
from karpy.sandbox.apiserver.schema.nodes import SchemaNode, build_tree
from karpy.sandbox.apiserver.schema.openapi import validate_openapi
from karpy.sandbox.apiserver.schema.pruning import prune, prune_non_nullable_nulls
from karpy.sandbox.apiserver.schema.ratchet import strict_equal
from karpy.sandbox.apiserver.schema.ruleeval import evaluate_rules
from karpy.sandbox.apiserver.schema.rules import compile_rules

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["RULES_NOT_CHECKED", "CompiledSchema", "InvalidSchema", "compile_schema"]

RULES_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; "
    "correct the existing errors to complete validation"
)
# OpenAPI error kinds after which kube-apiserver does not run CEL rules.
_BLOCKING = frozenset(
    {
        ErrorType.NOT_SUPPORTED,
        ErrorType.REQUIRED,
        ErrorType.TOO_LONG,
        ErrorType.TOO_MANY,
        ErrorType.TYPE_INVALID,
    }
)


class InvalidSchema(KarpyError):
    """A schema kube-apiserver would refuse in a CRD. `errors` are field errors whose
    paths start at the schema (``openAPIV3Schema.properties[spec].type``); prefix them
    with the version's location (``spec.versions[0].schema.``) to report them on the CRD,
    for example with `errors_at`."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__("; ".join(e.render() for e in errors))

    def errors_at(self, prefix: str) -> list[FieldError]:
        """The errors with ``prefix`` (e.g. ``spec.versions[0].schema.``) before each path."""
        return [attrs.evolve(e, path=prefix + e.path) for e in self.errors]


def _check_defaults(node: SchemaNode, errors: list[FieldError]) -> None:
    """Defaults must survive pruning unchanged and be valid against their schema."""
    if node.has_default:
        path = f"{node.path}.default"
        pruned = copy.deepcopy(node.default)
        if isinstance(pruned, dict | list):
            wrapper = {"value": pruned}
            holder = SchemaNode("", type="object", properties={"value": node})
            prune(wrapper, holder)
            if not strict_equal(wrapper.get("value"), node.default):
                errors.append(FieldError.invalid(path, "object", "must not have unknown fields"))
        holder = SchemaNode("", type="object", properties={"default": node})
        errors.extend(
            attrs.evolve(problem, path=f"{node.path}.{problem.path}")
            if problem.path != "<nil>"
            else problem
            for problem in validate_openapi(holder, {"default": node.default})
        )
    for child in (*node.properties.values(), node.items, node.additional):
        if child is not None:
            _check_defaults(child, errors)


class CompiledSchema:
    """One CRD version's ``openAPIV3Schema``, compiled once when the CRD is stored."""

    def __init__(self, openapi_v3_schema: Mapping[str, Any]) -> None:
        self.openapi_v3_schema = openapi_v3_schema
        root, errors = build_tree(openapi_v3_schema)
        if not errors:
            _check_defaults(root, errors)
            compile_rules(root, errors)
        if errors:
            raise InvalidSchema(errors)
        self.root = root

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Fill in schema ``default`` values, in place (create, update, and read)."""
        apply_defaults(obj, self.root)

    def prune(self, obj: dict[str, Any]) -> None:
        """Drop fields the schema does not declare, in place (except under
        ``x-kubernetes-preserve-unknown-fields``); ``apiVersion``, ``kind`` and
        ``metadata`` are never pruned."""
        prune(obj, self.root)
        prune_non_nullable_nulls(obj, self.root)

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
        """Every schema and CEL violation of ``obj``; ``old`` is the stored object on
        update (for transition rules using ``oldSelf``), None on create."""
        root = self.root
        errors = validate_openapi(root, obj, old)
        errors.extend(validate_embedded_resources(root, obj))
        if old is None or not validate_list_sets_and_maps(root, old):
            errors.extend(validate_list_sets_and_maps(root, obj))
        if not root.has_rules:
            return errors
        if any(e.type in _BLOCKING for e in errors):
            errors.append(FieldError("<nil>", ErrorType.INVALID, "null", RULES_NOT_CHECKED))
            return errors
        errors.extend(evaluate_rules(root, obj, old))
        return errors


def compile_schema(openapi_v3_schema: Mapping[str, Any]) -> CompiledSchema:
    """Compile a CRD version's schema; raises `InvalidSchema` if a cluster would refuse it."""
    return CompiledSchema(openapi_v3_schema)
