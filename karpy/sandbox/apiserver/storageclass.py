"""DefaultStorageClass admission: a claim created without a class gets the default one.

kube-apiserver runs this plugin by default, so in a real cluster a PersistentVolumeClaim
that omits ``spec.storageClassName`` is stored with the default StorageClass's name, and
autoscalers (Karpenter and karpy alike) only ever see the filled-in name. As upstream:
only on create; an explicit class, including ``""`` ("no class"), or the legacy
``volume.beta.kubernetes.io/storage-class`` annotation is left alone; with several
default classes the most recently created wins, ties going to the first name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.sandbox.apiserver.objects import Behavior
from karpy.scheduling.volumes import default_class, storage_class_from_dict

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj
    from karpy.sandbox.apiserver.objects import ObjectAPI

LEGACY_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"


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
        # The scheduler's reading of classes and its choice of default: one rule for both.
        classes = [
            storage_class_from_dict(e.obj) for e in api.store.state(classes_kind).objects.values()
        ]
        default = default_class(classes)
        if default is not None:
            spec["storageClassName"] = default.name
