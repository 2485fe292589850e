"""Slim Node records and the scheduler's view of existing capacity.

Karpenter pairs each Node with the NodeClaim that launched it (by provider ID) and reasons
about the pair: a NodeClaim that has not registered yet is "in-flight" capacity described
by its own labels and its estimated allocatable; a registered but uninitialized node still
carries startup and ephemeral taints that pods need not tolerate. `ClusterNode` is that
pair, reduced to the facts scheduling reads; `cluster_nodes` builds them.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from karpy.apis.core import Taint
from karpy.apis.labels import (
    LABEL_HOSTNAME,
    LABEL_INITIALIZED,
    LABEL_NODEPOOL,
    LABEL_REGISTERED,
    TAINT_DISRUPTED,
)
from karpy.base.quantity import parse_quantity
from karpy.scheduling.taints import is_ephemeral_taint, taint_from_dict

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.scheduling.resources import ResourceList

__all__ = ["ClusterNode", "Node", "NodeClaimLike", "cluster_nodes", "node_from_dict"]

_intern = sys.intern
UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", effect="NoSchedule")


def _quantities(data: Mapping[str, Any] | None) -> ResourceList:
    return {_intern(str(k)): parse_quantity(v) for k, v in (data or {}).items()}


@attrs.frozen(slots=True)
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...] = ()
    allocatable: ResourceList = attrs.field(factory=dict)
    capacity: ResourceList = attrs.field(factory=dict)
    provider_id: str = ""
    deleting: bool = False
    # The Ready condition: True, False, or None when the node reports none (or Unknown
    # is reported as False: the kubelet is not saying it is ready).
    ready: bool | None = None


def _ready(conditions: Any) -> bool | None:
    for condition in conditions or ():
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return None


def node_from_dict(data: Mapping[str, Any]) -> Node:
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    taints = tuple(taint_from_dict(t) for t in spec.get("taints") or ())
    if spec.get("unschedulable") and not any(t.matches(UNSCHEDULABLE_TAINT) for t in taints):
        taints = (*taints, UNSCHEDULABLE_TAINT)
    capacity = _quantities(status.get("capacity"))
    allocatable = _quantities(status.get("allocatable")) or dict(capacity)
    return Node(
        name=str(meta.get("name", "")),
        labels={_intern(str(k)): _intern(str(v)) for k, v in (meta.get("labels") or {}).items()},
        taints=taints,
        allocatable=allocatable,
        capacity=capacity,
        provider_id=str(spec.get("providerID") or ""),
        deleting=meta.get("deletionTimestamp") is not None,
        ready=_ready(status.get("conditions")),
    )


class _Meta(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def deletion_timestamp(self) -> Any: ...


class _ClaimSpec(Protocol):
    @property
    def taints(self) -> Sequence[Taint]: ...
    @property
    def startup_taints(self) -> Sequence[Taint]: ...


class _ClaimStatus(Protocol):
    @property
    def node_name(self) -> str | None: ...
    @property
    def provider_id(self) -> str | None: ...
    @property
    def capacity(self) -> Mapping[str, int]: ...
    @property
    def allocatable(self) -> Mapping[str, int]: ...


class NodeClaimLike(Protocol):
    """The attributes of `karpy.apis.nodeclaim.NodeClaim` the scheduler reads."""

    @property
    def metadata(self) -> _Meta: ...
    @property
    def spec(self) -> _ClaimSpec: ...
    @property
    def status(self) -> _ClaimStatus: ...


@attrs.frozen(slots=True)
class ClusterNode:
    """An existing node or in-flight NodeClaim as scheduling sees it."""

    name: str
    hostname: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]  # what a pod must tolerate to be placed here now
    allocatable: ResourceList
    capacity: ResourceList
    initialized: bool
    managed: bool
    marked_for_deletion: bool
    has_node: bool
    node_taints: tuple[Taint, ...] = ()  # the Node's own taints (topology filters)

    @property
    def nodepool(self) -> str:
        return self.labels.get(LABEL_NODEPOOL, "")


def _effective_taints(
    taints: Sequence[Taint], startup: Sequence[Taint], *, initialized: bool, ready: bool
) -> tuple[Taint, ...]:
    """What a pod must tolerate on a managed node. Capacity still on its way is used
    despite the taints it will shed: the known ephemeral ones while it is uninitialized
    or not Ready (a node labelled initialized that went NotReady is in flight again), and
    the NodePool's startup taints while it is uninitialized. Any other taint counts."""
    if initialized and ready:
        return tuple(taints)
    return tuple(
        t
        for t in taints
        if not is_ephemeral_taint(t) and (initialized or not any(s.matches(t) for s in startup))
    )


def cluster_nodes(nodes: Sequence[Node], nodeclaims: Iterable[NodeClaimLike]) -> list[ClusterNode]:
    """Pair Nodes with NodeClaims (by provider ID, else node name) into `ClusterNode`s."""
    by_provider: dict[str, Node] = {}
    by_name: dict[str, Node] = {}
    for node in nodes:
        by_name[node.name] = node
        if node.provider_id:
            by_provider[node.provider_id] = node
    paired: set[str] = set()
    out: list[ClusterNode] = []
    for claim in nodeclaims:
        status = claim.status
        match: Node | None = None
        if status.provider_id:
            match = by_provider.get(status.provider_id)
        if match is None and status.node_name:
            match = by_name.get(status.node_name)
        if match is not None:
            paired.add(match.name)
        out.append(_from_claim(claim, match))
    for node in nodes:
        if node.name in paired:
            continue
        out.append(_from_node(node))
    return out


def _disrupted(taints: Iterable[Taint]) -> bool:
    return any(t.key == TAINT_DISRUPTED and t.effect == "NoSchedule" for t in taints)


def _from_node(node: Node) -> ClusterNode:
    return ClusterNode(
        name=node.name,
        hostname=node.labels.get(LABEL_HOSTNAME) or node.name,
        labels=node.labels,
        taints=node.taints,
        allocatable=node.allocatable,
        capacity=node.capacity,
        initialized=True,
        managed=False,
        marked_for_deletion=node.deleting or _disrupted(node.taints),
        has_node=True,
        node_taints=node.taints,
    )


def _from_claim(claim: NodeClaimLike, node: Node | None) -> ClusterNode:
    meta, spec, status = claim.metadata, claim.spec, claim.status
    registered = node is not None and node.labels.get(LABEL_REGISTERED) == "true"
    initialized = node is not None and node.labels.get(LABEL_INITIALIZED) == "true"
    if node is not None and registered:
        name, labels, raw_taints = node.name, node.labels, node.taints
    else:
        name, labels, raw_taints = meta.name, meta.labels, tuple(spec.taints)
    if node is not None and initialized:
        allocatable, capacity = dict(node.allocatable), dict(node.capacity)
    else:
        # Until initialization the NodeClaim's estimate fills in what the node lacks.
        allocatable = dict(node.allocatable) if node is not None else {}
        capacity = dict(node.capacity) if node is not None else {}
        for k, v in status.allocatable.items():
            if not allocatable.get(k):
                allocatable[k] = v
        for k, v in status.capacity.items():
            if not capacity.get(k):
                capacity[k] = v
    ready = node is None or node.ready is not False
    taints = _effective_taints(
        raw_taints, tuple(spec.startup_taints), initialized=initialized, ready=ready
    )
    deleting = meta.deletion_timestamp is not None
    return ClusterNode(
        name=name,
        hostname=labels.get(LABEL_HOSTNAME) or name,
        labels=labels,
        taints=taints,
        allocatable=allocatable,
        capacity=capacity,
        initialized=initialized,
        managed=True,
        marked_for_deletion=deleting or _disrupted(raw_taints),
        has_node=node is not None,
        node_taints=node.taints if node is not None else (),
    )
