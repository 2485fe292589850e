"""Storage: PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from tests.factories.base import Obj, match_expression, metadata

_PV_SOURCES: Final[Mapping[str, Obj]] = {
    "local": {"local": {"path": "/mnt/local-disks"}},
    "hostPath": {"hostPath": {"path": "/mnt/local-disks"}},
    "awsElasticBlockStore": {"awsElasticBlockStore": {"fsType": "ext4", "volumeID": "vol-1"}},
    "nfs": {"nfs": {"server": "fake.server", "path": "/some/path"}},
}


def persistent_volume_claim(
    name: str | None = None,
    *,
    namespace: str = "default",
    storage_class_name: str | None = None,
    volume_name: str | None = None,
    storage: str = "1Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    phase: str | None = None,
    bind_completed: bool | None = None,
    annotations: Mapping[str, str] | None = None,
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A PersistentVolumeClaim.

    ``storage_class_name=None`` leaves the class out; ``""`` asks for no class. A claim
    with a ``volume_name`` carries ``pv.kubernetes.io/bind-completed`` unless
    ``bind_completed=False``, as the PV controller leaves it after binding.
    """
    all_annotations = dict(annotations or {})
    if bind_completed if bind_completed is not None else volume_name is not None:
        all_annotations["pv.kubernetes.io/bind-completed"] = "yes"
    spec: Obj = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": storage}},
    }
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    if volume_name is not None:
        spec["volumeName"] = volume_name
    result: Obj = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata(
            name,
            prefix="pvc",
            namespace=namespace,
            annotations=all_annotations or None,
            finalizers=finalizers,
            deletion_timestamp=deletion_timestamp,
        ),
        "spec": spec,
    }
    if phase is not None:
        result["status"] = {"phase": phase}
    return result


def persistent_volume(
    name: str | None = None,
    *,
    zones: Sequence[str] = (),
    node_selector_terms: Sequence[Sequence[Obj]] | None = None,
    storage_class_name: str | None = None,
    source: str = "csi",
    driver: str = "test.driver",
    capacity: str = "100Gi",
    access_modes: Sequence[str] = ("ReadWriteOnce",),
    finalizers: Sequence[str] = (),
    deletion_timestamp: str | None = None,
) -> Obj:
    """A PersistentVolume.

    ``source`` is ``"csi"`` (with ``driver``), ``"local"``, ``"hostPath"``,
    ``"awsElasticBlockStore"`` or ``"nfs"``. Node affinity comes from
    ``node_selector_terms`` (ORed terms of match expressions) or else from ``zones`` (one
    ``topology.kubernetes.io/zone In zones`` term).
    """
    spec: Obj = {
        "capacity": {"storage": capacity},
        "accessModes": list(access_modes),
    }
    if source == "csi":
        spec["csi"] = {"driver": driver, "volumeHandle": "test-handle"}
    elif source in _PV_SOURCES:
        spec.update(_PV_SOURCES[source])
    else:
        raise ValueError(f"unknown volume source {source!r}")
    terms = node_selector_terms
    if terms is None and zones:
        terms = [[match_expression("topology.kubernetes.io/zone", "In", zones)]]
    if terms is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in t]} for t in terms]
            }
        }
    if storage_class_name is not None:
        spec["storageClassName"] = storage_class_name
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": metadata(
            name, prefix="pv", finalizers=finalizers, deletion_timestamp=deletion_timestamp
        ),
        "spec": spec,
    }


def csi_node(name: str, limits: Mapping[str, int]) -> Obj:
    """A ``storage.k8s.io/v1`` CSINode: per CSI driver, how many volumes ``name`` can attach."""
    drivers = [
        {"name": driver, "nodeID": f"{name}-{driver}", "allocatable": {"count": count}}
        for driver, count in limits.items()
    ]
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": metadata(name),
        "spec": {"drivers": drivers},
    }


def storage_class(
    name: str | None = None,
    *,
    provisioner: str = "test-provisioner",
    zones: Sequence[str] | None = None,
    allowed_topologies: Sequence[Mapping[str, Sequence[str]]] | None = None,
    volume_binding_mode: str | None = None,
    default: bool = False,
    annotations: Mapping[str, str] | None = None,
    creation_timestamp: str | None = None,
) -> Obj:
    """A ``storage.k8s.io/v1`` StorageClass.

    ``allowed_topologies`` is a list of ORed terms, each a mapping of label key to allowed
    values; ``zones`` is shorthand for one zone term. ``default=True`` adds the
    is-default-class annotation.
    """
    all_annotations = dict(annotations or {})
    if default:
        all_annotations["storageclass.kubernetes.io/is-default-class"] = "true"
    terms = allowed_topologies
    if terms is None and zones is not None:
        terms = [{"topology.kubernetes.io/zone": zones}]
    result: Obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata(
            name,
            prefix="sc",
            annotations=all_annotations or None,
            creation_timestamp=creation_timestamp,
        ),
        "provisioner": provisioner,
    }
    if terms is not None:
        result["allowedTopologies"] = [
            {
                "matchLabelExpressions": [
                    {"key": key, "values": list(values)} for key, values in term.items()
                ]
            }
            for term in terms
        ]
    if volume_binding_mode is not None:
        result["volumeBindingMode"] = volume_binding_mode
    return result
