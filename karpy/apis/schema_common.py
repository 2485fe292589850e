"""Schema pieces shared by several kinds: node selector requirements, taints, node class
references, status conditions, and the label-key rules that keep users out of the
``karpenter.sh`` and ``karpenter.k8s.aws`` label domains.

The restricted-domain rules are the AWS flavour of Karpenter's CRDs: the core CRDs only
guard ``karpenter.sh``; the AWS build adds a rule for ``karpenter.k8s.aws`` that lets
through the provider's well-known labels. NodeOverlays allow a shorter list (no
tenancy, capacity-reservation or placement-group keys), exactly as Karpenter's do.
"""

from __future__ import annotations

import re
from typing import Any

from karpy.apis import labels
from karpy.apis.openapi import Rule, Schema, array, integer, obj, string

__all__ = [
    "AWS_LABELS_ALLOWED_IN_OVERLAYS",
    "AWS_LABELS_ALLOWED_IN_TEMPLATES",
    "QUALIFIED_NAME_PATTERN",
    "conditions",
    "label_key_rules",
    "label_map_rules",
    "node_class_ref",
    "requirements",
    "taints",
]

QUALIFIED_NAME_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(\/))?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

_G = labels.AWS_GROUP
# karpenter.k8s.aws keys a NodePool or NodeClaim may name, in Karpenter's order.
AWS_LABELS_ALLOWED_IN_TEMPLATES: tuple[str, ...] = tuple(
    f"{_G}/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "nitro-sandbox",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
        "placement-group-id",
        "placement-group-partition",
    )
)
_NOT_FOR_OVERLAYS = {"instance-tenancy", "capacity-reservation", "placement-group"}
AWS_LABELS_ALLOWED_IN_OVERLAYS: tuple[str, ...] = tuple(
    key
    for key in AWS_LABELS_ALLOWED_IN_TEMPLATES
    if not any(key.split("/", 1)[1].startswith(p) for p in _NOT_FOR_OVERLAYS)
)
CORE_LABELS_ALLOWED = (labels.LABEL_CAPACITY_TYPE, labels.LABEL_NODEPOOL)

_DOMAIN = re.compile(r"^([^/]+)")


def _domain(key: str) -> str:
    """CEL's ``key.find("^([^/]+)")``: everything before the first slash."""
    match = _DOMAIN.search(key)
    return match.group(0) if match else ""


def _cel_list(items: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{i}"' for i in items) + "]"


def _allowed_in_domain(key: str, allowed: tuple[str, ...], domain: str) -> bool:
    return key in allowed or not _domain(key).endswith(domain)


def label_key_rules(*, forbid_nodepool: bool, aws_allowed: tuple[str, ...]) -> tuple[Rule, ...]:
    """Rules on one label key (a requirement's ``key``)."""
    rules = [
        Rule(
            f"self in {_cel_list(CORE_LABELS_ALLOWED)} || "
            f'!self.find("^([^/]+)").endsWith("{labels.GROUP}")',
            f'label domain "{labels.GROUP}" is restricted',
            lambda key: _allowed_in_domain(key, CORE_LABELS_ALLOWED, labels.GROUP),
        )
    ]
    if forbid_nodepool:
        rules.append(
            Rule(
                f'self != "{labels.LABEL_NODEPOOL}"',
                f'label "{labels.LABEL_NODEPOOL}" is restricted',
                lambda key: key != labels.LABEL_NODEPOOL,
            )
        )
    rules += [
        Rule(
            f'self != "{labels.LABEL_HOSTNAME}"',
            f'label "{labels.LABEL_HOSTNAME}" is restricted',
            lambda key: key != labels.LABEL_HOSTNAME,
        ),
        Rule(
            f'self in {_cel_list(aws_allowed)} || !self.find("^([^/]+)").endsWith("{_G}")',
            f'label domain "{_G}" is restricted',
            lambda key: _allowed_in_domain(key, aws_allowed, _G),
        ),
    ]
    return tuple(rules)


def label_map_rules() -> tuple[Rule, ...]:
    """The same rules over every key of a NodePool template's ``labels``."""
    allowed = AWS_LABELS_ALLOWED_IN_TEMPLATES
    return (
        Rule(
            f"self.all(x, x in {_cel_list(CORE_LABELS_ALLOWED)} || "
            f'!x.find("^([^/]+)").endsWith("{labels.GROUP}"))',
            f'label domain "{labels.GROUP}" is restricted',
            lambda m: all(_allowed_in_domain(k, CORE_LABELS_ALLOWED, labels.GROUP) for k in m),
        ),
        Rule(
            f'self.all(x, x != "{labels.LABEL_NODEPOOL}")',
            f'label "{labels.LABEL_NODEPOOL}" is restricted',
            lambda m: labels.LABEL_NODEPOOL not in m,
        ),
        Rule(
            f'self.all(x, x != "{labels.LABEL_HOSTNAME}")',
            f'label "{labels.LABEL_HOSTNAME}" is restricted',
            lambda m: labels.LABEL_HOSTNAME not in m,
        ),
        Rule(
            f'self.all(x, x in {_cel_list(allowed)} || !x.find("^([^/]+)").endsWith("{_G}"))',
            f'label domain "{_G}" is restricted',
            lambda m: all(_allowed_in_domain(k, allowed, _G) for k in m),
        ),
    )


# --- requirements -------------------------------------------------------------------------

_OPERATORS = ("Gte", "Lte", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
_NUMERIC = ("Gt", "Lt", "Gte", "Lte")


def _values(req: dict[str, Any]) -> list[Any]:
    """``x.values`` as CEL reads it: absent values are an evaluation error (KeyError),
    which kube-apiserver reports as "no such key: values evaluating rule: ..."."""
    values: list[Any] = req["values"]
    return values


def _single_non_negative_int(req: dict[str, Any]) -> bool:
    values = _values(req)
    if len(values) != 1 or not isinstance(values[0], str):
        return False
    return re.fullmatch(r"[+-]?[0-9]+", values[0]) is not None and int(values[0]) >= 0


def _numeric_ok(req: dict[str, Any]) -> bool:
    return req.get("operator") not in _NUMERIC or _single_non_negative_int(req)


def _in_has_values(req: dict[str, Any]) -> bool:
    return req.get("operator") != "In" or len(_values(req)) != 0


def _not_in_has_values(req: dict[str, Any]) -> bool:
    return req.get("operator") != "NotIn" or len(_values(req)) != 0


def _enough_for_min_values(req: dict[str, Any]) -> bool:
    if req.get("operator") != "In" or "minValues" not in req:
        return True
    return bool(len(_values(req)) >= req["minValues"])


_NUMERIC_CEL = (
    "(x.operator == 'Gt' || x.operator == 'Lt' || x.operator == 'Gte' || x.operator == 'Lte')"
    " ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true"
)


def requirements(
    description: str, *, forbid_nodepool: bool = False, overlay: bool = False
) -> Schema:
    """A NodePool/NodeClaim requirement list, or (``overlay``) a NodeOverlay's, which has
    no ``minValues`` and also insists that ``NotIn`` name values. NodePool templates may
    not name ``karpenter.sh/nodepool`` (``forbid_nodepool``); NodeClaims carry it."""
    properties = {
        "key": Schema(
            "string",
            "The node label the requirement applies to.",
            pattern=QUALIFIED_NAME_PATTERN,
            max_length=316,
            rules=label_key_rules(
                forbid_nodepool=forbid_nodepool,
                aws_allowed=(
                    AWS_LABELS_ALLOWED_IN_OVERLAYS if overlay else AWS_LABELS_ALLOWED_IN_TEMPLATES
                ),
            ),
        ),
        "operator": string(
            "How the label's value relates to values: In, NotIn, Exists, DoesNotExist, "
            "Gt, Lt, Gte or Lte.",
            enum=_OPERATORS,
        ),
        "values": array(
            string(),
            "The values to compare with: at least one for In, exactly one integer for "
            "Gt, Lt, Gte and Lte, none for Exists and DoesNotExist.",
            list_type="atomic",
            pattern=LABEL_VALUE_PATTERN,
            max_length=63,
        ),
    }
    if not overlay:
        properties["minValues"] = integer(
            "The least number of distinct values of key that the instance types "
            "considered for a node must still offer (alpha).",
            minimum=1,
            maximum=50,
        )
    in_rule = Rule(
        "self.all(x, x.operator == 'In' ? x.values.size() != 0 : true)",
        "requirements with operator 'In' must have a value defined",
        lambda reqs: all(_in_has_values(r) for r in reqs),
    )
    if overlay:
        rules: tuple[Rule, ...] = (
            Rule(
                "self.all(x, x.operator == 'NotIn' ? x.values.size() != 0 : true)",
                "requirements with operator 'NotIn' must have a value defined",
                lambda reqs: all(_not_in_has_values(r) for r in reqs),
            ),
            in_rule,
            Rule(
                f"self.all(x, {_NUMERIC_CEL})",
                "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single "
                "positive integer value",
                lambda reqs: all(_numeric_ok(r) for r in reqs),
            ),
        )
    else:
        rules = (
            in_rule,
            Rule(
                f"self.all(x, {_NUMERIC_CEL})",
                "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single "
                "positive integer value",
                lambda reqs: all(_numeric_ok(r) for r in reqs),
            ),
            Rule(
                "self.all(x, (x.operator == 'In' && has(x.minValues)) ? "
                "x.values.size() >= x.minValues : true)",
                "requirements with 'minValues' must have at least that many values "
                "specified in the 'values' field",
                lambda reqs: all(_enough_for_min_values(r) for r in reqs),
            ),
        )
    item = obj(
        "A node selector requirement.",
        properties,
        required=("key", "operator"),
    )
    return array(item, description, max_items=100, list_type="atomic", rules=rules)


# --- taints ---------------------------------------------------------------------------


def taints(description: str) -> Schema:
    item = obj(
        "A taint: nodes repel pods that do not tolerate it.",
        {
            "effect": string(
                "What happens to pods that do not tolerate the taint.",
                enum=("NoSchedule", "PreferNoSchedule", "NoExecute"),
            ),
            "key": string("The taint key.", pattern=QUALIFIED_NAME_PATTERN, min_length=1),
            "timeAdded": string(
                "When a NoExecute taint was added (set by the node lifecycle controller).",
                format="date-time",
            ),
            "value": string("The taint value.", pattern=QUALIFIED_NAME_PATTERN),
        },
        required=("effect", "key"),
    )
    return array(item, description, list_type="atomic")


# --- node class references -----------------------------------------------------------------


def node_class_ref(*, immutable_group_kind: bool) -> Schema:
    def not_empty(field: str) -> Rule:
        return Rule("self != ''", f"{field} may not be empty", lambda v: v != "")

    rules: tuple[Rule, ...] = ()
    if immutable_group_kind:
        rules = (
            Rule(
                "self.group == oldSelf.group",
                "nodeClassRef.group is immutable",
                lambda new, old: new["group"] == old["group"],
            ),
            Rule(
                "self.kind == oldSelf.kind",
                "nodeClassRef.kind is immutable",
                lambda new, old: new["kind"] == old["kind"],
            ),
        )
    return obj(
        "The node class (e.g. an EC2NodeClass) holding the cloud-specific configuration.",
        {
            "group": string(
                "API group of the node class.", pattern="^[^/]*$", rules=(not_empty("group"),)
            ),
            "kind": string("Kind of the node class.", rules=(not_empty("kind"),)),
            "name": string("Name of the node class.", rules=(not_empty("name"),)),
        },
        required=("group", "kind", "name"),
        rules=rules,
    )


# --- status conditions ----------------------------------------------------------------------

_CONDITION_TYPE_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


def conditions(*, nodeclaim: bool = False, list_map: bool = True) -> Schema:
    """Status conditions. NodeClaims allow an empty reason and need no message; the
    EC2NodeClass list is not declared as a map (both as in Karpenter's CRDs)."""
    reason_pattern = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    if nodeclaim:
        reason_pattern = r"^([A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?|)$"
    item = obj(
        "One aspect of the object's current state.",
        {
            "lastTransitionTime": string(
                "When the condition last changed status.", format="date-time"
            ),
            "message": string("A human readable explanation.", max_length=32768),
            "observedGeneration": integer(
                "The metadata.generation the condition was computed from.",
                format="int64",
                minimum=0,
            ),
            "reason": Schema(
                "string",
                "A CamelCase word saying why the condition has its status.",
                pattern=reason_pattern,
                max_length=1024,
                min_length=None if nodeclaim else 1,
            ),
            "status": string("True, False or Unknown.", enum=("True", "False", "Unknown")),
            "type": string(
                "The condition's name.", pattern=_CONDITION_TYPE_PATTERN, max_length=316
            ),
        },
        required=("lastTransitionTime", "status", "type")
        if nodeclaim
        else ("lastTransitionTime", "message", "reason", "status", "type"),
    )
    if list_map:
        return array(item, "Conditions of the object.", list_type="map", list_map_keys=("type",))
    return array(item, "Conditions of the object.")
