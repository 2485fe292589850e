"""Room held on a node by the pending pods nominated to it (KEP-5278, Kubernetes 1.35+).

A pending pod whose ``status.nominatedNodeName`` names node N is expected to go to N:
preemption put it there, or an autoscaler (karpy, Cluster Autoscaler) that launched N
for it. kube-scheduler keeps such pods in its nominator
(``pkg/scheduler/backend/queue/nominator.go``) — every queued pod with a nomination,
whether N exists yet or not — and when it filters N for another pod p,
``RunFilterPluginsWithNominatedPods`` (``pkg/scheduler/framework/runtime/framework.go``)
adds to a copy of N's NodeInfo the nominated pods of priority >= p's (p itself
excluded), runs the filters on that, and, if any were added and the filters passed,
runs them again without them: both must pass. So pods of lower or equal priority cannot
take the room a nomination holds; a higher-priority pod can. A pod leaves the nominator
when it is assumed on a node (``assume``: ``DeleteNominatedPodIfExists``), bound,
deleted, or its nomination is cleared; since 1.35 the scheduler itself never clears a
nomination (only the API server does, at binding).

What the stand-in models of that addition: the requests (every resource), the pod count
and the host ports of the nominated pods — what NodeResourcesFit and NodePorts read from
the NodeInfo. Adding pods can only make those filters fail, so the second run without
them is implied. Not modelled: the ``PreFilterExtensions.AddPod`` part, through which
nominated pods also count for PodTopologySpread (their domain counts) and
InterPodAffinity (their labels for the incoming pod's terms, their anti-affinity
against it); a nominated pod counts for spread and affinity only once it is placed.
Scores never see nominated pods, upstream or here.

`Reservations` is built once per pass from the pending pods and kept current as the
pass places pods (`release`), so a filter call costs a dict lookup when nothing is
nominated to the node, and otherwise a sum over the priority levels held there (almost
always one): never a scan of the pods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.sandbox.cluster.kubepod import PodInfo

Port = tuple[str, str, int]


class Held:
    """What some nominated pods hold on one node: requests, pod count, host ports."""

    __slots__ = ("pods", "ports", "requests", "uids")

    def __init__(self) -> None:
        self.requests: dict[str, int] = {}
        self.pods = 0
        self.ports: set[Port] = set()
        self.uids: set[str] = set()

    def add(self, pod: PodInfo, sign: int = 1) -> None:
        requests = self.requests
        for resource, value in pod.request_items:
            requests[resource] = requests.get(resource, 0) + sign * value
        self.pods += sign

    def merged(self, other: Held) -> Held:
        out = Held()
        for source in (self, other):
            for resource, value in source.requests.items():
                out.requests[resource] = out.requests.get(resource, 0) + value
            out.pods += source.pods
            out.ports |= source.ports
        return out


class Reservations:
    """The nominator of one pass: per node and priority, what its nominated pods hold."""

    def __init__(self, pending: Iterable[PodInfo] = ()) -> None:
        self._levels: dict[str, dict[int, Held]] = {}
        self._pods: dict[str, PodInfo] = {}  # uid -> the nominated pod still pending
        for pod in pending:
            if pod.nominated:
                self._hold(pod)

    def __bool__(self) -> bool:
        return bool(self._pods)

    def _hold(self, pod: PodInfo) -> None:
        if pod.uid in self._pods:
            return
        self._pods[pod.uid] = pod
        levels = self._levels.setdefault(pod.nominated, {})
        held = levels.get(pod.priority)
        if held is None:
            held = levels[pod.priority] = Held()
        held.add(pod)
        held.uids.add(pod.uid)
        held.ports.update(pod.host_ports)

    def release(self, pod: PodInfo) -> None:
        """``pod`` was placed in this pass: its room is real usage now, not a reservation."""
        held_pod = self._pods.pop(pod.uid, None)
        if held_pod is None:
            return
        levels = self._levels[held_pod.nominated]
        held = levels[held_pod.priority]
        held.add(held_pod, -1)
        held.uids.discard(held_pod.uid)
        if held_pod.host_ports:
            held.ports = _ports(held.uids, self._pods)
        if not held.uids:
            del levels[held_pod.priority]
            if not levels:
                del self._levels[held_pod.nominated]

    def on(self, node: str, pod: PodInfo) -> Held | None:
        """What the pods nominated to ``node`` hold against ``pod``: those of priority >=
        ``pod``'s, ``pod`` excluded (``addGENominatedPods``). None when nothing."""
        levels = self._levels.get(node)
        if not levels:
            return None
        out: Held | None = None
        for priority, level in levels.items():
            if priority < pod.priority:
                continue
            held = level
            if pod.uid in level.uids:
                if len(level.uids) == 1:
                    continue
                held = level.merged(Held())
                held.add(self._pods[pod.uid], -1)
                if held.ports:
                    held.ports = _ports(level.uids - {pod.uid}, self._pods)
            out = held if out is None else out.merged(held)
        return out


def _ports(uids: Iterable[str], pods: dict[str, PodInfo]) -> set[Port]:
    return {port for uid in uids for port in pods[uid].host_ports}
