"""Structural-schema handling of custom resources, as kube-apiserver's apiextensions
server does it: defaulting, pruning, OpenAPI v3 validation and CEL
``x-kubernetes-validations`` rules.

INTERFACE PLACEHOLDER: the emulator calls exactly these three methods; their real
bodies are being written (defaulting, pruning, validation, CEL). Until then they accept
everything unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.fielderrors import FieldError


class CompiledSchema:
    """One CRD version's ``openAPIV3Schema``, compiled once when the CRD is stored."""

    def __init__(self, openapi_v3_schema: Mapping[str, Any]) -> None:
        self.openapi_v3_schema = openapi_v3_schema

    def apply_defaults(self, obj: dict[str, Any]) -> None:
        """Fill in schema ``default`` values, in place (create, update, and read)."""

    def prune(self, obj: dict[str, Any]) -> None:
        """Drop fields the schema does not declare, in place (except under
        ``x-kubernetes-preserve-unknown-fields``); ``apiVersion``, ``kind`` and
        ``metadata`` are never pruned."""

    def validate(self, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[FieldError]:
        """Every schema and CEL violation of ``obj``; ``old`` is the stored object on
        update (for transition rules using ``oldSelf``), None on create."""
        return []


def compile_schema(openapi_v3_schema: Mapping[str, Any]) -> CompiledSchema:
    return CompiledSchema(openapi_v3_schema)
