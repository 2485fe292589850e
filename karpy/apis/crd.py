"""CustomResourceDefinition documents for karpy's kinds.

A `CustomResource` names a kind the way a CRD does (group, version, plural, short names,
printer columns, subresources) and holds the kind's `Schema`; `to_crd` turns it into the
``apiextensions.k8s.io/v1`` document that ``python -m karpy.apis.crdgen`` writes to
``deploy/crds/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from karpy.apis.openapi import Schema

__all__ = ["CustomResource", "PrinterColumn"]


@attrs.frozen(slots=True)
class PrinterColumn:
    """A column of ``kubectl get`` (priority 1 = only with ``-o wide``)."""

    name: str
    json_path: str
    type: str = "string"
    priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"jsonPath": self.json_path, "name": self.name}
        if self.priority:
            out["priority"] = self.priority
        out["type"] = self.type
        return out


@attrs.frozen(slots=True)
class CustomResource:
    group: str
    version: str
    kind: str
    plural: str
    schema: Schema
    printer_columns: tuple[PrinterColumn, ...] = ()
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ("karpenter",)
    scope: str = "Cluster"
    # (specReplicasPath, statusReplicasPath) of a scale subresource, if the kind has one.
    scale: tuple[str, str] | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    @property
    def name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def filename(self) -> str:
        return f"{self.group}_{self.plural}.yaml"

    def to_crd(self) -> dict[str, Any]:
        names: dict[str, Any] = {
            "categories": list(self.categories),
            "kind": self.kind,
            "listKind": f"{self.kind}List",
            "plural": self.plural,
        }
        if self.short_names:
            names["shortNames"] = list(self.short_names)
        names["singular"] = self.kind.lower()
        subresources: dict[str, Any] = {}
        if self.scale is not None:
            subresources["scale"] = {
                "specReplicasPath": self.scale[0],
                "statusReplicasPath": self.scale[1],
            }
        subresources["status"] = {}
        version: dict[str, Any] = {}
        if self.printer_columns:
            version["additionalPrinterColumns"] = [c.to_dict() for c in self.printer_columns]
        version.update(
            {
                "name": self.version,
                "schema": {"openAPIV3Schema": self.schema.to_openapi()},
                "served": True,
                "storage": True,
                "subresources": subresources,
            }
        )
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": self.name},
            "spec": {
                "group": self.group,
                "names": names,
                "scope": self.scope,
                "versions": [version],
            },
        }
