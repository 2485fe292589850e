"""Cluster-wide gauges Karpenter exports, computed from cluster state when scraped.

``karpenter_pods_state`` (one series per pod: where it runs and its phase) and
``karpenter_nodepools_usage`` / ``karpenter_nodepools_limit`` (per NodePool and
resource) describe the whole cluster. Keeping them current on every pod event would cost
work on every change even when nobody looks; here they are read from the latest
`StateSnapshot` only when Prometheus scrapes, so an idle controller does nothing for
them and a scrape always agrees with the state karpy decides on. At 40,000 pods a scrape
builds 40,000 samples, as Karpenter's does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from karpy.apis.labels import (
    LABEL_ARCH,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_ZONE,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from prometheus_client import Metric

    from karpy.state.snapshot import StateSnapshot

__all__ = ["POD_STATE_LABELS", "StateMetrics"]

POD_STATE_LABELS = ("name", "namespace", "owner", "node", "nodepool", "zone", "arch",
                    "capacity_type", "instance_type", "phase")  # fmt: skip
_NODE_KEYS = (LABEL_NODEPOOL, LABEL_ZONE, LABEL_ARCH, LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE)


class StateMetrics(Collector):
    def __init__(self, snapshot: Callable[[], StateSnapshot]) -> None:
        self.snapshot = snapshot

    def describe(self) -> list[Metric]:
        return []  # computed at collect time; nothing to check at registration

    def collect(self) -> Iterator[Metric]:
        snapshot = self.snapshot()
        yield self._pods(snapshot)
        yield from self._nodepools(snapshot)

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


def _number(milli: int) -> float:
    """A quantity as Prometheus wants it: cores, bytes, counts (not milli-units)."""
    return milli / 1000
