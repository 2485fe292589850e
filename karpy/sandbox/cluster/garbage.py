"""The two garbage collectors of kube-controller-manager: owners and orphaned pods.

**Owner references** (`OwnerGarbageCollector`). An object whose owners are all gone is
deleted with background propagation, so a deleted Deployment takes its ReplicaSets, their
pods follow, and a deleted Node takes its Lease in ``kube-node-lease``. When only some
owners are gone, the dangling references are removed instead, as upstream. "Gone" is
decided by uid against the `Ownership` index, which sees every write in process, so there
is no informer lag to wait out. An owner whose kind the API server does not serve cannot
be looked up, so, as upstream, its dependents are left alone. Deletion propagation
``Orphan`` and ``Foreground`` are not modelled (the emulator adds no ``orphan`` or
``foregroundDeletion`` finalizer): dependents of a deleted owner always go.

**Pods on missing nodes** (`PodGarbageCollector`). A pod bound to a Node that no longer
exists is deleted at once with grace period 0 (no kubelet is left to finish a graceful
deletion): immediately when the Node is deleted, and after ``quarantine`` seconds for a
pod that is bound to a node that never existed (upstream waits 40 s in both cases, to
ride out informer lag this in-process collector does not have).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.workqueue import WorkQueue

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.ownership import Ownership, Ref

NODES = ("", "nodes")
PODS = ("", "pods")


class OwnerGarbageCollector:
    def __init__(self, access: ClusterAccess, ownership: Ownership) -> None:
        self.access = access
        self.ownership = ownership
        self.queue: WorkQueue[Ref] = WorkQueue("garbage-collector", self.sync)
        self._served: dict[tuple[str, str], bool] = {}
        self._served_generation = -1

    def on_change(self, kind: Kind, change: Change) -> None:
        if change.type == "DELETED":
            for ref in self.ownership.dependents(facts.uid(change.entry.obj)):
                self.queue.add(ref)
        elif self._dangling(change.entry.obj):
            self.queue.add((kind.storage_key, *change.key))

    def _dangling(self, obj: facts.Obj) -> bool:
        return any(not self.ownership.exists(uid) for uid in facts.owner_uids(obj))

    def _serves(self, api_version: str, kind: str) -> bool:
        registry = self.access.server.registry
        if registry.generation != self._served_generation:
            self._served.clear()
            self._served_generation = registry.generation
        group, _, version = api_version.rpartition("/")
        known = self._served.get((api_version, kind))
        if known is None:
            known = any(
                k.kind == kind and k.group == group and version in k.versions
                for k in registry.all()
            )
            self._served[(api_version, kind)] = known
        return known

    def sync(self, ref: Ref) -> float | None:
        resource, namespace, name = ref
        kind = self.access.server.registry.get(*resource)
        if kind is None:
            return None
        view = self.access.view_of(kind)
        entry = self.access.entry(view, namespace, name)
        if entry is None or facts.is_deleting(entry.obj):
            return None
        owners = [
            o
            for o in facts.meta(entry.obj).get("ownerReferences") or ()
            if isinstance(o, dict) and o.get("uid")
        ]
        gone = [
            o
            for o in owners
            if not self.ownership.exists(str(o["uid"]))
            and self._serves(str(o.get("apiVersion", "")), str(o.get("kind", "")))
        ]
        if not gone:
            return None
        if len(gone) == len(owners):
            self.access.delete(view, entry, propagation_policy="Background")
        else:
            remaining = [o for o in owners if o not in gone]
            self.access.merge_patch(view, entry, {"metadata": {"ownerReferences": remaining}})
        return None


class PodGarbageCollector:
    def __init__(self, access: ClusterAccess, *, quarantine: float = 5.0) -> None:
        self.access = access
        self.quarantine = quarantine
        self.queue: WorkQueue[str] = WorkQueue("pod-garbage-collector", self.sync)

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key == NODES and change.type == "DELETED":
            self.queue.add(change.key[1])
        elif kind.key == PODS and change.type != "DELETED":
            node = facts.node_name(change.entry.obj)
            was = facts.node_name(change.prev.obj) if change.prev is not None else ""
            if node and node != was and not self._exists(node):
                self.queue.add_after(node, self.quarantine)

    def _exists(self, node: str) -> bool:
        return self.access.entry(self.access.nodes, "", node) is not None

    def sync(self, node: str) -> float | None:
        if self._exists(node):
            return None
        for pod in self.access.pods_on(node):
            try:
                self.access.delete(self.access.pods, pod, grace_period_seconds=0)
            except APIError as err:
                if err.code != 404:
                    raise
        return None
