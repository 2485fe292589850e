"""The API resources karpy reads and writes, and the URL paths that address them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final
from urllib.parse import quote

import attrs

if TYPE_CHECKING:
    from karpy.apis.crd import CustomResource

__all__ = [
    "CAPACITYBUFFERS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "EVENTS",
    "LEASES",
    "NAMESPACES",
    "NODECLAIMS",
    "NODEOVERLAYS",
    "NODEPOOLS",
    "NODES",
    "NODE_LEASE_NAMESPACE",
    "PDBS",
    "PODS",
    "PODTEMPLATES",
    "PVCS",
    "PVS",
    "REPLICASETS",
    "STATEFULSETS",
    "STORAGECLASSES",
    "Resource",
]

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"


@attrs.frozen(slots=True)
class Resource:
    """One API resource: ``group``/``version``/``plural`` and whether it is namespaced.
    ``custom`` marks custom resources, whose kind is served only once its CRD exists."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    custom: bool = False

    @classmethod
    def of_custom(cls, definition: CustomResource) -> Resource:
        """The custom resource ``definition`` declares (a provider's NodeClass kind)."""
        return cls(definition.group, definition.version, definition.plural, definition.kind,
                   namespaced=definition.scope == "Namespaced", custom=True)  # fmt: skip

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(
        self, namespace: str | None = None, name: str | None = None, subresource: str = ""
    ) -> str:
        """``/api/v1/namespaces/ns/pods/name/status`` and the like. ``namespace=None`` on a
        namespaced resource addresses every namespace (lists and watches only)."""
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace is not None:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base

    def key(self, namespace: str | None, name: str) -> str:
        """The key karpy files an object under: ``namespace/name``, or ``name``."""
        return f"{namespace}/{name}" if self.namespaced else name


PODS: Final = Resource("", "v1", "pods", "Pod", namespaced=True)
NODES: Final = Resource("", "v1", "nodes", "Node", namespaced=False)
NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PVCS: Final = Resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True)
PVS: Final = Resource("", "v1", "persistentvolumes", "PersistentVolume", namespaced=False)
EVENTS: Final = Resource("", "v1", "events", "Event", namespaced=True)
DAEMONSETS: Final = Resource("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
PDBS: Final = Resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True)
STORAGECLASSES: Final = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
LEASES: Final = Resource("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
NODEPOOLS: Final = Resource("karpenter.sh", "v1", "nodepools", "NodePool", False, custom=True)
NODECLAIMS: Final = Resource("karpenter.sh", "v1", "nodeclaims", "NodeClaim", False, custom=True)
NODEOVERLAYS: Final = Resource(
    "karpenter.sh", "v1alpha1", "nodeoverlays", "NodeOverlay", False, custom=True
)
PODTEMPLATES: Final = Resource("", "v1", "podtemplates", "PodTemplate", namespaced=True)
DEPLOYMENTS: Final = Resource("apps", "v1", "deployments", "Deployment", namespaced=True)
STATEFULSETS: Final = Resource("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
REPLICASETS: Final = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
CAPACITYBUFFERS: Final = Resource(
    "autoscaling.x-k8s.io", "v1beta1", "capacitybuffers", "CapacityBuffer", True, custom=True
)
