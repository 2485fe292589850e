"""What a round derives from the pods bound to nodes, kept with the cluster it read.

Disruption asks many what-ifs of one cluster, one per candidate node, and each used to
derive again, from every bound pod, what is used on each node, the pods indexed for
topology counting and the label keys their anti-affinity selects, and again from every
node the requirements its labels make. At 40,000 pods that was most of a what-if's
0.2 s. These derivations read only the bound pods and each node's labels, so they are
computed once per `ClusterSnapshot` and shared by every `Scheduler` built on it, or on a
copy that keeps its bound pods (``attrs.evolve(cluster, capacity=...)``, as a what-if
marks its candidates). The solver only reads them.

The index is tied to the bound-pods tuple it was computed from: a copy of the cluster
with other bound pods recomputes. What-ifs of one pass run on one worker thread, but a
lock keeps two threads from interleaving a computation.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.scheduling.boundpods import BoundPods
from karpy.scheduling.requirements import Requirements

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.scheduling.nodes import ClusterNode
    from karpy.scheduling.pods import HostPort, Pod
    from karpy.scheduling.resources import ResourceList

__all__ = ["BoundUsage", "ClusterIndex", "bound_selector_keys"]


@attrs.frozen(slots=True)
class BoundUsage:
    """Per node name, from the non-terminal pods bound there: summed requests, the part
    of them DaemonSet pods make, and the host ports they hold."""

    requests: Mapping[str, ResourceList]
    daemons: Mapping[str, ResourceList]
    ports: Mapping[str, Sequence[HostPort]]


def bound_usage(pods: Sequence[Pod]) -> BoundUsage:
    requests: dict[str, ResourceList] = {}
    daemons: dict[str, ResourceList] = {}
    ports: dict[str, list[HostPort]] = {}
    for pod in pods:
        if pod.is_terminal:
            continue
        node_requests = requests.setdefault(pod.node_name, {})
        for name, value in pod.requests.items():
            node_requests[name] = node_requests.get(name, 0) + value
        if pod.is_daemonset_pod:
            daemon = daemons.setdefault(pod.node_name, {})
            for name, value in pod.requests.items():
                daemon[name] = daemon.get(name, 0) + value
        if pod.host_ports:
            ports.setdefault(pod.node_name, []).extend(pod.host_ports)
    return BoundUsage(requests, daemons, ports)


def bound_selector_keys(pods: Sequence[Pod]) -> frozenset[str]:
    """Label keys the bound pods' required anti-affinity selects on."""
    keys: set[str] = set()
    for pod in pods:
        for term in pod.required_anti_affinity:
            keys.update(term.selector.keys())
    return frozenset(keys)


class ClusterIndex:
    """See the module docstring."""

    __slots__ = ("_bound", "_keys", "_lock", "_pods", "_requirements", "_usage")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pods: Sequence[Pod] | None = None
        self._usage: BoundUsage | None = None
        self._bound: BoundPods | None = None
        self._keys: frozenset[str] | None = None
        # node name -> (the labels mapping it was made from, requirements)
        self._requirements: dict[str, tuple[Mapping[str, str], Requirements]] = {}

    def _for(self, pods: Sequence[Pod]) -> None:
        if self._pods is not pods:
            self._pods = pods
            self._usage = self._bound = self._keys = None

    def usage(self, pods: Sequence[Pod]) -> BoundUsage:
        with self._lock:
            self._for(pods)
            if self._usage is None:
                self._usage = bound_usage(pods)
            return self._usage

    def bound(self, pods: Sequence[Pod]) -> BoundPods:
        with self._lock:
            self._for(pods)
            if self._bound is None:
                self._bound = BoundPods(pods)
            return self._bound

    def selector_keys(self, pods: Sequence[Pod]) -> frozenset[str]:
        with self._lock:
            self._for(pods)
            if self._keys is None:
                self._keys = bound_selector_keys(pods)
            return self._keys

    def node_requirements(self, node: ClusterNode) -> Requirements:
        """The requirements ``node``'s labels make (its hostname left out)."""
        labels = node.labels
        cached = self._requirements.get(node.name)
        if cached is not None and cached[0] is labels:
            return cached[1]
        requirements = Requirements.from_labels(
            {k: v for k, v in labels.items() if k != LABEL_HOSTNAME}
        )
        self._requirements[node.name] = (labels, requirements)
        return requirements
