"""Namespace lifecycle: the NamespaceLifecycle admission plugin and the namespace
controller.

Creating an object in a namespace that does not exist answers 404 (``namespaces "x" not
found``) and in one being deleted 403 Forbidden, as the admission plugin does. Deleting
a namespace marks it ``Terminating``; the emulated namespace controller then deletes
everything in it and, once nothing is left (objects with finalizers stay until those
are removed), drops the ``kubernetes`` finalizer and removes the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.objects import Behavior, DeleteOptions, ObjectAPI

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj
    from karpy.sandbox.apiserver.store import Change, Entry, Key

INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
IMMORTAL = ("default", "kube-system", "kube-public")
_NAMESPACES = ("", "namespaces")


class NamespaceBehavior(Behavior):
    def prepare_create(self, api: ObjectAPI, kind: Kind, obj: Obj) -> None:
        name = obj["metadata"]["name"]
        labels = obj["metadata"].setdefault("labels", {})
        labels["kubernetes.io/metadata.name"] = name
        spec = obj.setdefault("spec", {})
        spec.setdefault("finalizers", ["kubernetes"])
        obj["status"] = {"phase": "Active"}

    def prepare_update(
        self, api: ObjectAPI, kind: Kind, new: Obj, old: Obj, subresource: str | None
    ) -> None:
        new["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = new["metadata"][
            "name"
        ]
        if subresource != "finalize":
            new["spec"] = copy.deepcopy(old.get("spec", {}))

    def delete(
        self, api: ObjectAPI, kind: Kind, key: Key, prev: Entry, options: DeleteOptions
    ) -> Obj | None:
        name = key[1]
        if name in IMMORTAL:
            raise errors.forbidden("", "namespaces", name, "this namespace may not be deleted")
        obj = prev.obj
        if obj["metadata"].get("deletionTimestamp"):
            return obj
        if not (obj.get("spec") or {}).get("finalizers") and not obj["metadata"].get("finalizers"):
            return None
        new = copy.deepcopy(obj)
        new["metadata"]["deletionTimestamp"] = api.now()
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        new.setdefault("status", {})["phase"] = "Terminating"
        return api.store.commit(kind, "MODIFIED", key, new, prev).obj


class NamespaceController:
    def __init__(self, api: ObjectAPI, poll_seconds: float = 0.05) -> None:
        self.api = api
        self.poll_seconds = poll_seconds
        self._tasks: dict[str, asyncio.Task[None]] = {}

    def admit(self, namespace: str, kind: Kind, name: str) -> None:
        ns_kind = self.api.registry.get(*_NAMESPACES)
        assert ns_kind is not None
        entry = self.api.store.get_entry(ns_kind, "", namespace)
        if entry is None:
            raise errors.not_found("", "namespaces", namespace)
        if entry.obj["metadata"].get("deletionTimestamp"):
            err = errors.forbidden(
                kind.group,
                kind.plural,
                name,
                f"unable to create new content in namespace {namespace} because it is being "
                f"terminated",
            )
            assert err.details is not None
            err.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise err

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key != _NAMESPACES or change.type == "DELETED":
            return
        name = change.key[1]
        if change.entry.obj["metadata"].get("deletionTimestamp") and name not in self._tasks:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._tasks[name] = loop.create_task(self._finalize(name))

    async def _finalize(self, name: str) -> None:
        try:
            # Polling, as the upstream controllers resync: a finalizer removed by anyone
            # (a test, karpy) lets the sweep finish on its next pass.
            while not self.sweep(name):  # noqa: ASYNC110
                # Polling, as the upstream controllers resync: a finalizer removed by
                # anyone (a test, karpy) lets the sweep finish on its next pass.
                await asyncio.sleep(self.poll_seconds)
        finally:
            self._tasks.pop(name, None)

    def sweep(self, name: str) -> bool:
        """Delete what is left in namespace `name`; True once the namespace is gone."""
        api = self.api
        remaining = 0
        for kind in api.registry.all():
            if not kind.namespaced or kind.storage is not None:
                continue
            view = api.registry.view(kind.group, kind.storage_version, kind.plural)
            assert view is not None
            for key in api.store.namespaced_keys(kind, name):
                remaining += 1
                entry = api.store.get_entry(kind, *key)
                if entry is not None and not entry.obj["metadata"].get("deletionTimestamp"):
                    with contextlib.suppress(errors.APIError):
                        api.delete(view, key[0], key[1], DeleteOptions(grace_period_seconds=0))
        ns_kind = api.registry.get(*_NAMESPACES)
        assert ns_kind is not None
        prev = api.store.get_entry(ns_kind, "", name)
        if prev is None:
            return True
        if remaining:
            return False
        new: dict[str, Any] = copy.deepcopy(prev.obj)
        new.setdefault("spec", {})["finalizers"] = []
        if new["metadata"].get("finalizers"):
            if new != prev.obj:
                api.store.commit(ns_kind, "MODIFIED", ("", name), new, prev)
            return False
        api.store.commit(ns_kind, "DELETED", ("", name), None, prev)
        return True

    def cancel_all(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
