"""The built-in kinds the emulator serves, as data.

Field labels are the field selectors kube-apiserver supports for each kind (plus
``metadata.name`` and ``metadata.namespace``, which every kind supports). Patch metadata
lists the ``patchStrategy:"merge"`` fields of the Go types with their
``patchMergeKey``; a list that is not named here is replaced wholesale by a strategic
merge patch, as upstream does (notably ``spec.taints`` of a Node and
``spec.tolerations`` of a Pod, which are atomic in ``k8s.io/api``).
"""

from __future__ import annotations

from typing import Any

from karpy.sandbox.apiserver import tables
from karpy.sandbox.apiserver.jsonpath import compile_path
from karpy.sandbox.apiserver.kinds import FieldGetter, Kind, Obj, ScaleSpec
from karpy.sandbox.apiserver.rbackinds import access_kinds


def field(path: str) -> FieldGetter:
    parts = path.split(".")

    def get(obj: Obj) -> str | None:
        node: Any = obj
        for part in parts:
            if not isinstance(node, dict):
                return None
            node = node.get(part)
        if node is None:
            return None
        if isinstance(node, bool):
            return "true" if node else "false"
        return str(node)

    return get


def _fields(*paths: str) -> dict[str, FieldGetter]:
    return {p: field(p) for p in paths}


def _pod_ips(pod: Obj) -> str | None:
    ips = (pod.get("status") or {}).get("podIPs") or []
    return ",".join(str(ip.get("ip", "")) for ip in ips if isinstance(ip, dict)) or None


METADATA_PATCH = {"metadata.finalizers": "", "metadata.ownerReferences": "uid"}

_CONTAINER = {
    "ports": "containerPort",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
}
_POD_SPEC_LISTS = {
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "schedulingGates": "name",
    "resourceClaims": "name",
}


def pod_spec_patch(prefix: str) -> dict[str, str]:
    meta: dict[str, str] = {}
    for containers in ("containers", "initContainers", "ephemeralContainers"):
        meta[f"{prefix}.{containers}"] = "name"
        for sub, key in _CONTAINER.items():
            meta[f"{prefix}.{containers}.{sub}"] = key
    for sub, key in _POD_SPEC_LISTS.items():
        meta[f"{prefix}.{sub}"] = key
    return meta


def _patch(*parts: dict[str, str]) -> dict[str, str]:
    meta = dict(METADATA_PATCH)
    for part in parts:
        meta.update(part)
    return meta


CONDITIONS = {"status.conditions": "type"}
POD_PATCH = _patch(
    pod_spec_patch("spec"),
    CONDITIONS,
    {"status.podIPs": "ip", "status.hostIPs": "ip", "status.resourceClaimStatuses": "name"},
)
TEMPLATE_PATCH = _patch(pod_spec_patch("spec.template.spec"), CONDITIONS)
NODE_PATCH = _patch({"spec.podCIDRs": "", "status.conditions": "type", "status.addresses": "type"})


def _core_event_to_new(obj: Obj, api_version: str) -> Obj:
    """core/v1 Event (storage) → events.k8s.io/v1 Event."""
    out: Obj = {"kind": "Event", "apiVersion": api_version}
    renames = {
        "involvedObject": "regarding",
        "message": "note",
        "source": "deprecatedSource",
        "firstTimestamp": "deprecatedFirstTimestamp",
        "lastTimestamp": "deprecatedLastTimestamp",
        "count": "deprecatedCount",
        "reportingComponent": "reportingController",
    }
    for key, value in obj.items():
        if key in ("kind", "apiVersion"):
            continue
        out[renames.get(key, key)] = value
    return out


def _new_event_to_core(obj: Obj, api_version: str) -> Obj:
    out: Obj = {"kind": "Event", "apiVersion": "v1"}
    renames = {
        "regarding": "involvedObject",
        "note": "message",
        "deprecatedSource": "source",
        "deprecatedFirstTimestamp": "firstTimestamp",
        "deprecatedLastTimestamp": "lastTimestamp",
        "deprecatedCount": "count",
        "reportingController": "reportingComponent",
    }
    for key, value in obj.items():
        if key in ("kind", "apiVersion"):
            continue
        out[renames.get(key, key)] = value
    return out


def _replicas_scale(selector: str = ".spec.selector") -> ScaleSpec:
    return ScaleSpec(
        compile_path(".spec.replicas"), compile_path(".status.replicas"), compile_path(selector)
    )


EVENT_FIELDS = _fields(
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
EVENT_FIELDS["source"] = lambda e: (e.get("source") or {}).get("component")


def builtin_kinds() -> list[Kind]:
    pod_fields = _fields(
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    )
    pod_fields["status.podIPs"] = _pod_ips
    return [
        Kind(
            "",
            ("v1",),
            "Pod",
            "pods",
            "pod",
            True,
            ("po",),
            ("all",),
            status_subresource=True,
            extra_subresources=("binding", "eviction"),
            field_labels=pod_fields,
            patch_meta=POD_PATCH,
            columns=tables.POD_COLUMNS,
            returns_deleted_object=True,
            indexed_fields=("spec.nodeName",),
        ),
        Kind(
            "",
            ("v1",),
            "Node",
            "nodes",
            "node",
            False,
            ("no",),
            status_subresource=True,
            field_labels=_fields("spec.unschedulable"),
            patch_meta=NODE_PATCH,
            columns=tables.NODE_COLUMNS,
            status_on_create="keep",
            returns_deleted_object=True,
        ),
        Kind(
            "",
            ("v1",),
            "Namespace",
            "namespaces",
            "namespace",
            False,
            ("ns",),
            status_subresource=True,
            extra_subresources=("finalize",),
            field_labels=_fields("status.phase"),
            patch_meta=_patch(CONDITIONS),
            columns=tables.NAMESPACE_COLUMNS,
            returns_deleted_object=True,
            name_rule="label",
        ),
        Kind(
            "",
            ("v1",),
            "Event",
            "events",
            "event",
            True,
            ("ev",),
            field_labels=EVENT_FIELDS,
            patch_meta=_patch(),
            columns=tables.EVENT_COLUMNS,
            status_on_create="keep",
            create_on_update=True,
            name_rule="path",
        ),
        Kind(
            "",
            ("v1",),
            "Service",
            "services",
            "service",
            True,
            ("svc",),
            ("all",),
            status_subresource=True,
            patch_meta=_patch({"spec.ports": "port"}, CONDITIONS),
            columns=tables.SERVICE_COLUMNS,
            name_rule="label",
        ),
        Kind(
            "",
            ("v1",),
            "PersistentVolume",
            "persistentvolumes",
            "persistentvolume",
            False,
            ("pv",),
            status_subresource=True,
            patch_meta=_patch(),
            columns=tables.PV_COLUMNS,
            returns_deleted_object=True,
        ),
        Kind(
            "",
            ("v1",),
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            "persistentvolumeclaim",
            True,
            ("pvc",),
            status_subresource=True,
            patch_meta=_patch(CONDITIONS),
            columns=tables.PVC_COLUMNS,
            returns_deleted_object=True,
        ),
        Kind(  # served because CapacityBuffers name them as the shape of their pods
            "",
            ("v1",),
            "PodTemplate",
            "podtemplates",
            "podtemplate",
            True,
            patch_meta=_patch(),
        ),
        Kind(
            "",
            ("v1",),
            "ConfigMap",
            "configmaps",
            "configmap",
            True,
            ("cm",),
            patch_meta=_patch(),
            columns=tables.CONFIGMAP_COLUMNS,
        ),
        Kind(
            "",
            ("v1",),
            "Secret",
            "secrets",
            "secret",
            True,
            field_labels=_fields("type"),
            patch_meta=_patch(),
            columns=tables.SECRET_COLUMNS,
        ),
        Kind(
            "events.k8s.io",
            ("v1",),
            "Event",
            "events",
            "event",
            True,
            ("ev",),
            field_labels=_fields(
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "regarding.apiVersion",
                "reason",
                "type",
                "reportingController",
            ),
            patch_meta=_patch(),
            columns=tables.EVENT_COLUMNS,
            status_on_create="keep",
            create_on_update=True,
            name_rule="path",
            storage=("", "events"),
            to_storage=_new_event_to_core,
            from_storage=_core_event_to_new,
        ),
        Kind(
            "apps",
            ("v1",),
            "Deployment",
            "deployments",
            "deployment",
            True,
            ("deploy",),
            ("all",),
            status_subresource=True,
            scale=_replicas_scale(),
            patch_meta=TEMPLATE_PATCH,
            columns=tables.DEPLOYMENT_COLUMNS,
        ),
        Kind(  # served because kubectl snapshots and Karpenter read pod owners of this kind
            "",
            ("v1",),
            "ReplicationController",
            "replicationcontrollers",
            "replicationcontroller",
            True,
            ("rc",),
            ("all",),
            status_subresource=True,
            scale=ScaleSpec(compile_path(".spec.replicas"), compile_path(".status.replicas")),
            field_labels=_fields("status.replicas"),
            patch_meta=TEMPLATE_PATCH,
            columns=tables.REPLICASET_COLUMNS,
        ),
        Kind(
            "apps",
            ("v1",),
            "ReplicaSet",
            "replicasets",
            "replicaset",
            True,
            ("rs",),
            ("all",),
            status_subresource=True,
            scale=_replicas_scale(),
            field_labels=_fields("status.replicas"),
            patch_meta=TEMPLATE_PATCH,
            columns=tables.REPLICASET_COLUMNS,
        ),
        Kind(
            "apps",
            ("v1",),
            "DaemonSet",
            "daemonsets",
            "daemonset",
            True,
            ("ds",),
            ("all",),
            status_subresource=True,
            patch_meta=TEMPLATE_PATCH,
            columns=tables.DAEMONSET_COLUMNS,
        ),
        Kind(
            "apps",
            ("v1",),
            "StatefulSet",
            "statefulsets",
            "statefulset",
            True,
            ("sts",),
            ("all",),
            status_subresource=True,
            scale=_replicas_scale(),
            patch_meta=TEMPLATE_PATCH,
            columns=tables.STATEFULSET_COLUMNS,
        ),
        Kind(
            "policy",
            ("v1",),
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            "poddisruptionbudget",
            True,
            ("pdb",),
            status_subresource=True,
            patch_meta=_patch(CONDITIONS),
            columns=tables.PDB_COLUMNS,
        ),
        Kind(
            "storage.k8s.io",
            ("v1",),
            "StorageClass",
            "storageclasses",
            "storageclass",
            False,
            ("sc",),
            patch_meta=_patch(),
            columns=tables.STORAGECLASS_COLUMNS,
            returns_deleted_object=True,
        ),
        Kind(
            "storage.k8s.io",
            ("v1",),
            "CSINode",
            "csinodes",
            "csinode",
            False,
            patch_meta=_patch({"spec.drivers": "name"}),
            columns=tables.CSINODE_COLUMNS,
        ),
        Kind(
            "storage.k8s.io",
            ("v1",),
            "VolumeAttachment",
            "volumeattachments",
            "volumeattachment",
            False,
            status_subresource=True,
            patch_meta=_patch(),
            columns=tables.VOLUMEATTACHMENT_COLUMNS,
            returns_deleted_object=True,
        ),
        Kind(
            "coordination.k8s.io",
            ("v1",),
            "Lease",
            "leases",
            "lease",
            True,
            patch_meta=_patch(),
            columns=tables.LEASE_COLUMNS,
            create_on_update=True,
        ),
        Kind(
            "node.k8s.io",
            ("v1",),
            "RuntimeClass",
            "runtimeclasses",
            "runtimeclass",
            False,
            patch_meta=_patch(),
            columns=tables.RUNTIMECLASS_COLUMNS,
        ),
        Kind(
            "apiextensions.k8s.io",
            ("v1",),
            "CustomResourceDefinition",
            "customresourcedefinitions",
            "customresourcedefinition",
            False,
            ("crd", "crds"),
            ("api-extensions",),
            status_subresource=True,
            patch_meta=_patch(CONDITIONS),
            columns=tables.CRD_COLUMNS,
            returns_deleted_object=True,
        ),
        *access_kinds(),
    ]
