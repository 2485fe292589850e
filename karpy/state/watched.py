"""Which kinds the controller watches, and the projection each one is read with."""

from __future__ import annotations

from typing import Final

from karpy.kube import resources as r
from karpy.kube.informer import WatchSpec
from karpy.state import kinds
from karpy.state import records as p

__all__ = ["WATCHED"]

WATCHED: Final = (
    WatchSpec(r.PODS, p.pod_info, kind=kinds.POD),
    WatchSpec(r.NODES, p.node_info, kind=kinds.NODE),
    WatchSpec(r.NODECLAIMS, p.nodeclaim, kind=kinds.NODECLAIM),
    WatchSpec(r.NODEPOOLS, p.nodepool, kind=kinds.NODEPOOL),
    WatchSpec(r.EC2NODECLASSES, p.ec2nodeclass, kind=kinds.EC2NODECLASS),
    WatchSpec(r.NODEOVERLAYS, p.nodeoverlay, kind=kinds.NODEOVERLAY),
    WatchSpec(r.DAEMONSETS, p.daemonset_info, kind=kinds.DAEMONSET),
    WatchSpec(r.PDBS, p.budget_info, kind=kinds.PDB),
    WatchSpec(r.PVCS, p.pvc, kind=kinds.PVC),
    WatchSpec(r.PVS, p.pv, kind=kinds.PV),
    WatchSpec(r.STORAGECLASSES, p.storage_class, kind=kinds.STORAGECLASS),
    WatchSpec(r.NAMESPACES, p.namespace_info, kind=kinds.NAMESPACE),
    WatchSpec(r.LEASES, p.node_lease, namespace=r.NODE_LEASE_NAMESPACE, kind=kinds.NODE_LEASE),
)
