"""The ``scale`` subresource: an autoscaling/v1 ``Scale`` view of any kind that declares
one (deployments, replicasets, statefulsets, CRDs with ``subresources.scale``). Reads map
the kind's replica paths into the Scale; writes map ``spec.replicas`` back and go through
the normal update path (resourceVersion check, generation bump, watch events).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs
import orjson

from karpy.apis.fielderrors import FieldError
from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.selectors import label_selector_from_object, selector_to_string

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import View
    from karpy.sandbox.apiserver.objects import ObjectAPI


class ScaleSubresource:
    """``/scale`` for kinds that declare it: an autoscaling/v1 Scale view of the object."""

    def __init__(self, api: ObjectAPI) -> None:
        self.api = api

    def _scale(self, view: View, obj: dict[str, Any]) -> dict[str, Any]:
        spec = view.kind.scale
        assert spec is not None
        meta = obj["metadata"]
        status: dict[str, Any] = {"replicas": spec.status_replicas.first(obj) or 0}
        if spec.label_selector is not None:
            selector = spec.label_selector.first(obj)
            if isinstance(selector, dict):
                selector = selector_to_string(label_selector_from_object(selector))
            if selector:
                status["selector"] = selector
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: meta[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta
            },
            "spec": {"replicas": spec.spec_replicas.first(obj) or 0},
            "status": status,
        }

    def get(self, view: View, namespace: str | None, name: str) -> dict[str, Any]:
        return self._scale(view, self.api.get(view, namespace, name))

    def update(self, view: View, namespace: str | None, name: str, body: Any) -> dict[str, Any]:
        api = self.api
        kind = view.kind
        assert kind.scale is not None
        prev = api.entry(view, namespace, name)
        current = view.external(prev.obj)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request was not a Scale object")
        given = (body.get("metadata") or {}).get("resourceVersion")
        if given and given != current["metadata"]["resourceVersion"]:
            raise errors.stale(kind.group, kind.plural, name)
        replicas = (body.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(
                "Scale",
                "autoscaling",
                name,
                [
                    FieldError.invalid(
                        "spec.replicas", replicas, "must be greater than or equal to 0"
                    )
                ],
            )
        new = orjson.loads(orjson.dumps(current))
        kind.scale.spec_replicas.set(new, replicas)
        key = ((namespace or "") if kind.namespaced else "", name)
        result = api.apply_update(view, key, new, prev)
        return self._scale(view, result)

    def patch(
        self, view: View, namespace: str | None, name: str, content_type: str, raw: bytes
    ) -> dict[str, Any]:
        scale = self.get(view, namespace, name)
        fake = attrs.evolve(view.kind, patch_meta={})
        patched = self.api.patched(fake, scale, content_type, raw)
        return self.update(view, namespace, name, patched)
