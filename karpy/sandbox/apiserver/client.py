"""In-process access to the emulator's objects, for test assertions and set-up.

Same semantics as over HTTP (validation, resourceVersions, finalizers, status split,
events to watchers), without the round trip. Resources are named as kubectl names them
(``pods``, ``Pod``, ``nodepools.karpenter.sh``, ``karpenter.sh/v1/nodepools``). Every
object handed out is a copy: mutating it never changes the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from karpy.sandbox.apiserver import patching
from karpy.sandbox.apiserver.eviction import DisruptionController, evict
from karpy.sandbox.apiserver.listing import ListOptions, list_objects, parse_list_options
from karpy.sandbox.apiserver.objects import DeleteOptions, ObjectAPI
from karpy.sandbox.apiserver.pods import bind

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Obj, View

PATCH_TYPES = {
    "merge": patching.MERGE_PATCH,
    "strategic": patching.STRATEGIC_PATCH,
    "json": patching.JSON_PATCH,
}


def _copy(obj: Any) -> Obj:
    copied: Obj = orjson.loads(orjson.dumps(obj))
    return copied


class StoreClient:
    def __init__(self, api: ObjectAPI, disruption: DisruptionController) -> None:
        self._api = api
        self._disruption = disruption

    @property
    def resource_version(self) -> int:
        """The current global resourceVersion."""
        return self._api.store.rv

    def view(self, resource: str) -> View:
        return self._api.registry.resolve(resource)

    def get(self, resource: str, name: str, namespace: str | None = None) -> Obj:
        return _copy(self._api.get(self.view(resource), namespace, name))

    def try_get(self, resource: str, name: str, namespace: str | None = None) -> Obj | None:
        view = self.view(resource)
        entry = self._api.store.get_entry(
            view.kind, (namespace or "") if view.kind.namespaced else "", name
        )
        return None if entry is None else _copy(view.external(entry.obj))

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        label_selector: str = "",
        field_selector: str = "",
    ) -> list[Obj]:
        view = self.view(resource)
        query = {"labelSelector": label_selector, "fieldSelector": field_selector}
        opts: ListOptions = parse_list_options(view, query)
        result = list_objects(self._api.store, view, namespace, opts)
        return [_copy(view.external(e.obj)) for e in result.entries]

    def create(self, resource: str, obj: Obj, namespace: str | None = None) -> Obj:
        view = self.view(resource)
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        if view.kind.namespaced and not ns:
            ns = "default"
        return _copy(self._api.create(view, ns, obj))

    def update(self, resource: str, obj: Obj, namespace: str | None = None) -> Obj:
        view = self.view(resource)
        meta = obj.get("metadata") or {}
        return _copy(
            self._api.update(view, namespace or meta.get("namespace"), meta.get("name", ""), obj)
        )

    def update_status(self, resource: str, obj: Obj, namespace: str | None = None) -> Obj:
        view = self.view(resource)
        meta = obj.get("metadata") or {}
        return _copy(
            self._api.update(
                view,
                namespace or meta.get("namespace"),
                meta.get("name", ""),
                obj,
                subresource="status",
            )
        )

    def patch(
        self,
        resource: str,
        name: str,
        patch: Any,
        namespace: str | None = None,
        *,
        patch_type: str = "merge",
        subresource: str | None = None,
    ) -> Obj:
        view = self.view(resource)
        content_type = PATCH_TYPES.get(patch_type, patch_type)
        return _copy(
            self._api.patch(
                view, namespace, name, content_type, _copy(patch), subresource=subresource
            )
        )

    def delete(
        self,
        resource: str,
        name: str,
        namespace: str | None = None,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
    ) -> Obj:
        """Delete (or mark deleted); returns the object as the API server does."""
        view = self.view(resource)
        options = DeleteOptions(grace_period_seconds, uid, resource_version)
        obj, _ = self._api.delete(view, namespace, name, options)
        return _copy(obj)

    def bind(self, name: str, node: str, namespace: str = "default") -> None:
        bind(
            self._api,
            self.view("pods"),
            namespace,
            name,
            {"metadata": {"name": name}, "target": {"kind": "Node", "name": node}},
        )

    def evict(
        self, name: str, namespace: str = "default", delete_options: dict[str, Any] | None = None
    ) -> None:
        body: dict[str, Any] = {"metadata": {"name": name, "namespace": namespace}}
        if delete_options:
            body["deleteOptions"] = delete_options
        evict(self._api, self._disruption, namespace, name, body)
