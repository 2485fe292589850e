"""Pods promised to capacity that is on its way.

When a round places a pod on a NodeClaim it creates (or on an in-flight NodeClaim or a
node that exists), the pod stays Pending until its node is Ready and kube-scheduler binds
it. Until then every new round would see it pending again and, if the NodeClaim has not
launched yet (its allocatable unknown), provision for it a second time. So the provisioner
remembers each *nomination* and the next rounds treat a nominated pod as already bound to
its target: left out of the pods to schedule, and counted on the target (its requests
take room there, it counts for topology spread and affinity).

A nomination ends when the pod is bound or gone, when its target is gone or being deleted,
once the target has been initialized (Ready) for longer than ``window`` seconds without
kube-scheduler binding the pod (something else keeps it off that node), or as soon as the
initialized target has no room left for it (kube-scheduler placed other pods there): then
it must be scheduled afresh. Nominations live in memory only. After a restart pending pods are
scheduled again against the in-flight NodeClaims, whose capacity provisioning estimates
from their instance types, so they land on the NodeClaims made for them rather than on new
ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["DEFAULT_WINDOW", "Nomination", "Nominations"]

DEFAULT_WINDOW: Final = 20.0  # seconds: Karpenter's nomination window is max(2*batch max, 10s)


@attrs.frozen(slots=True)
class Nomination:
    target: str  # NodeClaim name, or Node name when the pod went to a registered node
    at: float  # monotonic time of the nomination


class Nominations:
    def __init__(self, window: float = DEFAULT_WINDOW) -> None:
        self.window = window
        self._by_pod: dict[str, Nomination] = {}  # pod key (namespace/name) -> nomination

    def __len__(self) -> int:
        return len(self._by_pod)

    def nominate(self, pods: Iterable[str], target: str, now: float) -> None:
        nomination = Nomination(target, now)
        for pod in pods:
            self._by_pod[pod] = nomination

    def get(self, pod: str) -> Nomination | None:
        return self._by_pod.get(pod)

    def prune(
        self,
        still_pending: Callable[[str], bool],
        target_state: Callable[[str], tuple[bool, float | None]],
        now: float,
        fits: Callable[[str, str], bool] | None = None,
    ) -> dict[str, str]:
        """Drop the nominations that ended (see the module docstring); the rest, pod key
        -> target. ``target_state(target)`` says whether the target still exists and is
        not being deleted, and since when it has been initialized, if it is.
        ``fits(pod, target)``, asked only of initialized targets, says whether the pod
        still fits what is free there: when kube-scheduler filled the node with other
        pods, the nomination ends at once instead of after the window."""
        live: dict[str, str] = {}
        dropped = []
        for pod, nomination in self._by_pod.items():
            if not still_pending(pod):
                dropped.append(pod)
                continue
            exists, initialized_at = target_state(nomination.target)
            if not exists:
                dropped.append(pod)
                continue
            if initialized_at is not None and (
                now - max(initialized_at, nomination.at) > self.window
                or (fits is not None and not fits(pod, nomination.target))
            ):
                dropped.append(pod)
                continue
            live[pod] = nomination.target
        for pod in dropped:
            del self._by_pod[pod]
        return live
