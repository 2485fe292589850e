"""The wire schema of ``karpenter.sh/v1alpha1`` NodeOverlay, equivalent to the AWS build
of Karpenter's CRD."""

from __future__ import annotations

from karpy.apis import labels, schema_common
from karpy.apis.crd import CustomResource, PrinterColumn
from karpy.apis.openapi import Rule, Schema, integer, obj, quantity_map, string

__all__ = ["NODEOVERLAY", "NODEOVERLAY_SCHEMA", "RESTRICTED_OVERLAY_CAPACITY"]

# Resources every instance type reports, which an overlay may not add to.
RESTRICTED_OVERLAY_CAPACITY = ("cpu", "memory", "ephemeral-storage", "pods")

_spec = obj(
    "Which instance types the overlay applies to and what it changes about them.",
    {
        "capacity": quantity_map(
            "Extended resources to add to the matching instance types (cpu, memory, "
            "ephemeral-storage and pods cannot be overridden).",
            rules=(
                Rule(
                    "self.all(x, !(x in ['cpu', 'memory', 'ephemeral-storage', 'pods']))",
                    "invalid resource restricted",
                    lambda capacity: not any(k in RESTRICTED_OVERLAY_CAPACITY for k in capacity),
                ),
            ),
        ),
        "price": string(
            "A price that replaces the matching offerings' price.",
            pattern=r"^\d+(\.\d+)?$",
        ),
        "priceAdjustment": string(
            "A change to the matching offerings' price: a signed amount (-0.5, +1) or a "
            "percentage (+10%, -15%, at most -100%).",
            pattern=r"^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$",
        ),
        "requirements": schema_common.requirements(
            "Selects the instance types (and offerings) the overlay applies to.",
            overlay=True,
        ),
        "weight": integer(
            "Precedence among overlays that match the same instance type: the highest "
            "weight wins (unset counts as 0).",
            format="int32",
            minimum=1,
            maximum=10000,
        ),
    },
    required=("requirements",),
    rules=(
        Rule(
            "!has(self.price) || !has(self.priceAdjustment)",
            "cannot set both 'price' and 'priceAdjustment'",
            lambda spec: "price" not in spec or "priceAdjustment" not in spec,
        ),
    ),
)

NODEOVERLAY_SCHEMA = obj(
    "A NodeOverlay changes what Karpenter believes about some instance types, their "
    "price or extra resources, without changing the cloud.",
    {
        "apiVersion": string("The versioned schema of this object."),
        "kind": string("The REST resource this object represents."),
        "metadata": Schema("object"),
        "spec": _spec,
        "status": obj(
            "Whether the overlay is valid and in use.",
            {"conditions": schema_common.conditions()},
        ),
    },
    required=("spec",),
)

NODEOVERLAY = CustomResource(
    group=labels.GROUP,
    version="v1alpha1",
    kind="NodeOverlay",
    plural="nodeoverlays",
    schema=NODEOVERLAY_SCHEMA,
    short_names=("overlays",),
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Weight", ".spec.weight", "integer", priority=1),
    ),
)
