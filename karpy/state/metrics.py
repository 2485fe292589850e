"""Cluster-wide gauges Karpenter exports, computed from cluster state when scraped, and
the pod startup summary, observed from cluster state's changes.

``karpenter_pods_state`` (one series per pod: where it runs and its phase),
``karpenter_nodepools_usage`` / ``karpenter_nodepools_limit`` (per NodePool and
resource) and the per-node ``karpenter_nodes_allocatable``,
``karpenter_nodes_total_pod_requests`` and ``karpenter_nodes_total_daemon_requests``
describe the whole cluster. Keeping them current on every pod event would cost work on
every change even when nobody looks; here they are read from the latest `StateSnapshot`
only when Prometheus scrapes, so an idle controller does nothing for them and a scrape
always agrees with the state karpy decides on. At 40,000 pods a scrape builds 40,000
samples, as Karpenter's does.

``karpenter_pods_startup_duration_seconds`` cannot be read off one snapshot: it needs the
moment a pod stops being Pending. `PodStartupObserver` listens to cluster state's change
batches, whose ``old`` record is the pod as it was: a pod seen Pending and now Running is
observed once, from its creation to the moment its Ready condition turned True (or, when
the kubelet has not reported Ready yet, to now). It keeps nothing per pod; the previous
record cluster state already holds is the only memory it needs. Pods already running
when karpy starts are not observed (their start was never seen), as in Karpenter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from karpy.apis.core import parse_time
from karpy.apis.labels import (
    AWS_WELL_KNOWN_LABELS,
    CORE_WELL_KNOWN_LABELS,
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)
from karpy.base.clock import SYSTEM_CLOCK
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from prometheus_client import Metric

    from karpy.base.clock import Clock
    from karpy.observability.quantiles import WindowedSummary
    from karpy.state.cluster import StateChange
    from karpy.state.records import NodeInfo, PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NODE_LABELS", "POD_STATE_LABELS", "PodStartupObserver", "StateMetrics"]

POD_STATE_LABELS = ("name", "namespace", "owner", "node", "nodepool", "zone", "arch",
                    "capacity_type", "instance_type", "phase")  # fmt: skip
_NODE_KEYS = (LABEL_NODEPOOL, LABEL_ZONE, LABEL_ARCH, LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE)


def _metric_label(key: str) -> str:
    """A node label key as Karpenter names it in metrics: ``karpenter.sh/capacity-type``
    becomes ``capacity_type``."""
    return key.rsplit("/", 1)[-1].lower().replace("-", "_")


# The node metrics carry every well-known label (AWS's too, empty where a provider has
# none), the node's name, whether karpy manages it, and the resource, as Karpenter's do.
_WELL_KNOWN = tuple(sorted(CORE_WELL_KNOWN_LABELS | AWS_WELL_KNOWN_LABELS, key=_metric_label))
NODE_LABELS = (*(_metric_label(k) for k in _WELL_KNOWN), "node_name", "managed",
               "resource_type")  # fmt: skip


class StateMetrics(Collector):
    """The state's series, computed at collect time from a snapshot. Collections run on
    a worker thread (`karpy.observability.metrics.Metrics.exposition_off_loop`); `pin`,
    called on the event loop before each, takes the snapshot they read, so no
    collection makes a snapshot while the loop is changing the state."""

    def __init__(self, snapshot: Callable[[], StateSnapshot]) -> None:
        self.snapshot = snapshot
        self._pinned: StateSnapshot | None = None

    def pin(self) -> None:
        self._pinned = self.snapshot()

    def current(self) -> StateSnapshot:
        pinned = self._pinned
        return pinned if pinned is not None else self.snapshot()

    def describe(self) -> list[Metric]:
        return []  # computed at collect time; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        snapshot = self.current()
        yield self._pods(snapshot)
        yield from self._nodepools(snapshot)
        yield from self._nodes(snapshot)

    def _pods(self, snapshot: StateSnapshot) -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "karpenter_pods_state",
            "Pods karpy sees: 1 per pod, labelled with its node, that node's NodePool, zone, "
            "architecture, capacity type and instance type, and the pod's phase.",
            labels=POD_STATE_LABELS,
        )
        nodes = snapshot.nodes
        node_labels: dict[str, tuple[str, ...]] = {}
        for info in snapshot.pods.values():
            pod = info.pod
            node = pod.node_name
            where = node_labels.get(node)
            if where is None:
                record = nodes.get(node) if node else None
                labels = record.node.labels if record is not None else {}
                where = node_labels[node] = tuple(labels.get(k, "") for k in _NODE_KEYS)
            owner = f"{info.owner.kind}/{info.owner.name}" if info.owner is not None else ""
            family.add_metric([pod.name, pod.namespace, owner, node, *where, pod.phase], 1.0)
        return family

    def _nodepools(self, snapshot: StateSnapshot) -> Iterator[GaugeMetricFamily]:
        usage = GaugeMetricFamily(
            "karpenter_nodepools_usage",
            "Resources of the NodePool's nodes (its status.resources), per resource type.",
            labels=("nodepool", "resource_type"),
        )
        limit = GaugeMetricFamily(
            "karpenter_nodepools_limit",
            "The NodePool's spec.limits, per resource type.",
            labels=("nodepool", "resource_type"),
        )
        for pool in snapshot.nodepools.values():
            for resource, value in pool.status.resources.items():
                usage.add_metric([pool.name, resource], _number(value))
            for resource, value in (pool.spec.limits or {}).items():
                limit.add_metric([pool.name, resource], _number(value))
        yield usage
        yield limit

    def _nodes(self, snapshot: StateSnapshot) -> Iterator[GaugeMetricFamily]:
        allocatable = GaugeMetricFamily(
            "karpenter_nodes_allocatable",
            "The node's allocatable resources (status.allocatable), per resource type.",
            labels=NODE_LABELS,
        )
        pod_requests = GaugeMetricFamily(
            "karpenter_nodes_total_pod_requests",
            "Resources requested by the pods bound to the node that have not finished, "
            "DaemonSet pods included, per resource type.",
            labels=NODE_LABELS,
        )
        daemon_requests = GaugeMetricFamily(
            "karpenter_nodes_total_daemon_requests",
            "Resources requested by the DaemonSet pods bound to the node that have not "
            "finished, per resource type.",
            labels=NODE_LABELS,
        )
        for name, record in snapshot.nodes.items():
            where = _node_labels(record, managed=name in snapshot.claim_of_node)
            for resource, value in record.node.allocatable.items():
                allocatable.add_metric([*where, _resource_label(resource)], _number(value))
            pods, daemons = _requests(snapshot.pods_on(name))
            for resource, value in pods.items():
                pod_requests.add_metric([*where, _resource_label(resource)], _number(value))
            for resource, value in daemons.items():
                daemon_requests.add_metric([*where, _resource_label(resource)], _number(value))
        yield allocatable
        yield pod_requests
        yield daemon_requests


class PodStartupObserver:
    """Observes ``karpenter_pods_startup_duration_seconds`` from cluster state's change
    batches (see the module docstring); subscribe it with `ClusterState.subscribe`."""

    def __init__(self, summary: WindowedSummary, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.summary = summary
        self.clock = clock

    def __call__(self, changes: Sequence[StateChange[Any]]) -> None:
        for change in changes:
            if change.kind != kinds.POD or change.old is None or change.new is None:
                continue
            old: PodInfo = change.old
            new: PodInfo = change.new
            if old.pod.phase != "Pending" or new.pod.phase != "Running":
                continue
            created = parse_time(new.pod.creation_timestamp or None)
            if created is None:
                continue
            started = new.ready_since or self.clock.now()
            self.summary.observe(max(0.0, (started - created).total_seconds()))


def _node_labels(record: NodeInfo, *, managed: bool) -> list[str]:
    labels = record.node.labels
    return [*(labels.get(key, "") for key in _WELL_KNOWN), record.node.name,
            "true" if managed else "false"]  # fmt: skip


def _requests(pods: Iterator[PodInfo]) -> tuple[dict[str, int], dict[str, int]]:
    """The summed requests of the node's unfinished pods, and of its DaemonSet pods."""
    total: dict[str, int] = {}
    daemons: dict[str, int] = {}
    for info in pods:
        if info.pod.is_terminal:
            continue
        is_daemon = info.owner is not None and info.owner.kind == "DaemonSet"
        for resource, value in info.pod.requests.items():
            if resource == "pods":
                continue  # the scheduler's one-pod pseudo-request, not a request
            total[resource] = total.get(resource, 0) + value
            if is_daemon:
                daemons[resource] = daemons.get(resource, 0) + value
    return total, daemons


def _resource_label(resource: str) -> str:
    """``ephemeral-storage`` -> ``ephemeral_storage``, as Karpenter writes resource_type."""
    return resource.lower().replace("-", "_")


def _number(milli: int) -> float:
    """A quantity as Prometheus wants it: cores, bytes, counts (not milli-units)."""
    return milli / 1000
