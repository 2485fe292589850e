"""The wire schema of ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer: the
cluster-autoscaler's buffer API, which Karpenter ships a CRD for and karpy serves the
same (scope, names, printer columns, validation rules), with its own descriptions."""

from __future__ import annotations

from karpy.apis import schema_common
from karpy.apis.crd import CustomResource, PrinterColumn
from karpy.apis.openapi import Rule, Schema, integer, kind_schema, obj, quantity_map, string

__all__ = ["ACTIVE_CAPACITY", "CAPACITYBUFFER", "CAPACITYBUFFER_SCHEMA", "GROUP"]

GROUP = "autoscaling.x-k8s.io"
ACTIVE_CAPACITY = "buffer.x-k8s.io/active-capacity"


def _local_ref(description: str) -> Schema:
    return obj(description, {"name": string("The PodTemplate's name.", min_length=1)},
               required=("name",))  # fmt: skip


_spec = obj(
    "What one chunk of the buffer looks like and how many chunks to keep room for.",
    {
        "limits": quantity_map(
            "A ceiling on the chunks' summed requests; alone, as many chunks as fit under it."
        ),
        "percentage": integer(
            "Chunks as a percentage of the scalableRef's replicas, rounded up (at least 1).",
            format="int32",
            minimum=0,
        ),
        "podTemplateRef": _local_ref("A PodTemplate in the buffer's namespace: one chunk."),
        "provisioningStrategy": string(
            "How the buffer is used; the active-capacity strategy keeps the room at all times.",
            default=ACTIVE_CAPACITY,
        ),
        "replicas": integer(
            "How many chunks; with percentage, the larger of the two.",
            format="int32",
            minimum=0,
        ),
        "scalableRef": obj(
            "A Deployment, StatefulSet or ReplicaSet in the buffer's namespace whose pod "
            "template is one chunk.",
            {
                "apiGroup": string("The referent's API group (empty: the core group)."),
                "kind": string("The referent's kind.", min_length=1),
                "name": string("The referent's name.", min_length=1),
            },
            required=("kind", "name"),
        ),
    },
    rules=(
        Rule(
            "!has(self.podTemplateRef) || has(self.replicas) || has(self.limits)",
            "If podTemplateRef is set, replicas or limits must also be set",
            lambda spec: "podTemplateRef" not in spec or "replicas" in spec or "limits" in spec,
        ),
        Rule(
            "!(has(self.podTemplateRef) && has(self.scalableRef))",
            "You must define either PodTemplateRef or ScalableRef, but not both",
            lambda spec: not ("podTemplateRef" in spec and "scalableRef" in spec),
        ),
    ),
)

_status = obj(
    "What the autoscaler resolved the buffer to.",
    {
        "conditions": schema_common.conditions(),
        "podTemplateGeneration": integer(
            "The generation of the PodTemplate the chunks were read from.", format="int64"
        ),
        "podTemplateRef": _local_ref("The PodTemplate the chunks were read from."),
        "provisioningStrategy": string("The strategy in use."),
        "replicas": integer("How many chunks the autoscaler keeps room for.", format="int32"),
    },
)

CAPACITYBUFFER_SCHEMA = kind_schema(
    "A CapacityBuffer asks the autoscaler to keep room for pods that do not exist yet.",
    _spec,
    _status,
    required=("spec",),
)

CAPACITYBUFFER = CustomResource(
    group=GROUP,
    version="v1beta1",
    kind="CapacityBuffer",
    plural="capacitybuffers",
    schema=CAPACITYBUFFER_SCHEMA,
    short_names=("cb",),
    categories=("autoscaling",),
    scope="Namespaced",
    printer_columns=(
        PrinterColumn("Strategy", ".spec.provisioningStrategy"),
        PrinterColumn("PodTemplate", ".status.podTemplateRef.name"),
        PrinterColumn("Replicas", ".status.replicas", "integer"),
        PrinterColumn("ConditionsType", ".status.conditions[*].type"),
        PrinterColumn("ConditionsStatus", ".status.conditions[*].status"),
        PrinterColumn("ConditionsReason", ".status.conditions[*].reason"),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
    ),
)
