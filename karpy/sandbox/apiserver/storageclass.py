"""DefaultStorageClass admission: a claim created without a class gets the default one.

kube-apiserver runs this plugin by default, so in a real cluster a PersistentVolumeClaim
that omits ``spec.storageClassName`` is stored with the default StorageClass's name, and
autoscalers (Karpenter and karpy alike) only ever see the filled-in name. As upstream:
only on create; an explicit class, including ``""`` ("no class"), or the legacy
``volume.beta.kubernetes.io/storage-class`` annotation is left alone; with several
default classes the most recently created wins, ties going to the first name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.objects import Behavior

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj
    from karpy.sandbox.apiserver.objects import ObjectAPI

DEFAULT_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)
LEGACY_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


def default_class_name(classes: list[Obj]) -> str | None:
    """The name of the default StorageClass among ``classes``, if any is default."""
    defaults = [c for c in classes if _is_default(c)]
    if not defaults:
        return None
    # Timestamps are RFC 3339 UTC of one shape, so they order as strings.
    newest = max(str(c["metadata"].get("creationTimestamp") or "") for c in defaults)
    return min(
        str(c["metadata"]["name"])
        for c in defaults
        if str(c["metadata"].get("creationTimestamp") or "") == newest
    )


def _is_default(storage_class: Obj) -> bool:
    annotations: dict[str, Any] = storage_class["metadata"].get("annotations") or {}
    return any(annotations.get(a) == "true" for a in DEFAULT_ANNOTATIONS)


class PersistentVolumeClaimBehavior(Behavior):
    def prepare_create(self, api: ObjectAPI, kind: Kind, obj: Obj) -> None:
        spec = obj.get("spec")
        annotations = obj["metadata"].get("annotations") or {}
        if not isinstance(spec, dict) or spec.get("storageClassName") is not None:
            return
        if annotations.get(LEGACY_CLASS_ANNOTATION):
            return
        classes_kind = api.registry.get("storage.k8s.io", "storageclasses")
        if classes_kind is None:
            return
        classes = [e.obj for e in api.store.state(classes_kind).objects.values()]
        name = default_class_name(classes)
        if name is not None:
            spec["storageClassName"] = name
