"""Volume topology: where a pod's persistent volumes let it run.

A pod using a PersistentVolumeClaim is tied to where the volume is (or can be created):

* a bound claim follows its PersistentVolume's required node affinity; each of the PV's
  node-selector terms is an alternative (terms are ORed). For ``local`` and ``hostPath``
  volumes the hostname part is dropped: rescheduling means a new node anyway;
* an unbound claim with a ``WaitForFirstConsumer`` StorageClass follows the class's
  ``allowedTopologies``, one alternative per term.

With several volumes the alternatives combine as a cross product, keeping only compatible
combinations when any exist. The requirements narrow the *node* a pod goes to, never the
pod's own affinity, so spread constraints still count the pod by its own constraints.

`volume_requirements` also performs Karpenter's pre-scheduling validation of claims (a
missing claim or class, a deleting or lost claim, an unbound claim whose class binds
immediately): such pods are not provisioned for, and the error says why.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.scheduling.pods import node_selector_term
from karpy.scheduling.requirements import IN, Requirement, Requirements
from karpy.scheduling.shapes import term_requirements

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.scheduling.pods import NodeSelectorTerm, Pod

__all__ = [
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "VolumeCatalog",
    "VolumeError",
    "default_class",
    "pv_from_dict",
    "pvc_from_dict",
    "storage_class_from_dict",
    "volume_requirements",
]

BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


class VolumeError(ValueError):
    """A pod whose volumes Karpenter would refuse to provision for."""


@attrs.frozen(slots=True)
class PersistentVolumeClaim:
    namespace: str
    name: str
    volume_name: str
    storage_class_name: str | None
    deleting: bool = False
    lost: bool = False
    bind_completed: bool = False


@attrs.frozen(slots=True)
class PersistentVolume:
    name: str
    node_terms: tuple[NodeSelectorTerm, ...]
    local: bool = False
    deleting: bool = False
    driver: str = ""  # the CSI driver that attaches it ("" for volumes no driver counts)


@attrs.frozen(slots=True)
class StorageClass:
    name: str
    binding_mode: str
    allowed_topologies: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...]
    default: bool = False
    created: str = ""
    provisioner: str = ""  # as a CSI driver name (in-tree provisioners translated)


def pvc_from_dict(data: Mapping[str, Any]) -> PersistentVolumeClaim:
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    status = data.get("status") or {}
    return PersistentVolumeClaim(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name", "")),
        volume_name=str(spec.get("volumeName") or ""),
        storage_class_name=spec.get("storageClassName"),
        deleting=meta.get("deletionTimestamp") is not None,
        lost=status.get("phase") == "Lost",
        bind_completed=BIND_COMPLETED in (meta.get("annotations") or {}),
    )


def pv_from_dict(data: Mapping[str, Any]) -> PersistentVolume:
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    required = ((spec.get("nodeAffinity") or {}).get("required") or {}).get(
        "nodeSelectorTerms"
    ) or []
    return PersistentVolume(
        name=str(meta.get("name", "")),
        node_terms=tuple(node_selector_term(t) for t in required),
        local=spec.get("local") is not None or spec.get("hostPath") is not None,
        deleting=meta.get("deletionTimestamp") is not None,
        driver=_pv_driver(spec),
    )


# In-tree volume plugins and the CSI drivers that replaced them (CSI migration).
IN_TREE_DRIVERS = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}


def _driver_name(provisioner: str) -> str:
    return IN_TREE_DRIVERS.get(provisioner, provisioner)


def _pv_driver(spec: Mapping[str, Any]) -> str:
    # Karpenter counts a bound volume by its CSI driver, and of the in-tree volume types
    # only AWS EBS; anything else (NFS, hostPath, ...) is not counted against a limit.
    csi = spec.get("csi")
    if csi is not None:
        return str(csi.get("driver") or "")
    if spec.get("awsElasticBlockStore") is not None:
        return IN_TREE_DRIVERS["kubernetes.io/aws-ebs"]
    return ""


def storage_class_from_dict(data: Mapping[str, Any]) -> StorageClass:
    meta = data.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    topologies = []
    for term in data.get("allowedTopologies") or []:
        exprs = tuple(
            (str(e.get("key", "")), tuple(str(v) for v in e.get("values") or ()))
            for e in term.get("matchLabelExpressions") or ()
        )
        topologies.append(exprs)
    return StorageClass(
        name=str(meta.get("name", "")),
        binding_mode=str(data.get("volumeBindingMode") or "Immediate"),
        allowed_topologies=tuple(topologies),
        default=any(annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS),
        created=str(meta.get("creationTimestamp") or ""),
        provisioner=_driver_name(str(data.get("provisioner") or "")),
    )


def default_class(classes: Sequence[StorageClass]) -> StorageClass | None:
    """The class the API server gives a claim that names none, if any class is default.

    Like kube-apiserver's DefaultStorageClass admission: with several defaults the most
    recently created wins, ties going to the first name.
    """
    defaults = sorted((c for c in classes if c.default), key=lambda c: c.name)
    if not defaults:
        return None
    # RFC 3339 UTC timestamps order as strings; max keeps the first name among equals.
    return max(defaults, key=lambda c: c.created)


def _with_class(claim: PersistentVolumeClaim, name: str) -> PersistentVolumeClaim:
    """``claim`` as admission leaves it: an omitted class becomes the default class.

    An explicit ``""`` means "no class" and stays; so does a claim already bound to a
    volume, which admission would have defaulted too but whose class no longer matters.
    """
    if claim.storage_class_name is not None or claim.volume_name:
        return claim
    return attrs.evolve(claim, storage_class_name=name)


@attrs.frozen(slots=True)
class VolumeCatalog:
    claims: Mapping[tuple[str, str], PersistentVolumeClaim] = attrs.field(factory=dict)
    volumes: Mapping[str, PersistentVolume] = attrs.field(factory=dict)
    classes: Mapping[str, StorageClass] = attrs.field(factory=dict)
    # node name -> CSI driver -> how many volumes it may attach there (from CSINodes)
    attach_limits: Mapping[str, Mapping[str, int]] = attrs.field(factory=dict)

    @classmethod
    def build(
        cls,
        claims: Sequence[PersistentVolumeClaim],
        volumes: Sequence[PersistentVolume],
        classes: Sequence[StorageClass],
        attach_limits: Mapping[str, Mapping[str, int]] | None = None,
    ) -> VolumeCatalog:
        default = default_class(classes)
        if default is not None:
            claims = [_with_class(c, default.name) for c in claims]
        return cls(
            claims={(c.namespace, c.name): c for c in claims},
            volumes={v.name: v for v in volumes},
            classes={c.name: c for c in classes},
            attach_limits=dict(attach_limits or {}),
        )


def _pv_alternatives(pv: PersistentVolume) -> list[Requirements]:
    out: list[Requirements] = []
    for term in pv.node_terms:
        exprs = term
        if pv.local:
            exprs = tuple(r for r in term if r.key != LABEL_HOSTNAME)
            if term and not exprs:
                out.append(Requirements())
                continue
        if exprs:
            out.append(term_requirements(exprs))
    return out


def _class_alternatives(sc: StorageClass) -> list[Requirements]:
    out = []
    for term in sc.allowed_topologies:
        reqs = [Requirement.new(key, IN, values) for key, values in term]
        if reqs:
            out.append(Requirements(reqs))
    return out


def _claim_alternatives(
    pod: Pod, claim: PersistentVolumeClaim, catalog: VolumeCatalog
) -> list[Requirements]:
    ref = f"persistentvolumeclaim {claim.namespace}/{claim.name}"
    if claim.deleting:
        raise VolumeError(f"{ref} is being deleted")
    if claim.lost:
        raise VolumeError(f"{ref} is bound to a non-existent persistentvolume")
    if claim.volume_name:
        pv = catalog.volumes.get(claim.volume_name)
        if pv is None:
            raise VolumeError(f"{ref}: persistentvolume {claim.volume_name} not found")
        if pv.deleting:
            raise VolumeError(f"{ref}: persistentvolume {claim.volume_name} is being deleted")
        if not claim.bind_completed:
            raise VolumeError(f"{ref} is not bound: it lacks the {BIND_COMPLETED} annotation")
        return _pv_alternatives(pv)
    if not claim.storage_class_name:
        raise VolumeError(f"{ref} is unbound and names no storage class")
    sc = catalog.classes.get(claim.storage_class_name)
    if sc is None:
        raise VolumeError(f"{ref}: storageclass {claim.storage_class_name} not found")
    if sc.binding_mode == "Immediate":
        raise VolumeError(f"{ref} is unbound and its storageclass binds immediately")
    return _class_alternatives(sc)


def _merge(
    alternatives: list[Requirements | None], volume: list[Requirements]
) -> list[Requirements | None]:
    def combine(a: Requirements | None, b: Requirements) -> Requirements:
        return b if a is None else a.merge(b)

    pairs = list(itertools.product(alternatives, volume))
    compatible = [combine(a, b) for a, b in pairs if a is None or a.intersects(b) is None]
    if compatible:
        return list(compatible)
    return [combine(a, b) for a, b in pairs]


def volume_requirements(pod: Pod, catalog: VolumeCatalog) -> tuple[Requirements, ...]:
    """The node requirement alternatives ``pod``'s volumes impose (empty: none)."""
    alternatives: list[Requirements | None] = [None]
    for volume in pod.volumes:
        claim = catalog.claims.get((pod.namespace, volume.claim_name))
        if claim is None:
            raise VolumeError(
                f"persistentvolumeclaim {pod.namespace}/{volume.claim_name} not found"
            )
        per_volume = _claim_alternatives(pod, claim, catalog)
        if per_volume:
            alternatives = _merge(alternatives, per_volume)
    if alternatives == [None]:
        return ()
    return tuple(a if a is not None else Requirements() for a in alternatives)
