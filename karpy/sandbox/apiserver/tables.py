"""Server-side table output (``Accept: application/json;as=Table;g=meta.k8s.io;v=v1``).

kubectl asks for tables on ``get``; the server picks the columns. Built-in kinds get
the columns kube-apiserver's printers give them (the common ones, not every wide
column); custom resources get their CRD's ``additionalPrinterColumns`` with ``date``
cells rendered as ages, as the apiextensions table convertor does.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import orjson

from karpy.sandbox.apiserver.jsonpath import compile_path
from karpy.sandbox.apiserver.kinds import Kind, Obj, PrinterColumn


def parse_time(stamp: str) -> float | None:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
    except (TypeError, ValueError):
        return None


def human_duration(seconds: float) -> str:
    """``duration.HumanDuration`` from apimachinery."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        rest = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if rest == 0 else f"{years}y{rest}d"
    return f"{hours // 24 // 365}y"


def age(stamp: Any) -> str:
    when = parse_time(stamp) if isinstance(stamp, str) else None
    return "<unknown>" if when is None else human_duration(time.time() - when)


def _get(obj: Obj, *path: str) -> Any:
    node: Any = obj
    for part in path:
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _age_of(obj: Obj) -> str:
    return age(_get(obj, "metadata", "creationTimestamp"))


def _none(value: Any) -> Any:
    return "<none>" if value in (None, "", []) else value


NAME = PrinterColumn(
    "Name",
    format="name",
    description="Name must be unique within a namespace.",
    value=lambda o: _get(o, "metadata", "name"),
)
AGE = PrinterColumn(
    "Age",
    description="CreationTimestamp is a timestamp representing the server time "
    "when this object was created.",
    value=_age_of,
)


def _condition(obj: Obj, kind: str) -> dict[str, Any] | None:
    for cond in _get(obj, "status", "conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


# ------------------------------------------------------------------ pods


def _pod_ready(pod: Obj) -> str:
    statuses = _get(pod, "status", "containerStatuses") or []
    total = len(_get(pod, "spec", "containers") or [])
    ready = sum(1 for s in statuses if isinstance(s, dict) and s.get("ready"))
    return f"{ready}/{total}"


def _pod_status(pod: Obj) -> str:
    reason = _get(pod, "status", "reason") or _get(pod, "status", "phase") or "Unknown"
    for s in _get(pod, "status", "containerStatuses") or []:
        waiting = _get(s, "state", "waiting", "reason")
        terminated = _get(s, "state", "terminated", "reason")
        if waiting:
            reason = waiting
        elif terminated:
            reason = terminated
    if _get(pod, "metadata", "deletionTimestamp"):
        reason = "Terminating"
    return str(reason)


def _pod_restarts(pod: Obj) -> int:
    return sum(
        int(s.get("restartCount", 0)) for s in _get(pod, "status", "containerStatuses") or []
    )


POD_COLUMNS = (
    NAME,
    PrinterColumn(
        "Ready",
        description="The aggregate readiness state of this pod for accepting traffic.",
        value=_pod_ready,
    ),
    PrinterColumn(
        "Status",
        description="The aggregate status of the containers in this pod.",
        value=_pod_status,
    ),
    PrinterColumn(
        "Restarts",
        type="string",
        description="The number of times the containers in this pod have been restarted.",
        value=lambda p: str(_pod_restarts(p)),
    ),
    AGE,
    PrinterColumn(
        "IP",
        priority=1,
        description="IP address allocated to the pod.",
        value=lambda p: _none(_get(p, "status", "podIP")),
    ),
    PrinterColumn(
        "Node",
        priority=1,
        description="Name of the Node the Pod is assigned to.",
        value=lambda p: _none(_get(p, "spec", "nodeName")),
    ),
    PrinterColumn(
        "Nominated Node",
        priority=1,
        description="Name of the Node the Pod is nominated to.",
        value=lambda p: _none(_get(p, "status", "nominatedNodeName")),
    ),
    PrinterColumn(
        "Readiness Gates",
        priority=1,
        description="Pod readiness gates.",
        value=lambda p: _none(_get(p, "spec", "readinessGates")),
    ),
)

# ------------------------------------------------------------------ nodes


def _node_status(node: Obj) -> str:
    ready = _condition(node, "Ready")
    if ready is None:
        status = "Unknown"
    else:
        status = "Ready" if ready.get("status") == "True" else "NotReady"
    if _get(node, "spec", "unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_roles(node: Obj) -> str:
    roles = []
    for key, value in (_get(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/"):
            roles.append(key.split("/", 1)[1])
        elif key == "kubernetes.io/role":
            roles.append(value)
    return ",".join(sorted(r for r in roles if r)) or "<none>"


def _address(node: Obj, kind: str) -> str:
    for addr in _get(node, "status", "addresses") or []:
        if isinstance(addr, dict) and addr.get("type") == kind:
            return str(addr.get("address"))
    return "<none>"


NODE_COLUMNS = (
    NAME,
    PrinterColumn("Status", description="The status of the node", value=_node_status),
    PrinterColumn("Roles", description="The roles of the node", value=_node_roles),
    AGE,
    PrinterColumn(
        "Version",
        description="Kubelet Version reported by the node.",
        value=lambda n: _get(n, "status", "nodeInfo", "kubeletVersion") or "",
    ),
    PrinterColumn("Internal-IP", priority=1, value=lambda n: _address(n, "InternalIP")),
    PrinterColumn("External-IP", priority=1, value=lambda n: _address(n, "ExternalIP")),
    PrinterColumn(
        "OS-Image",
        priority=1,
        value=lambda n: _get(n, "status", "nodeInfo", "osImage") or "<unknown>",
    ),
    PrinterColumn(
        "Kernel-Version",
        priority=1,
        value=lambda n: _get(n, "status", "nodeInfo", "kernelVersion") or "<unknown>",
    ),
    PrinterColumn(
        "Container-Runtime",
        priority=1,
        value=lambda n: _get(n, "status", "nodeInfo", "containerRuntimeVersion") or "<unknown>",
    ),
)

NAMESPACE_COLUMNS = (
    NAME,
    PrinterColumn(
        "Status",
        description="The status of the namespace",
        value=lambda n: _get(n, "status", "phase") or "",
    ),
    AGE,
)


def _event_object(event: Obj) -> str:
    ref = event.get("involvedObject") or event.get("regarding") or {}
    return f"{str(ref.get('kind', '')).lower()}/{ref.get('name', '')}"


def _event_last_seen(event: Obj) -> str:
    stamp = (
        event.get("lastTimestamp")
        or event.get("eventTime")
        or _get(event, "metadata", "creationTimestamp")
    )
    if isinstance(stamp, str) and "." in stamp:
        stamp = stamp.split(".")[0] + "Z"
    return age(stamp)


EVENT_COLUMNS = (
    PrinterColumn("Last Seen", value=_event_last_seen),
    PrinterColumn("Type", value=lambda e: e.get("type", "")),
    PrinterColumn("Reason", value=lambda e: e.get("reason", "")),
    PrinterColumn("Object", value=_event_object),
    PrinterColumn("Message", value=lambda e: e.get("message", e.get("note", ""))),
)


def _ports(svc: Obj) -> str:
    out = []
    for port in _get(svc, "spec", "ports") or []:
        text = f"{port.get('port')}/{port.get('protocol', 'TCP')}"
        if port.get("nodePort"):
            text = f"{port.get('port')}:{port['nodePort']}/{port.get('protocol', 'TCP')}"
        out.append(text)
    return ",".join(out) or "<none>"


SERVICE_COLUMNS = (
    NAME,
    PrinterColumn("Type", value=lambda s: _get(s, "spec", "type") or "ClusterIP"),
    PrinterColumn("Cluster-IP", value=lambda s: _none(_get(s, "spec", "clusterIP"))),
    PrinterColumn(
        "External-IP", value=lambda s: _none(",".join(_get(s, "spec", "externalIPs") or []))
    ),
    PrinterColumn("Port(s)", value=_ports),
    AGE,
)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int) else 0


DEPLOYMENT_COLUMNS = (
    NAME,
    PrinterColumn(
        "Ready",
        value=lambda d: (
            f"{_int(_get(d, 'status', 'readyReplicas'))}/{_int(_get(d, 'spec', 'replicas'))}"
        ),
    ),
    PrinterColumn(
        "Up-to-date", type="integer", value=lambda d: _int(_get(d, "status", "updatedReplicas"))
    ),
    PrinterColumn(
        "Available", type="integer", value=lambda d: _int(_get(d, "status", "availableReplicas"))
    ),
    AGE,
)
REPLICASET_COLUMNS = (
    NAME,
    PrinterColumn("Desired", type="integer", value=lambda d: _int(_get(d, "spec", "replicas"))),
    PrinterColumn("Current", type="integer", value=lambda d: _int(_get(d, "status", "replicas"))),
    PrinterColumn(
        "Ready", type="integer", value=lambda d: _int(_get(d, "status", "readyReplicas"))
    ),
    AGE,
)
DAEMONSET_COLUMNS = (
    NAME,
    PrinterColumn(
        "Desired", type="integer", value=lambda d: _int(_get(d, "status", "desiredNumberScheduled"))
    ),
    PrinterColumn(
        "Current", type="integer", value=lambda d: _int(_get(d, "status", "currentNumberScheduled"))
    ),
    PrinterColumn("Ready", type="integer", value=lambda d: _int(_get(d, "status", "numberReady"))),
    PrinterColumn(
        "Up-to-date",
        type="integer",
        value=lambda d: _int(_get(d, "status", "updatedNumberScheduled")),
    ),
    PrinterColumn(
        "Available", type="integer", value=lambda d: _int(_get(d, "status", "numberAvailable"))
    ),
    PrinterColumn(
        "Node Selector",
        value=lambda d: _none(
            ",".join(
                f"{k}={v}"
                for k, v in (_get(d, "spec", "template", "spec", "nodeSelector") or {}).items()
            )
        ),
    ),
    AGE,
)
STATEFULSET_COLUMNS = (
    NAME,
    PrinterColumn(
        "Ready",
        value=lambda d: (
            f"{_int(_get(d, 'status', 'readyReplicas'))}/{_int(_get(d, 'spec', 'replicas'))}"
        ),
    ),
    AGE,
)


def _intstr(value: Any) -> str:
    return "N/A" if value is None else str(value)


PDB_COLUMNS = (
    NAME,
    PrinterColumn("Min Available", value=lambda p: _intstr(_get(p, "spec", "minAvailable"))),
    PrinterColumn("Max Unavailable", value=lambda p: _intstr(_get(p, "spec", "maxUnavailable"))),
    PrinterColumn(
        "Allowed Disruptions",
        type="integer",
        value=lambda p: _int(_get(p, "status", "disruptionsAllowed")),
    ),
    AGE,
)
LEASE_COLUMNS = (
    NAME,
    PrinterColumn("Holder", value=lambda lease: _get(lease, "spec", "holderIdentity") or ""),
    AGE,
)
CONFIGMAP_COLUMNS = (
    NAME,
    PrinterColumn(
        "Data",
        type="integer",
        value=lambda c: len(c.get("data") or {}) + len(c.get("binaryData") or {}),
    ),
    AGE,
)
SECRET_COLUMNS = (
    NAME,
    PrinterColumn("Type", value=lambda s: s.get("type", "Opaque")),
    PrinterColumn("Data", type="integer", value=lambda s: len(s.get("data") or {})),
    AGE,
)
STORAGECLASS_COLUMNS = (
    NAME,
    PrinterColumn("Provisioner", value=lambda s: s.get("provisioner", "")),
    PrinterColumn("ReclaimPolicy", value=lambda s: s.get("reclaimPolicy", "Delete")),
    PrinterColumn("VolumeBindingMode", value=lambda s: s.get("volumeBindingMode", "Immediate")),
    PrinterColumn(
        "AllowVolumeExpansion", value=lambda s: str(bool(s.get("allowVolumeExpansion"))).lower()
    ),
    AGE,
)
PV_COLUMNS = (
    NAME,
    PrinterColumn("Capacity", value=lambda v: _get(v, "spec", "capacity", "storage") or ""),
    PrinterColumn("Access Modes", value=lambda v: ",".join(_get(v, "spec", "accessModes") or [])),
    PrinterColumn(
        "Reclaim Policy", value=lambda v: _get(v, "spec", "persistentVolumeReclaimPolicy") or ""
    ),
    PrinterColumn("Status", value=lambda v: _get(v, "status", "phase") or ""),
    PrinterColumn(
        "Claim",
        value=lambda v: "/".join(
            filter(
                None,
                [_get(v, "spec", "claimRef", "namespace"), _get(v, "spec", "claimRef", "name")],
            )
        ),
    ),
    PrinterColumn("StorageClass", value=lambda v: _get(v, "spec", "storageClassName") or ""),
    AGE,
)
PVC_COLUMNS = (
    NAME,
    PrinterColumn("Status", value=lambda v: _get(v, "status", "phase") or ""),
    PrinterColumn("Volume", value=lambda v: _get(v, "spec", "volumeName") or ""),
    PrinterColumn("Capacity", value=lambda v: _get(v, "status", "capacity", "storage") or ""),
    PrinterColumn("Access Modes", value=lambda v: ",".join(_get(v, "status", "accessModes") or [])),
    PrinterColumn("StorageClass", value=lambda v: _get(v, "spec", "storageClassName") or "<unset>"),
    AGE,
)
CSINODE_COLUMNS = (
    NAME,
    PrinterColumn("Drivers", type="integer", value=lambda c: len(_get(c, "spec", "drivers") or [])),
    AGE,
)
VOLUMEATTACHMENT_COLUMNS = (
    NAME,
    PrinterColumn("Attacher", value=lambda v: _get(v, "spec", "attacher") or ""),
    PrinterColumn("PV", value=lambda v: _get(v, "spec", "source", "persistentVolumeName") or ""),
    PrinterColumn("Node", value=lambda v: _get(v, "spec", "nodeName") or ""),
    PrinterColumn("Attached", value=lambda v: str(bool(_get(v, "status", "attached"))).lower()),
    AGE,
)
RUNTIMECLASS_COLUMNS = (NAME, PrinterColumn("Handler", value=lambda r: r.get("handler", "")), AGE)
CRD_COLUMNS = (
    NAME,
    PrinterColumn(
        "Created At", type="date", value=lambda c: _get(c, "metadata", "creationTimestamp")
    ),
)
DEFAULT_COLUMNS = (NAME, AGE)
CUSTOM_DEFAULT_COLUMNS = (
    NAME,
    PrinterColumn("Age", type="date", json_path=compile_path(".metadata.creationTimestamp")),
)


def cell(column: PrinterColumn, obj: Obj) -> Any:
    if column.value is not None:
        value = column.value(obj)
        if column.type == "date":
            return age(value)
        return value
    assert column.json_path is not None
    found = column.json_path.find(obj)
    if not found:
        return None
    value = found[0]
    if column.type == "date":
        return age(value) if isinstance(value, str) else None
    if column.type == "integer":
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if column.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if column.type == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def columns_of(kind: Kind) -> tuple[PrinterColumn, ...]:
    if kind.columns:
        return kind.columns
    return CUSTOM_DEFAULT_COLUMNS if kind.custom else DEFAULT_COLUMNS


def partial_metadata(obj: Obj) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata", {}),
    }


def table_row(kind: Kind, obj: Obj, include_object: str) -> dict[str, Any]:
    row: dict[str, Any] = {"cells": [cell(c, obj) for c in columns_of(kind)]}
    if include_object == "Object":
        row["object"] = obj
    elif include_object != "None":
        row["object"] = partial_metadata(obj)
    return row


def table(
    kind: Kind, objects: list[Obj], metadata: dict[str, Any], include_object: str
) -> dict[str, Any]:
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": [c.definition() for c in columns_of(kind)],
        "rows": [table_row(kind, o, include_object) for o in objects],
    }
