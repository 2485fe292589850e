"""Pods promised to capacity that is on its way.

When a round places a pod on a NodeClaim it creates (or on an in-flight NodeClaim or a
node that exists), the pod stays Pending until its node is Ready and kube-scheduler binds
it. Until then every new round would see it pending again and, if the NodeClaim has not
launched yet (its allocatable unknown), provision for it a second time. So the provisioner
remembers each *nomination* and the next rounds treat a nominated pod as already bound to
its target: left out of the pods to schedule, and counted on the target (its requests
take room there, it counts for topology spread and affinity).

A nomination ends in one of six ways (`Ended`), which `Nominations.prune` reports so the
provisioner can count them: the pod is bound, to its target's node (kube-scheduler followed
the plan) or to another node (it did not); the pod is gone; the target is gone or being
deleted; the target has been initialized (Ready) for longer than ``window`` seconds without
kube-scheduler binding the pod (something else keeps it off that node); or the initialized
target has no room left for it (kube-scheduler placed other pods there, which its scoring,
LeastAllocated by default, readily does). In the last three the pod is still pending and
must be scheduled afresh: the next round places it on room left on planned, in-flight and
existing capacity first, and only then on new NodeClaims. An unbound pod that is not
(or no longer) marked unschedulable keeps its nomination: kube-scheduler may be binding it.

Nominations live in memory only. After a restart pending pods are scheduled again against
the in-flight NodeClaims, whose capacity provisioning estimates from their instance types,
so they land on the NodeClaims made for them rather than on new ones.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["DEFAULT_WINDOW", "GONE", "Ended", "Nomination", "Nominations", "Pruned", "TargetState"]

DEFAULT_WINDOW: Final = 20.0  # seconds: Karpenter's nomination window is max(2*batch max, 10s)


class Ended(enum.StrEnum):
    """How a nomination ended (the ``outcome`` of ``karpy_nominations_ended_total``)."""

    BOUND_TO_TARGET = "bound_to_target"  # bound to the node of its target: the plan held
    BOUND_ELSEWHERE = "bound_elsewhere"  # bound to another node
    NO_ROOM = "no_room"  # the initialized target can no longer take it (room, anti-affinity)
    EXPIRED = "expired"  # the target was initialized for the window, the pod not bound
    TARGET_GONE = "target_gone"  # the target was deleted or is being deleted
    POD_GONE = "pod_gone"  # the pod was deleted (or is being deleted) before binding

    @property
    def still_pending(self) -> bool:
        """The pod is still waiting for a node and needs a new plan."""
        return self in (Ended.NO_ROOM, Ended.EXPIRED, Ended.TARGET_GONE)


@attrs.frozen(slots=True)
class Nomination:
    target: str  # NodeClaim name, or Node name when the pod went to a registered node
    at: float  # time of the nomination (the same clock as prune's ``now``)


@attrs.frozen(slots=True)
class TargetState:
    """What `Nominations.prune` asks of a nomination's target."""

    exists: bool  # it exists and is not being deleted
    initialized_at: float | None = None  # since when it has been initialized, if it is
    node: str = ""  # the Node it is (a Node target) or has registered as, once known


GONE: Final = TargetState(exists=False)


@attrs.frozen(slots=True)
class Pruned:
    """What `Nominations.prune` found: the nominations that hold and the ones that ended."""

    live: dict[str, str]  # pod key -> target
    ended: dict[str, Ended]  # pod key -> how its nomination ended, in this prune


class Nominations:
    def __init__(self, window: float = DEFAULT_WINDOW) -> None:
        self.window = window
        self._by_pod: dict[str, Nomination] = {}  # pod key (namespace/name) -> nomination
        # target -> its pods: registration asks for one NodeClaim's pods among 40,000
        self._by_target: dict[str, set[str]] = {}

    def __len__(self) -> int:
        return len(self._by_pod)

    def nominate(self, pods: Iterable[str], target: str, now: float) -> None:
        nomination = Nomination(target, now)
        for pod in pods:
            self._drop(pod)
            self._by_pod[pod] = nomination
            self._by_target.setdefault(target, set()).add(pod)

    def get(self, pod: str) -> Nomination | None:
        return self._by_pod.get(pod)

    def pods_for(self, target: str) -> list[str]:
        """The pods nominated to ``target`` (a NodeClaim or node name), by key."""
        return sorted(self._by_target.get(target, ()))

    def _drop(self, pod: str) -> None:
        old = self._by_pod.pop(pod, None)
        if old is not None:
            pods = self._by_target.get(old.target)
            if pods is not None:
                pods.discard(pod)
                if not pods:
                    del self._by_target[old.target]

    def prune(
        self,
        pod_node: Callable[[str], str | None],
        target_state: Callable[[str], TargetState],
        now: float,
        fits: Callable[[str, str], bool] | None = None,
        window_for: Callable[[str], float] | None = None,
    ) -> Pruned:
        """Drop the nominations that ended (see the module docstring) and say how each
        ended. ``pod_node(pod)`` is the name of the node the pod is bound to, "" while it
        is unbound, None once it is gone or being deleted. ``target_state(target)`` says
        whether the target still exists, since when it has been initialized and which node
        it is. ``fits(pod, target)``, asked only of initialized targets, says whether the
        pod still fits what is free there: when kube-scheduler filled the node with other
        pods, the nomination ends at once instead of after the window. ``window_for(pod)``,
        when given, is the pod's own window (a pod that carries karpy's nominatedNodeName
        waits longer: kube-scheduler tries that node first, but may take minutes to reach
        every pod of a large scale-up)."""
        live: dict[str, str] = {}
        ended: dict[str, Ended] = {}
        for pod, nomination in self._by_pod.items():
            window = self.window if window_for is None else window_for(pod)
            outcome = self._outcome(pod, nomination, pod_node, target_state, now=now, fits=fits,
                                    window=window)  # fmt: skip
            if outcome is None:
                live[pod] = nomination.target
            else:
                ended[pod] = outcome
        for pod in ended:
            self._drop(pod)
        return Pruned(live, ended)

    def _outcome(
        self,
        pod: str,
        nomination: Nomination,
        pod_node: Callable[[str], str | None],
        target_state: Callable[[str], TargetState],
        *,
        now: float,
        fits: Callable[[str, str], bool] | None,
        window: float,
    ) -> Ended | None:
        """How ``pod``'s nomination has ended, or None while it holds."""
        node = pod_node(pod)
        if node is None:
            return Ended.POD_GONE
        target = target_state(nomination.target)
        if node:
            if node == nomination.target or (target.node and node == target.node):
                return Ended.BOUND_TO_TARGET
            return Ended.BOUND_ELSEWHERE
        if not target.exists:
            return Ended.TARGET_GONE
        if target.initialized_at is None:
            return None
        if fits is not None and not fits(pod, nomination.target):
            return Ended.NO_ROOM
        if now - max(target.initialized_at, nomination.at) > window:
            return Ended.EXPIRED
        return None
