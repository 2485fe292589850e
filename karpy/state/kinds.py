"""Names of the core kinds cluster state holds (the informers' ``kind``).

NodeClass kinds are not among them: the cloud provider declares those
(`karpy.apis.nodeclass.NodeClassKind`), and state files their objects under the kind's
own name like any other kind's.
"""

from __future__ import annotations

from typing import Final

POD: Final = "Pod"
NODE: Final = "Node"
NODECLAIM: Final = "NodeClaim"
NODEPOOL: Final = "NodePool"
NODEOVERLAY: Final = "NodeOverlay"
DAEMONSET: Final = "DaemonSet"
PDB: Final = "PodDisruptionBudget"
PVC: Final = "PersistentVolumeClaim"
PV: Final = "PersistentVolume"
STORAGECLASS: Final = "StorageClass"
NAMESPACE: Final = "Namespace"
NODE_LEASE: Final = "Lease"  # only those in kube-node-lease

ALL_KINDS: Final = (
    POD, NODE, NODECLAIM, NODEPOOL, NODEOVERLAY, DAEMONSET, PDB, PVC, PV, STORAGECLASS,
    NAMESPACE, NODE_LEASE,
)  # fmt: skip
