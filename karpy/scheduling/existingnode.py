"""Capacity that already exists: registered nodes and in-flight NodeClaims.

An existing node cannot change shape, so the order of checks in `can_add` (Karpenter's
``ExistingNode.CanAdd``) puts the cheap, likely failures first: taints, host ports, then
whether the pod's requests fit what is left (allocatable minus bound pods minus the
DaemonSet pods still expected), then label requirements (no undefined labels allowed: the
node's labels are all there is), volume topology and finally topology.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.scheduling.daemonsets import existing_node_daemon_overhead
from karpy.scheduling.kinds import RejectionKind
from karpy.scheduling.nodeclaim import (
    Plan,
    Rejection,
    host_ports_conflict,
    hostname_mismatch,
)
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import ResourceList, fits, subtract
from karpy.scheduling.taints import first_untolerated
from karpy.scheduling.volumelimits import VolumeUsage, pod_volumes

if TYPE_CHECKING:
    from karpy.apis.core import Taint
    from karpy.scheduling.clustersnapshot import ClusterSnapshot
    from karpy.scheduling.environment import RoundEnvironment
    from karpy.scheduling.nodes import ClusterNode
    from karpy.scheduling.pods import HostPort, Pod
    from karpy.scheduling.shapes import PodShape
    from karpy.scheduling.topology import Topology
    from karpy.scheduling.volumelimits import PodVolumes

__all__ = ["ExistingNode", "existing_nodes"]

_NONE: frozenset[str] = frozenset()


class ExistingNode:
    __slots__ = (
        "host_ports",
        "hostname",
        "index",
        "node",
        "pods",
        "position",
        "remaining",
        "requirements",
        "shapes",
        "taints",
        "volumes",
    )

    def __init__(
        self,
        node: ClusterNode,
        index: int,
        remaining: ResourceList,
        host_ports: list[HostPort],
        volumes: VolumeUsage | None = None,
        *,
        requirements: Requirements | None = None,
    ) -> None:
        self.node = node
        self.index = index
        self.hostname = node.hostname
        self.taints: tuple[Taint, ...] = node.taints
        self.requirements = requirements or Requirements.from_labels(
            {k: v for k, v in node.labels.items() if k != LABEL_HOSTNAME}
        )
        self.remaining = remaining
        self.host_ports = host_ports
        self.pods: list[Pod] = []
        self.shapes: list[PodShape] = []
        self.position = -1  # bit position of the hostname in `Topology.hosts`
        self.volumes = volumes  # attach limits, when the node has a CSINode

    @property
    def name(self) -> str:
        return self.node.name

    def can_add(
        self,
        shape: PodShape,
        env: RoundEnvironment,
        pod_volumes: PodVolumes | None = None,
    ) -> Plan | Rejection:
        algebra, topology = env.algebra, env.topology
        if self.taints:
            taint = first_untolerated(self.taints, shape.tolerations)
            if taint is not None:
                return Rejection(RejectionKind.TAINTS, taint)
        if self.volumes is not None:
            driver = self.volumes.exceeds(pod_volumes or {})
            if driver is not None:
                return Rejection(RejectionKind.VOLUME_LIMIT, driver)
        if shape.host_ports and host_ports_conflict(shape.host_ports, self.host_ports):
            return Rejection(RejectionKind.HOST_PORTS)
        if not fits(shape.requests, self.remaining):
            return Rejection(RejectionKind.RESOURCES)
        if shape.hostname_requirement is not None:
            mismatch = hostname_mismatch(shape.hostname_requirement, self.hostname)
            if mismatch is not None:
                return Rejection(RejectionKind.REQUIREMENTS, mismatch)
        merged = algebra.merge(self.requirements, shape.requirements, _NONE)
        if not isinstance(merged, Requirements):
            return Rejection(RejectionKind.REQUIREMENTS, merged)
        last: Rejection | None = None
        for alternative in shape.volume_alternatives or (None,):
            reqs = merged
            if alternative is not None:
                volume = alternative
                host = volume.find(LABEL_HOSTNAME)
                if host is not None:
                    if not host.has(self.hostname):
                        last = Rejection(RejectionKind.VOLUMES, f"volume requires {host.render()}")
                        continue
                    volume = volume.without(LABEL_HOSTNAME)
                with_volume = algebra.merge(reqs, volume, _NONE)
                if not isinstance(with_volume, Requirements):
                    last = Rejection(RejectionKind.VOLUMES, with_volume)
                    continue
                reqs = with_volume
            narrowed = topology.allowed_domains(shape, self.taints, reqs, self.hostname)
            if not isinstance(narrowed, tuple):
                last = Rejection(RejectionKind.TOPOLOGY, narrowed)
                continue
            if narrowed:
                topo = algebra.narrow(reqs, narrowed, _NONE)
                if not isinstance(topo, Requirements):
                    last = Rejection(RejectionKind.TOPOLOGY, topo)
                    continue
                reqs = topo
            return Plan(reqs)
        assert last is not None
        return last

    def add(
        self,
        pod: Pod,
        shape: PodShape,
        plan: Plan,
        topology: Topology,
        pod_volumes: PodVolumes | None = None,
    ) -> None:
        self.pods.append(pod)
        if pod_volumes and self.volumes is not None:
            self.volumes.add(pod_volumes)
        self.shapes.append(shape)
        remaining = self.remaining
        for name, value in shape.requests.items():
            remaining[name] = remaining.get(name, 0) - value
        self.requirements = plan.requirements
        topology.record(shape, self.taints, plan.requirements, self.hostname)
        if shape.host_ports:
            self.host_ports.extend(shape.host_ports)


def existing_nodes(cluster: ClusterSnapshot) -> list[ExistingNode]:
    """The usable existing capacity, initialized nodes first, then by name.

    What is left on a node is its allocatable minus the requests of the (non-terminal)
    pods bound to it, minus the DaemonSet pods expected there but not running yet.
    """
    index = cluster.index
    used = index.usage(cluster.bound_pods)
    requests_by_node, daemon_by_node, ports_by_node = used.requests, used.daemons, used.ports
    active = sorted(
        (n for n in cluster.capacity if not n.marked_for_deletion),
        key=lambda n: (not n.initialized, n.name),
    )
    limits = cluster.volumes.attach_limits
    volumes_by_node: dict[str, list[PodVolumes]] = {}
    if limits:
        for pod in cluster.bound_pods:
            if pod.volumes and not pod.is_terminal and pod.node_name in limits:
                volumes_by_node.setdefault(pod.node_name, []).append(
                    pod_volumes(pod, cluster.volumes)
                )
    out = []
    for i, node in enumerate(active):
        node_limits = limits.get(node.name)
        usage = (
            VolumeUsage(node_limits, volumes_by_node.get(node.name, ())) if node_limits else None
        )
        available = subtract(node.allocatable, requests_by_node.get(node.name, {}))
        overhead = (
            existing_node_daemon_overhead(
                node, cluster.daemonset_pods, daemon_by_node.get(node.name, {})
            )
            if cluster.daemonset_pods
            else {}
        )
        out.append(
            ExistingNode(
                node,
                i,
                subtract(available, overhead),
                list(ports_by_node.get(node.name, ())),
                usage,
                requirements=index.node_requirements(node),
            )
        )
    return out
