"""The records cluster state keeps, one per object, and their projections from dicts.

Scheduling reads the scheduler's own records (`karpy.scheduling.pods.Pod`,
`karpy.scheduling.nodes.Node`, the volume records, the API models for NodePools and
NodeClaims) so a round needs no conversion. Disruption and lifecycle need a few facts
those records leave out (a pod's priority, its controller owner, the raw
``karpenter.sh/do-not-disrupt`` value, readiness, exact deletion time; a node's Ready
condition; a budget's live ``disruptionsAllowed``), so where a kind needs more, its state
record *wraps* the scheduling record and adds just those fields. Every record carries the
object's resourceVersion, so a stored record can be compared with the API's current one.

A projection reads a dict and returns the record. An object karpy cannot read makes it
raise what reading it raised (``TypeError``, ``ValueError``, ``KeyError``,
``AttributeError``, or a model's `InvalidObject`); the informer, the one place that
catches these, hands cluster state an `UnreadableObject` placeholder instead (kept by
key, never taken for absent: `karpy.kube.unreadable`), logs it, counts it and sends a
Warning Event.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.capacitybuffer import CapacityBuffer
from karpy.apis.core import Taint, parse_time
from karpy.apis.labels import ANNOTATION_DO_NOT_DISRUPT, ANNOTATION_DO_NOT_REPAIR
from karpy.apis.nodeclaim import NodeClaim
from karpy.apis.nodeoverlay import NodeOverlay
from karpy.apis.nodepool import NodePool
from karpy.scheduling.buffers import template_pod
from karpy.scheduling.daemonsets import daemonset_pod
from karpy.scheduling.nodes import Node, node_from_dict
from karpy.scheduling.pods import Pod, pod_from_dict
from karpy.scheduling.reschedule import DisruptionBudget, pdb_from_dict
from karpy.scheduling.volumes import (
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

__all__ = [
    "BudgetInfo",
    "DaemonSetInfo",
    "NamespaceInfo",
    "NodeCondition",
    "NodeInfo",
    "NodeLease",
    "OwnerRef",
    "PodInfo",
    "PodTemplateInfo",
    "budget_info",
    "capacitybuffer",
    "daemonset_info",
    "namespace_info",
    "node_info",
    "node_lease",
    "nodeclaim",
    "nodeoverlay",
    "nodepool",
    "pod_info",
    "podtemplate_info",
    "pv",
    "pvc",
    "storage_class",
]

_intern = sys.intern
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@attrs.frozen(slots=True)
class OwnerRef:
    kind: str
    name: str
    uid: str = ""
    api_version: str = ""


def _controller(meta: Mapping[str, Any]) -> OwnerRef | None:
    owners = meta.get("ownerReferences") or ()
    chosen = next((o for o in owners if o.get("controller")), owners[0] if owners else None)
    if chosen is None:
        return None
    return OwnerRef(
        _intern(str(chosen.get("kind", ""))), str(chosen.get("name", "")),
        str(chosen.get("uid", "")),
    )  # fmt: skip


def _condition(status: Mapping[str, Any], type_: str) -> str | None:
    for condition in status.get("conditions") or ():
        if condition.get("type") == type_:
            return str(condition.get("status", ""))
    return None


def _true_since(status: Mapping[str, Any], type_: str) -> datetime | None:
    """When condition ``type_`` last turned True, if it is True now."""
    for condition in status.get("conditions") or ():
        if condition.get("type") == type_ and condition.get("status") == "True":
            return parse_time(condition.get("lastTransitionTime"))
    return None


# --- pods ------------------------------------------------------------------------------


@attrs.frozen(slots=True)
class PodInfo:
    """A pod as cluster state keeps it: the scheduler's `Pod` plus disruption's facts."""

    pod: Pod
    resource_version: str
    priority: int = 0
    owner: OwnerRef | None = None
    do_not_disrupt: str | None = None  # the annotation's raw value, when present
    ready: bool = False
    deletion_timestamp: datetime | None = None
    # What a drain reads (karpy.lifecycle.termination): the eviction group, the deadline
    # rule's grace, and the start a do-not-disrupt duration counts from.
    priority_class_name: str = ""
    termination_grace_seconds: int | None = None
    start_time: datetime | None = None
    # controller.kubernetes.io/pod-deletion-cost: its value as an int (0 when absent or
    # not one) and its text as written (None when absent), which the deletion-cost
    # controller compares with the value it wants before writing.
    deletion_cost: int = 0
    deletion_cost_text: str | None = None
    # karpenter.sh/disruption-cost, the user's say in the pod's eviction cost: None when
    # absent, 0 when present but not an int32 (it still shadows pod-deletion-cost).
    disruption_cost: int | None = None
    # When the Ready condition last turned True (None while not ready): the end of the
    # pod's startup, which karpenter_pods_startup_duration_seconds measures.
    ready_since: datetime | None = None

    @property
    def key(self) -> str:
        return self.pod.key

    @property
    def provisionable(self) -> bool:
        """Pending because kube-scheduler found no node (PodScheduled=False,
        Unschedulable), unbound, not nominated, not a DaemonSet or static pod."""
        return self.pod.is_provisionable and self.pod.is_active

    @property
    def named(self) -> bool:
        """Active, unbound, with a nominatedNodeName (`Pod.awaits_nominated_node`)."""
        return self.pod.awaits_nominated_node and self.pod.is_active


def pod_info(data: Mapping[str, Any]) -> PodInfo:
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    pod = pod_from_dict(data)
    annotations = meta.get("annotations") or {}
    do_not_disrupt = annotations.get(ANNOTATION_DO_NOT_DISRUPT)
    grace = spec.get("terminationGracePeriodSeconds")
    return PodInfo(
        pod=pod,
        resource_version=str(meta.get("resourceVersion", "")),
        priority=int(spec.get("priority") or 0),
        owner=_controller(meta),
        do_not_disrupt=None if do_not_disrupt is None else str(do_not_disrupt),
        ready=_condition(status, "Ready") == "True",
        deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
        priority_class_name=_intern(str(spec.get("priorityClassName") or "")),
        termination_grace_seconds=None if grace is None else int(grace),
        start_time=parse_time(status.get("startTime")),
        deletion_cost=_int_or_zero(annotations.get(POD_DELETION_COST)),
        deletion_cost_text=_text_or_none(annotations.get(POD_DELETION_COST)),
        disruption_cost=_int32_or_zero(annotations[DISRUPTION_COST])
        if DISRUPTION_COST in annotations
        else None,
        ready_since=_true_since(status, "Ready"),
    )


POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
DISRUPTION_COST = "karpenter.sh/disruption-cost"
_INT32 = range(-(2**31), 2**31)
_DECIMAL = re.compile(r"[+-]?[0-9]+")


def _int_or_zero(value: Any) -> int:
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


def _int32_or_zero(value: Any) -> int:
    """Karpenter parses disruption-cost as a base-10 int32; anything else counts 0."""
    text = str(value)
    if _DECIMAL.fullmatch(text) is None:
        return 0
    number = int(text)
    return number if number in _INT32 else 0


def _text_or_none(value: Any) -> str | None:
    return None if value is None else _intern(str(value))


# --- nodes -----------------------------------------------------------------------------


@attrs.frozen(slots=True)
class NodeCondition:
    type: str
    status: str
    last_transition_time: datetime | None = None
    reason: str = ""  # what reason-aware repair policies match (`RepairPolicy.reason_regex`)


@attrs.frozen(slots=True)
class NodeInfo:
    """A node: the scheduler's `Node` plus what the lifecycle controllers read and write
    back: readiness and conditions, timestamps, finalizers, owners, and the taints exactly
    as ``spec.taints`` lists them (the scheduler's view adds a pseudo-taint for
    ``spec.unschedulable``, which must never be written back)."""

    node: Node
    resource_version: str
    ready: bool = False
    creation_timestamp: datetime | None = None
    deletion_timestamp: datetime | None = None
    uid: str = ""
    finalizers: tuple[str, ...] = ()
    owners: tuple[OwnerRef, ...] = ()
    spec_taints: tuple[Taint, ...] = ()
    conditions: tuple[NodeCondition, ...] = ()
    do_not_disrupt: str | None = None  # the karpenter.sh/do-not-disrupt annotation
    do_not_repair: str | None = None  # the karpenter.sh/do-not-repair annotation
    boot_id: str = ""  # status.nodeInfo.bootID: a new one after each reboot

    def condition(self, type_: str) -> NodeCondition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    @property
    def name(self) -> str:
        return self.node.name

    @property
    def provider_id(self) -> str:
        return self.node.provider_id


def _owner(ref: Mapping[str, Any]) -> OwnerRef:
    return OwnerRef(str(ref.get("kind", "")), str(ref.get("name", "")), str(ref.get("uid", "")),
                    str(ref.get("apiVersion", "")))  # fmt: skip


def node_info(data: Mapping[str, Any]) -> NodeInfo:
    meta = data.get("metadata") or {}
    node = node_from_dict(data)
    status = data.get("status") or {}
    conditions = tuple(
        NodeCondition(_intern(str(c.get("type", ""))), _intern(str(c.get("status", ""))),
                      parse_time(c.get("lastTransitionTime")),
                      _intern(str(c.get("reason") or "")))
        for c in status.get("conditions") or ()
    )  # fmt: skip
    raw_taints = (data.get("spec") or {}).get("taints") or ()
    return NodeInfo(
        node=node,
        resource_version=str(meta.get("resourceVersion", "")),
        ready=_condition(status, "Ready") == "True",
        creation_timestamp=parse_time(meta.get("creationTimestamp")),
        deletion_timestamp=parse_time(meta.get("deletionTimestamp")),
        uid=str(meta.get("uid", "")),
        finalizers=tuple(str(f) for f in meta.get("finalizers") or ()),
        owners=tuple(_owner(o) for o in meta.get("ownerReferences") or ()),
        spec_taints=node.taints[: len(raw_taints)],
        conditions=conditions,
        do_not_disrupt=_annotation(meta, ANNOTATION_DO_NOT_DISRUPT),
        do_not_repair=_annotation(meta, ANNOTATION_DO_NOT_REPAIR),
        boot_id=str((status.get("nodeInfo") or {}).get("bootID") or ""),
    )


def _annotation(meta: Mapping[str, Any], key: str) -> str | None:
    value = (meta.get("annotations") or {}).get(key)
    return None if value is None else str(value)


# --- karpenter kinds: the API models themselves -----------------------------------------

nodeclaim = NodeClaim.from_dict
nodepool = NodePool.from_dict
nodeoverlay = NodeOverlay.from_dict
capacitybuffer = CapacityBuffer.from_dict


# --- pod templates (read for CapacityBuffers) --------------------------------------------


@attrs.frozen(slots=True)
class PodTemplateInfo:
    """A PodTemplate as the pod it describes (`karpy.scheduling.buffers.template_pod`)."""

    namespace: str
    name: str
    generation: int
    resource_version: str
    pod: Pod


def podtemplate_info(data: Mapping[str, Any]) -> PodTemplateInfo:
    meta = data.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    return PodTemplateInfo(
        namespace=namespace,
        name=str(meta.get("name", "")),
        generation=int(meta.get("generation") or 0),
        resource_version=str(meta.get("resourceVersion", "")),
        pod=template_pod(namespace, data.get("template") or {}),
    )


# --- daemonsets, budgets, volumes, namespaces -------------------------------------------


@attrs.frozen(slots=True)
class DaemonSetInfo:
    """A DaemonSet as the pod it would put on every node it fits."""

    namespace: str
    name: str
    resource_version: str
    pod: Pod


def daemonset_info(data: Mapping[str, Any]) -> DaemonSetInfo:
    meta = data.get("metadata") or {}
    pod = daemonset_pod(data)
    return DaemonSetInfo(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name", "")),
        resource_version=str(meta.get("resourceVersion", "")),
        pod=pod,
    )


@attrs.frozen(slots=True)
class BudgetInfo:
    """A PodDisruptionBudget: the scheduler's `DisruptionBudget` plus its live status."""

    budget: DisruptionBudget
    resource_version: str
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0


def budget_info(data: Mapping[str, Any]) -> BudgetInfo:
    meta = data.get("metadata") or {}
    status = data.get("status") or {}
    budget = pdb_from_dict(data)
    return BudgetInfo(
        budget=budget,
        resource_version=str(meta.get("resourceVersion", "")),
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        current_healthy=int(status.get("currentHealthy") or 0),
        desired_healthy=int(status.get("desiredHealthy") or 0),
        expected_pods=int(status.get("expectedPods") or 0),
    )


pvc = pvc_from_dict


pv = pv_from_dict


storage_class = storage_class_from_dict


@attrs.frozen(slots=True)
class NamespaceInfo:
    name: str
    resource_version: str
    labels: Mapping[str, str]  # with kubernetes.io/metadata.name, as the API server sets
    terminating: bool = False


def namespace_info(data: Mapping[str, Any]) -> NamespaceInfo:
    meta = data.get("metadata") or {}
    name = str(meta.get("name", ""))
    labels = {_intern(str(k)): _intern(str(v)) for k, v in (meta.get("labels") or {}).items()}
    labels.setdefault(NAMESPACE_NAME_LABEL, name)
    return NamespaceInfo(
        name=name,
        resource_version=str(meta.get("resourceVersion", "")),
        labels=labels,
        terminating=(data.get("status") or {}).get("phase") == "Terminating",
    )


# --- node leases (kube-node-lease) -------------------------------------------------------


@attrs.frozen(slots=True)
class NodeLease:
    """A kubelet's heartbeat Lease in kube-node-lease, for the lease garbage collector."""

    namespace: str
    name: str
    resource_version: str
    holder: str = ""
    renew_time: datetime | None = None
    lease_duration_seconds: int | None = None
    creation_timestamp: datetime | None = None
    owners: tuple[OwnerRef, ...] = ()

    @property
    def last_activity(self) -> datetime | None:
        """When it was last renewed (or created, if never renewed)."""
        return self.renew_time or self.creation_timestamp


def node_lease(data: Mapping[str, Any]) -> NodeLease:
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    return NodeLease(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        resource_version=str(meta.get("resourceVersion", "")),
        holder=str(spec.get("holderIdentity") or ""),
        renew_time=parse_time(spec.get("renewTime")),
        lease_duration_seconds=None if duration is None else int(duration),
        creation_timestamp=parse_time(meta.get("creationTimestamp")),
        owners=tuple(
            OwnerRef(str(o.get("kind", "")), str(o.get("name", "")), str(o.get("uid", "")))
            for o in meta.get("ownerReferences") or ()
        ),
    )
