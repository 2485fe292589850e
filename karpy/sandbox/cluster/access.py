"""How the stand-ins read and write the cluster: in process, with an HTTP client's rules.

The stand-ins run in the emulator's process, so they skip the network but not the API:
every write goes through `ObjectAPI` (the same admission, validation, resourceVersions,
finalizer and status-split rules, and the same watch events, that HTTP clients get), and
binding and deletion use the emulator's pod binding and graceful-deletion paths. Reads
return the stored `Entry` itself, without the defensive copy `StoreClient` makes: at
40,000 pods copies are the cost that matters, so callers treat ``entry.obj`` as
read-only and build new dicts for writes (``orjson.loads(entry.raw)`` is the cheap deep
copy). Writes that would change nothing are skipped by the callers or, failing that, by
the emulator (an unchanged update is not a write).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from karpy.sandbox.apiserver.kinds import View
from karpy.sandbox.apiserver.objects import DeleteOptions
from karpy.sandbox.apiserver.pods import bind

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj
    from karpy.sandbox.apiserver.server import APIServer
    from karpy.sandbox.apiserver.store import Entry, Key, ResourceState

MERGE_PATCH = "application/merge-patch+json"


class ClusterAccess:
    """The emulator's objects for in-process controllers: views resolved once."""

    def __init__(self, server: APIServer) -> None:
        self.server = server
        self.api = server.api
        self.store = server.store_state
        self.pods = self.view("", "v1", "pods")
        self.nodes = self.view("", "v1", "nodes")
        self.namespaces = self.view("", "v1", "namespaces")
        self.leases = self.view("coordination.k8s.io", "v1", "leases")
        self.deployments = self.view("apps", "v1", "deployments")
        self.replicasets = self.view("apps", "v1", "replicasets")
        self.daemonsets = self.view("apps", "v1", "daemonsets")

    def view(self, group: str, version: str, plural: str) -> View:
        found = self.server.registry.view(group, version, plural)
        if found is None:
            raise KeyError(f"the emulator does not serve {group}/{version}/{plural}")
        return found

    def now(self) -> str:
        """The emulator's clock as an RFC 3339 timestamp, for conditions and status times."""
        return self.api.now()

    def clock(self) -> float:
        """The emulator's clock in seconds."""
        return self.api.clock()

    def view_of(self, kind: Kind) -> View:
        """The storage version's view of a kind a store hook reported."""
        return View(kind, kind.storage_version)

    # -- reads --------------------------------------------------------------------------

    def state(self, view: View) -> ResourceState:
        return self.store.state(view.kind)

    def entry(self, view: View, namespace: str, name: str) -> Entry | None:
        return self.store.get_entry(view.kind, namespace if view.kind.namespaced else "", name)

    def entries(self, view: View, namespace: str | None = None) -> list[Entry]:
        return self.store.all_objects(view.kind, namespace)

    def pods_on(self, node: str) -> list[Entry]:
        """Pods whose ``spec.nodeName`` is ``node`` (the store's index, as kubelets list)."""
        state = self.state(self.pods)
        keys = state.indexed("spec.nodeName", node) or set()
        return [state.objects[k] for k in sorted(keys) if k in state.objects]

    # -- writes -------------------------------------------------------------------------

    def create(self, view: View, obj: Obj) -> Obj:
        namespace = (obj.get("metadata") or {}).get("namespace")
        return self.api.create(view, namespace, obj)

    def write_status(self, view: View, entry: Entry, status: dict[str, Any]) -> Obj | None:
        """PUT /status unless the status is already ``status``; returns the new object.

        A status write takes everything but the status from the stored object, so only
        the status is sent (copied: stored objects never share parts with callers)."""
        if entry.obj.get("status") == status:
            return None
        new = {"metadata": {}, "status": orjson.loads(orjson.dumps(status))}
        return self.api.apply_update(view, _key(entry), new, entry, subresource="status")

    def merge_patch(
        self, view: View, entry: Entry, patch: dict[str, Any], *, subresource: str | None = None
    ) -> Obj:
        key = _key(entry)
        return self.api.patch(
            view, key[0] or None, key[1], MERGE_PATCH, patch, subresource=subresource
        )

    def delete(
        self,
        view: View,
        entry: Entry,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> None:
        """DELETE with a uid precondition, so a recreated namesake is never hit."""
        key = _key(entry)
        options = DeleteOptions(
            grace_period_seconds=grace_period_seconds,
            uid=entry.obj["metadata"].get("uid"),
            propagation_policy=propagation_policy,
        )
        self.api.delete(view, key[0] or None, key[1], options)

    def bind(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/<name>/binding with a uid precondition (kube-scheduler's bind)."""
        binding = {
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"kind": "Node", "name": node},
        }
        bind(self.api, self.pods, namespace, name, binding)


def _key(entry: Entry) -> Key:
    meta = entry.obj["metadata"]
    return (str(meta.get("namespace") or ""), str(meta["name"]))
