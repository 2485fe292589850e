"""`StateSnapshot`: the cluster as it was at one instant, shared and never copied.

Every map in cluster state is a persistent hash-array-mapped trie (`immutables.Map`): an
update makes a new map that shares all but O(log n) of its nodes with the old one. So a
snapshot is just the current maps, taken in O(1) however many pods there are, and a round
that holds one for its whole length sees none of the updates that arrive meanwhile while
those updates cost O(changed objects), not a copy of everything. ``docs/runtime.md`` and
``make bench`` give the figures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import immutables

from karpy.state import kinds

R = TypeVar("R", bound="NodeClassObject")

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from karpy.apis.capacitybuffer import CapacityBuffer
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodeclass import NodeClassKind, NodeClassObject
    from karpy.apis.nodeoverlay import NodeOverlay
    from karpy.apis.nodepool import NodePool
    from karpy.kube.unreadable import UnreadableObject
    from karpy.scheduling.volumes import PersistentVolume, PersistentVolumeClaim, StorageClass
    from karpy.state.records import (
        BudgetInfo,
        DaemonSetInfo,
        NamespaceInfo,
        NodeInfo,
        NodeLease,
        PodInfo,
        PodTemplateInfo,
    )

__all__ = ["EMPTY", "StateSnapshot"]

EMPTY: immutables.Map[Any, Any] = immutables.Map()


@attrs.frozen(slots=True, eq=False)
class StateSnapshot:
    """Read-only cluster state. Maps are keyed ``namespace/name`` (namespaced kinds) or
    ``name``; records are those of `karpy.state.records`."""

    generation: int
    objects: Mapping[str, immutables.Map[str, Any]]
    pods_by_node: immutables.Map[str, immutables.Map[str, PodInfo]]
    pending: immutables.Map[str, PodInfo]
    node_by_provider_id: immutables.Map[str, str]
    claims_by_nodepool: immutables.Map[str, immutables.Map[str, NodeClaim]]
    claim_by_provider_id: immutables.Map[str, str]
    node_of_claim: immutables.Map[str, str]  # NodeClaim name -> Node name, when paired
    claim_of_node: immutables.Map[str, str]  # Node name -> NodeClaim name
    # active, unbound pods carrying a nominatedNodeName (none of them in ``pending``)
    named: immutables.Map[str, PodInfo] = EMPTY
    # replacement NodeClaim name -> the NodeClaims a disruption decision made wait for it
    awaiting: immutables.Map[str, immutables.Map[str, bool]] = EMPTY
    # kind -> key -> placeholder of each object that exists but could not be read; it is
    # in none of the maps above, and must never be taken for absent
    unreadable: Mapping[str, immutables.Map[str, UnreadableObject]] = attrs.field(factory=dict)

    def of(self, kind: str) -> immutables.Map[str, Any]:
        return self.objects.get(kind, EMPTY)

    # --- by kind ---------------------------------------------------------------------

    @property
    def pods(self) -> immutables.Map[str, PodInfo]:
        return self.of(kinds.POD)

    @property
    def nodes(self) -> immutables.Map[str, NodeInfo]:
        return self.of(kinds.NODE)

    @property
    def nodeclaims(self) -> immutables.Map[str, NodeClaim]:
        return self.of(kinds.NODECLAIM)

    @property
    def nodepools(self) -> immutables.Map[str, NodePool]:
        return self.of(kinds.NODEPOOL)

    def node_class(self, kind: NodeClassKind[R], name: str) -> R | None:
        """The NodeClass of the provider-declared ``kind`` named ``name`` (state files
        node classes under their kind's name, as every kind)."""
        found: R | None = self.of(kind.kind).get(name)
        return found

    @property
    def nodeoverlays(self) -> immutables.Map[str, NodeOverlay]:
        return self.of(kinds.NODEOVERLAY)

    @property
    def daemonsets(self) -> immutables.Map[str, DaemonSetInfo]:
        return self.of(kinds.DAEMONSET)

    @property
    def budgets(self) -> immutables.Map[str, BudgetInfo]:
        return self.of(kinds.PDB)

    @property
    def pvcs(self) -> immutables.Map[str, PersistentVolumeClaim]:
        return self.of(kinds.PVC)

    @property
    def pvs(self) -> immutables.Map[str, PersistentVolume]:
        return self.of(kinds.PV)

    @property
    def storage_classes(self) -> immutables.Map[str, StorageClass]:
        return self.of(kinds.STORAGECLASS)

    @property
    def namespaces(self) -> immutables.Map[str, NamespaceInfo]:
        return self.of(kinds.NAMESPACE)

    @property
    def node_leases(self) -> immutables.Map[str, NodeLease]:
        return self.of(kinds.NODE_LEASE)

    @property
    def capacitybuffers(self) -> immutables.Map[str, CapacityBuffer]:
        """Empty unless the CapacityBuffer gate is on (only then are they watched)."""
        return self.of(kinds.CAPACITYBUFFER)

    @property
    def podtemplates(self) -> immutables.Map[str, PodTemplateInfo]:
        return self.of(kinds.PODTEMPLATE)

    # --- through the indexes ------------------------------------------------------------

    def pods_on(self, node_name: str) -> Iterator[PodInfo]:
        return iter(self.pods_by_node.get(node_name, EMPTY).values())

    def reschedulable_count(self, node_name: str | None) -> int:
        """How many of the node's pods would need a new home if it went (DaemonSet,
        static and finished pods aside): what a disruption of it initiates."""
        if not node_name:
            return 0
        return sum(1 for info in self.pods_on(node_name) if info.pod.is_reschedulable)

    def pending_pods(self) -> Iterator[PodInfo]:
        """Pods kube-scheduler could not place (PodScheduled=False, Unschedulable),
        unbound, not nominated, not DaemonSet or static pods: what provisioning serves."""
        return iter(self.pending.values())

    def node_by_provider(self, provider_id: str) -> NodeInfo | None:
        name = self.node_by_provider_id.get(provider_id)
        return None if name is None else self.nodes.get(name)

    def nodeclaim_by_provider(self, provider_id: str) -> NodeClaim | None:
        name = self.claim_by_provider_id.get(provider_id)
        return None if name is None else self.nodeclaims.get(name)

    def nodeclaims_of(self, nodepool: str) -> Iterator[NodeClaim]:
        return iter(self.claims_by_nodepool.get(nodepool, EMPTY).values())

    def claims_awaiting(self, replacement: str) -> list[str]:
        """The NodeClaims whose disruption waits for ``replacement`` (their
        ``awaited_replacements`` name it)."""
        return list(self.awaiting.get(replacement, EMPTY))

    def node_for_claim(self, nodeclaim: str) -> NodeInfo | None:
        name = self.node_of_claim.get(nodeclaim)
        return None if name is None else self.nodes.get(name)

    # --- objects that exist but could not be read ----------------------------------------

    def unreadable_of(self, kind: str) -> immutables.Map[str, UnreadableObject]:
        return self.unreadable.get(kind, EMPTY)

    def is_unreadable(self, kind: str, key: str) -> bool:
        """Does ``key`` name a ``kind`` object that exists but could not be read? Code that
        acts because an object is absent from a map must check this first."""
        return key in self.unreadable.get(kind, EMPTY)

    def unreadable_provider(self, provider_id: str, kind: str = kinds.NODE) -> bool:
        """Is there an unreadable ``kind`` (Node or NodeClaim) naming ``provider_id``, or
        one whose provider ID could not be read at all? Then "no Node (NodeClaim) for this
        instance" is not known."""
        return any(
            placeholder.provider_id in ("", provider_id)
            for placeholder in self.unreadable_of(kind).values()
        )

    def claim_for_node(self, node: str) -> NodeClaim | None:
        name = self.claim_of_node.get(node)
        return None if name is None else self.nodeclaims.get(name)
