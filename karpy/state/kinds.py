"""Names of the kinds cluster state holds (the informers' ``kind``)."""

from __future__ import annotations

from typing import Final

POD: Final = "Pod"
NODE: Final = "Node"
NODECLAIM: Final = "NodeClaim"
NODEPOOL: Final = "NodePool"
EC2NODECLASS: Final = "EC2NodeClass"
NODEOVERLAY: Final = "NodeOverlay"
DAEMONSET: Final = "DaemonSet"
PDB: Final = "PodDisruptionBudget"
PVC: Final = "PersistentVolumeClaim"
PV: Final = "PersistentVolume"
STORAGECLASS: Final = "StorageClass"
NAMESPACE: Final = "Namespace"
NODE_LEASE: Final = "Lease"  # only those in kube-node-lease

ALL_KINDS: Final = (
    POD, NODE, NODECLAIM, NODEPOOL, EC2NODECLASS, NODEOVERLAY, DAEMONSET, PDB, PVC, PV,
    STORAGECLASS, NAMESPACE, NODE_LEASE,
)  # fmt: skip
