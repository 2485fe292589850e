"""Which kinds the controller watches, and the projection each one is read with.

`CORE_WATCHED` are karpy's own kinds; the cloud provider adds its NodeClass kinds
(`karpy.apis.nodeclass.NodeClassKind`), so `watched` is what the operator's informers
and cluster state are built from once the provider is chosen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.kube import resources as r
from karpy.kube.informer import WatchSpec
from karpy.state import kinds
from karpy.state import records as p

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.nodeclass import NodeClassKind

__all__ = ["BUFFER_WATCHED", "CORE_WATCHED", "node_class_watch", "watched"]

CORE_WATCHED: Final = (
    WatchSpec(r.PODS, p.pod_info, kind=kinds.POD),
    WatchSpec(r.NODES, p.node_info, kind=kinds.NODE),
    WatchSpec(r.NODECLAIMS, p.nodeclaim, kind=kinds.NODECLAIM),
    WatchSpec(r.NODEPOOLS, p.nodepool, kind=kinds.NODEPOOL),
    WatchSpec(r.NODEOVERLAYS, p.nodeoverlay, kind=kinds.NODEOVERLAY),
    WatchSpec(r.DAEMONSETS, p.daemonset_info, kind=kinds.DAEMONSET),
    WatchSpec(r.PDBS, p.budget_info, kind=kinds.PDB),
    WatchSpec(r.PVCS, p.pvc, kind=kinds.PVC),
    WatchSpec(r.PVS, p.pv, kind=kinds.PV),
    WatchSpec(r.STORAGECLASSES, p.storage_class, kind=kinds.STORAGECLASS),
    WatchSpec(r.NAMESPACES, p.namespace_info, kind=kinds.NAMESPACE),
    WatchSpec(r.LEASES, p.node_lease, namespace=r.NODE_LEASE_NAMESPACE, kind=kinds.NODE_LEASE),
)

# With the CapacityBuffer gate on: the buffers, and the PodTemplates they name. Only then,
# so that a cluster without the buffer CRD is no trouble to karpy with the gate off.
BUFFER_WATCHED: Final = (
    WatchSpec(r.CAPACITYBUFFERS, p.capacitybuffer, kind=kinds.CAPACITYBUFFER),
    WatchSpec(r.PODTEMPLATES, p.podtemplate_info, kind=kinds.PODTEMPLATE),
)


def node_class_watch(kind: NodeClassKind[Any]) -> WatchSpec:
    """The informer a provider's NodeClass kind needs: its resource, read with its
    projection, filed in state under the kind's name."""
    return WatchSpec(r.Resource.of_custom(kind.definition), kind.project, kind=kind.kind)


def watched(
    node_classes: Iterable[NodeClassKind[Any]], *, capacity_buffers: bool = False
) -> tuple[WatchSpec, ...]:
    """The core kinds, the buffer kinds when ``capacity_buffers`` (the gate), and the
    provider's NodeClass kinds. A NodeClass kind named like a core kind (or like another
    of them) would share its map in state: `ValueError`."""
    buffers = BUFFER_WATCHED if capacity_buffers else ()
    specs = (*CORE_WATCHED, *buffers, *(node_class_watch(kind) for kind in node_classes))
    names = [spec.name for spec in specs]
    clashes = sorted({name for name in names if names.count(name) > 1})
    if clashes:
        raise ValueError(f"NodeClass kinds clash with other watched kinds: {clashes}")
    return specs
