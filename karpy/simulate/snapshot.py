"""From a pile of Kubernetes objects to the scheduler's inputs.

`karpy simulate` accepts whatever ``kubectl get -o yaml`` prints. This module sorts the
objects by kind, parses each into the record the scheduler uses (NodePools, NodeClaims and
NodeOverlays through `karpy.apis`, the rest through `karpy.scheduling` projections), and
decides which pods a round would schedule: pending pods (or only those kube-scheduler
marked ``Unschedulable``), plus the reschedulable pods of nodes being deleted. Anything
unusable raises `SnapshotError` naming the object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.core import InvalidObject
from karpy.apis.labels import AWS_RESTRICTED_LABEL_DOMAINS, AWS_WELL_KNOWN_LABELS
from karpy.apis.nodeclaim import NodeClaim
from karpy.apis.nodeoverlay import NodeOverlay
from karpy.apis.nodepool import NodePool
from karpy.base.quantity import QuantityError, parse_quantity
from karpy.scheduling.catalog import Catalog, CatalogError, parse_catalog
from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.context import SchedulingContext, build_context
from karpy.scheduling.daemonsets import daemonset_pod, daemonset_pods
from karpy.scheduling.defaultspread import (
    Workloads,
    owner_selector_from_dict,
    service_selector_from_dict,
    with_default_spread,
)
from karpy.scheduling.nodes import cluster_nodes, node_from_dict
from karpy.scheduling.pods import PodFormatError, pod_from_dict
from karpy.scheduling.reschedule import pdb_from_dict, reschedulable_pods
from karpy.scheduling.volumelimits import attach_limits_from_dict
from karpy.scheduling.volumes import (
    VolumeCatalog,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from karpy.scheduling.pods import Pod, TopologySpreadConstraint

NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"

__all__ = [
    "KINDS",
    "WORKLOAD_KINDS",
    "SimulationInput",
    "SnapshotError",
    "build_input",
    "object_ref",
]

KINDS: Final = frozenset(
    {
        "NodePool",
        "NodeClaim",
        "NodeOverlay",
        "Node",
        "Pod",
        "DaemonSet",
        "PodDisruptionBudget",
        "PersistentVolumeClaim",
        "PersistentVolume",
        "StorageClass",
        "Namespace",
        "RuntimeClass",
        "CSINode",
    }
)
# Used only with default spread constraints: what their selectors are deduced from.
WORKLOAD_KINDS: Final = frozenset({"Service", "ReplicaSet", "StatefulSet", "ReplicationController"})


class SnapshotError(ValueError):
    """An object that cannot be used; ``ref`` names it (``Pod default/web-1``)."""

    def __init__(self, ref: str, message: str) -> None:
        self.ref = ref
        self.message = message
        super().__init__(f"{ref}: {message}")


def object_ref(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name", "<unnamed>")
    namespace = meta.get("namespace")
    kind = obj.get("kind", "<no kind>")
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


@attrs.frozen(slots=True)
class SimulationInput:
    context: SchedulingContext
    cluster: ClusterSnapshot
    pods: tuple[Pod, ...]


def _parse(obj: Mapping[str, Any], parse: Any) -> Any:
    try:
        return parse(obj)
    except (
        InvalidObject,
        PodFormatError,
        QuantityError,
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
    ) as exc:
        raise SnapshotError(object_ref(obj), str(exc) or type(exc).__name__) from exc


def _validated(obj: Mapping[str, Any], model: Any) -> Any:
    parsed = _parse(obj, model.from_dict)
    validate = getattr(parsed, "validate", None)
    if validate is not None:
        errors = validate()
        if errors:
            raise SnapshotError(object_ref(obj), "; ".join(e.render() for e in errors))
    return parsed


def _runtime_overhead(obj: Mapping[str, Any]) -> dict[str, int]:
    fixed = ((obj.get("overhead") or {}).get("podFixed")) or {}
    return {str(k): parse_quantity(v) for k, v in fixed.items()}


def _namespaces(
    objects: Iterable[Mapping[str, Any]], pods: Iterable[Pod]
) -> dict[str, dict[str, str]]:
    """Namespace labels, with the name label the API server sets on every namespace.

    Namespaces that pods use but the snapshot lacks still exist in the cluster: they get
    just that label, so namespace selectors see them as an API server would.
    """
    out: dict[str, dict[str, str]] = {}
    for pod in pods:
        out.setdefault(pod.namespace, {NAMESPACE_NAME_LABEL: pod.namespace})
    for obj in objects:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        out[name] = {**(meta.get("labels") or {}), NAMESPACE_NAME_LABEL: name}
    return out


def _daemonset_pods(objects: list[Mapping[str, Any]], pods: list[Pod]) -> list[Pod]:
    for obj in objects:
        _parse(obj, daemonset_pod)  # report an unusable DaemonSet by name
    return daemonset_pods(objects, pods)


def _pending(pod: Pod, only_unschedulable: bool) -> bool:
    if pod.node_name or pod.is_terminal or pod.terminating:
        return False
    if pod.is_daemonset_pod or pod.is_static_pod:
        return False
    return pod.is_provisionable if only_unschedulable else True


def build_input(
    objects: Iterable[Mapping[str, Any]],
    catalog: Mapping[str, Any] | Catalog,
    *,
    only_unschedulable: bool = False,
    min_values_policy: str = "Strict",
    default_spread: tuple[TopologySpreadConstraint, ...] = (),
) -> SimulationInput:
    """Parse ``objects`` and ``catalog`` (a catalog document, or one already parsed) into
    one round's scheduler inputs.

    ``default_spread`` (from `parse_scheduler_config`) is applied to the pods to schedule
    that declare no spread constraint, with selectors deduced from the snapshot's Services
    and controllers.
    """
    kinds = KINDS | WORKLOAD_KINDS if default_spread else KINDS
    by_kind: dict[str, list[Mapping[str, Any]]] = {k: [] for k in kinds}
    seen: set[str] = set()
    for obj in objects:
        kind = obj.get("kind")
        if kind in by_kind:
            ref = object_ref(obj)
            if ref in seen:
                raise SnapshotError(ref, "appears more than once in the snapshot")
            seen.add(ref)
            by_kind[str(kind)].append(obj)
    if isinstance(catalog, Catalog):
        parsed_catalog = catalog
    else:
        try:
            parsed_catalog = parse_catalog(catalog)
        except CatalogError as exc:
            raise SnapshotError("instance-type catalog", str(exc)) from exc
    nodepools = [_validated(o, NodePool) for o in by_kind["NodePool"]]
    overlays = [_validated(o, NodeOverlay) for o in by_kind["NodeOverlay"]]
    nodeclaims = [_parse(o, NodeClaim.from_dict) for o in by_kind["NodeClaim"]]
    nodes = [_parse(o, node_from_dict) for o in by_kind["Node"]]
    runtime_classes = {
        str((o.get("metadata") or {}).get("name", "")): _parse(o, _runtime_overhead)
        for o in by_kind["RuntimeClass"]
    }
    pods: list[Pod] = []
    for obj in by_kind["Pod"]:
        pod = _parse(obj, pod_from_dict)
        overhead = runtime_classes.get(pod.runtime_class_name)
        if overhead and not pod.has_overhead:
            pod = pod.with_overhead(overhead)
        pods.append(pod)
    context = build_context(
        nodepools,
        parsed_catalog.instance_types,
        overlays=overlays,
        provider_labels=AWS_WELL_KNOWN_LABELS | parsed_catalog.well_known_labels,
        provider_restricted_domains=AWS_RESTRICTED_LABEL_DOMAINS,
        min_values_policy=min_values_policy,
    )
    capacity = cluster_nodes(nodes, nodeclaims)
    deleting = {n.name for n in capacity if n.marked_for_deletion}
    budgets = [_parse(o, pdb_from_dict) for o in by_kind["PodDisruptionBudget"]]
    bound = [p for p in pods if p.node_name]
    to_schedule = [p for p in pods if _pending(p, only_unschedulable)]
    to_schedule += reschedulable_pods((p for p in bound if p.node_name in deleting), budgets)
    cluster = ClusterSnapshot(
        nodes=tuple(nodes),
        capacity=tuple(capacity),
        bound_pods=tuple(bound),
        daemonset_pods=tuple(_daemonset_pods(by_kind["DaemonSet"], pods)),
        namespaces=_namespaces(by_kind["Namespace"], pods),
        volumes=VolumeCatalog.build(
            [_parse(o, pvc_from_dict) for o in by_kind["PersistentVolumeClaim"]],
            [_parse(o, pv_from_dict) for o in by_kind["PersistentVolume"]],
            [_parse(o, storage_class_from_dict) for o in by_kind["StorageClass"]],
            dict(_parse(o, attach_limits_from_dict) for o in by_kind["CSINode"]),
        ),
    )
    if default_spread:
        workloads = Workloads.build(
            [_parse(o, service_selector_from_dict) for o in by_kind["Service"]],
            [
                _parse(o, owner_selector_from_dict)
                for kind in ("ReplicaSet", "StatefulSet", "ReplicationController")
                for o in by_kind[kind]
            ],
        )
        to_schedule = with_default_spread(to_schedule, default_spread, workloads)
    return SimulationInput(context=context, cluster=cluster, pods=tuple(to_schedule))
