"""Names of the core kinds cluster state holds (the informers' ``kind``).

NodeClass kinds are not among them: the cloud provider declares those
(`karpy.apis.nodeclass.NodeClassKind`), and state files their objects under the kind's
own name like any other kind's.
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = [
    "ALL_KINDS", "CAPACITYBUFFER", "CORE_KINDS", "DAEMONSET", "NAMESPACE", "NODE", "NODECLAIM",
    "NODEOVERLAY", "NODEPOOL",
    "NODE_LEASE", "PDB", "POD", "PODTEMPLATE", "PV", "PVC", "STORAGECLASS", "Kind",
]  # fmt: skip


class Kind(enum.StrEnum):
    """A core kind. Its value is the Kubernetes kind, so a `Kind` compares equal to the
    plain string a provider's NodeClass kind is (a `StateChange` carries either)."""

    POD = "Pod"
    NODE = "Node"
    NODECLAIM = "NodeClaim"
    NODEPOOL = "NodePool"
    NODEOVERLAY = "NodeOverlay"
    DAEMONSET = "DaemonSet"
    PDB = "PodDisruptionBudget"
    PVC = "PersistentVolumeClaim"
    PV = "PersistentVolume"
    STORAGECLASS = "StorageClass"
    NAMESPACE = "Namespace"
    NODE_LEASE = "Lease"  # only those in kube-node-lease
    # watched only with the CapacityBuffer gate on (`karpy.state.watched`)
    CAPACITYBUFFER = "CapacityBuffer"
    PODTEMPLATE = "PodTemplate"


# The members under their short names, as the code reads them (`kinds.POD`).
POD: Final = Kind.POD
NODE: Final = Kind.NODE
NODECLAIM: Final = Kind.NODECLAIM
NODEPOOL: Final = Kind.NODEPOOL
NODEOVERLAY: Final = Kind.NODEOVERLAY
DAEMONSET: Final = Kind.DAEMONSET
PDB: Final = Kind.PDB
PVC: Final = Kind.PVC
PV: Final = Kind.PV
STORAGECLASS: Final = Kind.STORAGECLASS
NAMESPACE: Final = Kind.NAMESPACE
NODE_LEASE: Final = Kind.NODE_LEASE
CAPACITYBUFFER: Final = Kind.CAPACITYBUFFER
PODTEMPLATE: Final = Kind.PODTEMPLATE

ALL_KINDS: Final = tuple(Kind)
# What state waits for by default: every kind but those only the CapacityBuffer gate watches.
CORE_KINDS: Final = tuple(k for k in Kind if k not in (CAPACITYBUFFER, PODTEMPLATE))
