"""The wire schema of ``karpenter.sh/v1`` NodePool: fields, defaults, bounds and CEL
rules, equivalent to the AWS build of Karpenter's CRD (v1.14, including static pools
with ``replicas`` and the ``Balanced`` consolidation policy)."""

from __future__ import annotations

from typing import Any

from karpy.apis import labels, schema_common
from karpy.apis.crd import CustomResource, PrinterColumn
from karpy.apis.disruption import ConsolidationPolicy, DisruptionReason
from karpy.apis.duration import (
    BUDGET_DURATION_PATTERN,
    DURATION_PATTERN,
    NILLABLE_DURATION_PATTERN,
)
from karpy.apis.openapi import (
    Rule,
    Schema,
    array,
    integer,
    kind_schema,
    obj,
    quantity_map,
    string,
)

__all__ = ["BUDGET_REASONS", "CONSOLIDATION_POLICIES", "NODEPOOL", "NODEPOOL_SCHEMA"]

CONSOLIDATION_POLICIES = tuple(policy.value for policy in ConsolidationPolicy)
# in the CRD's order
BUDGET_REASONS = tuple(
    reason.value
    for reason in (
        DisruptionReason.UNDERUTILIZED,
        DisruptionReason.EMPTY,
        DisruptionReason.DRIFTED,
        DisruptionReason.UNHEALTHY,
    )
)
_CRON_PATTERN = (
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)


def expire_after(description: str) -> Schema:
    return string(description, pattern=NILLABLE_DURATION_PATTERN, default="720h")


def termination_grace_period(description: str) -> Schema:
    return string(description, pattern=DURATION_PATTERN)


_budget = obj(
    "A limit on how many of the pool's nodes voluntary disruption may take at once, "
    "optionally only during a recurring window.",
    {
        "duration": string(
            "How long the budget stays active after each time the schedule fires "
            "(hours and minutes only).",
            pattern=BUDGET_DURATION_PATTERN,
        ),
        "nodes": string(
            "The most nodes that may be disrupted at once: a count, or a percentage of "
            "the pool's nodes rounded up.",
            pattern=r"^((100|[0-9]{1,2})%|[0-9]+)$",
            default="10%",
        ),
        "reasons": array(
            string(enum=BUDGET_REASONS),
            "Disruption reasons the budget applies to; all reasons when omitted.",
            max_items=50,
            list_type="set",
        ),
        "schedule": string(
            "When the budget becomes active, as a cron expression in UTC (or a macro "
            "such as @daily); always active when omitted.",
            pattern=_CRON_PATTERN,
        ),
    },
    required=("nodes",),
)

_disruption = obj(
    "How and when Karpenter may voluntarily remove or replace the pool's nodes.",
    {
        "budgets": array(
            _budget,
            "Limits on concurrent disruptions; the most restrictive active budget wins.",
            max_items=50,
            list_type="atomic",
            default=[{"nodes": "10%"}],
            rules=(
                Rule(
                    "self.all(x, has(x.schedule) == has(x.duration))",
                    "'schedule' must be set with 'duration'",
                    lambda budgets: all(("schedule" in b) == ("duration" in b) for b in budgets),
                ),
            ),
        ),
        "consolidateAfter": string(
            "How long a node must go without pods arriving or leaving before it may be "
            "consolidated; Never turns consolidation off.",
            pattern=NILLABLE_DURATION_PATTERN,
            # Optional since Karpenter v1.15 (#3220): 0s when left out.
            default="0s",
        ),
        "consolidationPolicy": string(
            "Which nodes consolidation may act on: only empty ones, or also underutilized "
            "ones (Balanced weighs savings against disruption).",
            enum=CONSOLIDATION_POLICIES,
            default=ConsolidationPolicy.WHEN_EMPTY_OR_UNDERUTILIZED.value,
        ),
    },
    default={"consolidateAfter": "0s"},
)

_template_spec = obj(
    "The spec given to every NodeClaim the pool creates.",
    {
        "expireAfter": expire_after(
            "Age after which a node is replaced regardless of disruption budgets, "
            "counted from the NodeClaim's creation; Never keeps nodes forever."
        ),
        "nodeClassRef": schema_common.node_class_ref(immutable_group_kind=True),
        "requirements": schema_common.requirements(
            "Constraints on the nodes the pool may launch (instance types, zones, "
            "capacity types, architectures, ...).",
            forbid_nodepool=True,
        ),
        "startupTaints": schema_common.taints(
            "Taints put on a node at launch that something else (typically a "
            "DaemonSet) removes; pods need not tolerate them to be provisioned for."
        ),
        "taints": schema_common.taints("Taints put on every node of the pool."),
        "terminationGracePeriod": termination_grace_period(
            "The longest a node may take to drain once its deletion starts; after it, "
            "remaining pods are deleted even if PDBs or do-not-disrupt forbid it."
        ),
    },
    required=("nodeClassRef", "requirements"),
)

_template = obj(
    "The template of the NodeClaims (and so nodes) the pool launches.",
    {
        "metadata": obj(
            "Labels and annotations put on every NodeClaim and node of the pool.",
            {
                "annotations": Schema(
                    "object",
                    "Annotations for the pool's nodes.",
                    additional_properties=string(),
                    map_type="granular",
                ),
                "labels": Schema(
                    "object",
                    "Labels for the pool's nodes; they also act as requirements.",
                    additional_properties=string(
                        max_length=63,
                        pattern=schema_common.LABEL_VALUE_PATTERN,
                    ),
                    max_properties=100,
                    map_type="atomic",
                    rules=schema_common.label_map_rules(),
                ),
            },
        ),
        "spec": _template_spec,
    },
    required=("spec",),
)


def _static_limits_ok(spec: dict[str, Any]) -> bool:
    if "replicas" not in spec:
        return True
    limits = spec.get("limits", {})
    return len(limits) == 0 or (len(limits) == 1 and "nodes" in limits)


_spec = obj(
    "What nodes the pool may launch and how Karpenter may disrupt them.",
    {
        "disruption": _disruption,
        "limits": quantity_map(
            "Caps on the total resources of the pool's nodes (cpu, memory, nodes, ...); "
            "no node is launched that would exceed one."
        ),
        "replicas": integer(
            "Makes the pool static: it keeps exactly this many nodes whatever the pending "
            "pods, and consolidation does not apply.",
            format="int64",
            minimum=0,
        ),
        "template": _template,
        "weight": integer(
            "Priority among pools: higher weights are tried first (unset counts as 0).",
            format="int32",
            minimum=1,
            maximum=100,
        ),
    },
    required=("template",),
    rules=(
        Rule(
            "has(self.replicas) == has(oldSelf.replicas)",
            "Cannot transition NodePool between static (replicas set) and dynamic "
            "(replicas unset) provisioning modes",
            lambda new, old: ("replicas" in new) == ("replicas" in old),
        ),
        Rule(
            "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || "
            "(size(self.limits) == 1 && 'nodes' in self.limits))",
            "only 'limits.nodes' is supported on static NodePools",
            _static_limits_ok,
        ),
        Rule(
            "!has(self.replicas) || !has(self.weight)",
            "'weight' is not supported on static NodePools",
            lambda spec: "replicas" not in spec or "weight" not in spec,
        ),
    ),
)

_status = obj(
    "The pool's observed state.",
    {
        "conditions": schema_common.conditions(),
        "nodeClassObservedGeneration": integer(
            "The node class generation last seen; a change resets NodeRegistrationHealthy.",
            format="int64",
        ),
        "nodes": integer("How many nodes the pool has.", format="int64", default=0),
        "resources": quantity_map("Total capacity of the pool's nodes, with a nodes count."),
    },
)

NODEPOOL_SCHEMA = kind_schema(
    "A NodePool tells Karpenter which nodes it may launch for pending pods, with which "
    "labels and taints, and how it may later consolidate, replace or expire them.",
    _spec,
    _status,
    required=("spec",),
)

NODEPOOL = CustomResource(
    group=labels.GROUP,
    version="v1",
    kind="NodePool",
    plural="nodepools",
    schema=NODEPOOL_SCHEMA,
    printer_columns=(
        PrinterColumn("NodeClass", ".spec.template.spec.nodeClassRef.name"),
        PrinterColumn("Nodes", ".status.nodes"),
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Weight", ".spec.weight", "integer", priority=1),
        PrinterColumn("CPU", ".status.resources.cpu", priority=1),
        PrinterColumn("Memory", ".status.resources.memory", priority=1),
    ),
    scale=(".spec.replicas", ".status.nodes"),
)
