"""The wire schema of ``karpenter.sh/v1`` NodeClaim, equivalent to the AWS build of
Karpenter's CRD: the spec is immutable once created, and requirements follow the
NodePool rules except that ``karpenter.sh/nodepool`` is allowed (Karpenter sets it)."""

from __future__ import annotations

from karpy.apis import labels, schema_common
from karpy.apis.crd import CustomResource, PrinterColumn
from karpy.apis.nodepool_schema import expire_after, termination_grace_period
from karpy.apis.openapi import Rule, kind_schema, obj, quantity_map, string

__all__ = ["NODECLAIM", "NODECLAIM_SCHEMA"]

_spec = obj(
    "The node Karpenter is asked to launch: its constraints, taints and the resources "
    "it was sized for.",
    {
        "expireAfter": expire_after(
            "Age after which the node is replaced; Never keeps it forever."
        ),
        "nodeClassRef": schema_common.node_class_ref(immutable_group_kind=False),
        "requirements": schema_common.requirements(
            "Constraints the launched instance must satisfy."
        ),
        "resources": obj(
            "Resources the node must have room for.",
            {
                "requests": quantity_map(
                    "Requests of the pods (and daemons) the node was launched for."
                )
            },
        ),
        "startupTaints": schema_common.taints(
            "Taints put on the node at launch that something else is expected to remove."
        ),
        "taints": schema_common.taints("Taints put on the node."),
        "terminationGracePeriod": termination_grace_period(
            "The longest the node may take to drain once its deletion starts."
        ),
    },
    required=("nodeClassRef", "requirements"),
    rules=(Rule("self == oldSelf", "spec is immutable", lambda new, old: new == old),),
)

_status = obj(
    "What was launched and how far the node got.",
    {
        "allocatable": quantity_map("Resources expected to be allocatable on the node."),
        "capacity": quantity_map("Resources the instance provides."),
        "conditions": schema_common.conditions(nodeclaim=True),
        "imageID": string("The image the instance was launched from."),
        "lastPodEventTime": string(
            "When a pod last scheduled to or left the node; consolidation waits "
            "consolidateAfter from here.",
            format="date-time",
        ),
        "nodeName": string("Name of the node that registered for this claim."),
        "providerID": string("The cloud provider's ID of the instance."),
    },
)

NODECLAIM_SCHEMA = kind_schema(
    "A NodeClaim is Karpenter's request for one node: created when pods need capacity "
    "(or by hand), it tracks the instance through launch, registration and "
    "initialization until it is deleted.",
    _spec,
    _status,
    required=("spec",),
)

NODECLAIM = CustomResource(
    group=labels.GROUP,
    version="v1",
    kind="NodeClaim",
    plural="nodeclaims",
    schema=NODECLAIM_SCHEMA,
    printer_columns=(
        PrinterColumn("Type", ".metadata.labels.node\\.kubernetes\\.io/instance-type"),
        PrinterColumn("Capacity", ".metadata.labels.karpenter\\.sh/capacity-type"),
        PrinterColumn("Zone", ".metadata.labels.topology\\.kubernetes\\.io/zone"),
        PrinterColumn("Node", ".status.nodeName"),
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("ImageID", ".status.imageID", priority=1),
        PrinterColumn("ID", ".status.providerID", priority=1),
        PrinterColumn("NodePool", ".metadata.labels.karpenter\\.sh/nodepool", priority=1),
        PrinterColumn("NodeClass", ".spec.nodeClassRef.name", priority=1),
        PrinterColumn("Drifted", '.status.conditions[?(@.type=="Drifted")].status', priority=1),
    ),
)
