"""The drain: which pods leave a terminating node now, in what order, and whether the
node is empty yet.

`plan_drain` is the decision, a pure function of the node's pods, its deadline and the
time (the rules per pod are in `karpy.lifecycle.termination.pods`):

1. pods past their deadline threshold are deleted, in every group at once: at the hard
   deadline a budget on a web pod must not hold up a critical pod that would otherwise
   outlive the instance;
2. the other pods the drain waits for are split into the four `DrainGroup`s; only the
   first group that still has pods is worked on: its active, unprotected pods are
   evicted, its do-not-disrupt pods and terminating pods are waited for;
3. the node is drained when no pod is left to wait for.

`drain` carries a plan out through the `Evictor` and returns a `DrainStatus`: drained or
not, and, if not, why in words a person can act on (the node's ``FailedDraining`` event
says it). Nothing is remembered between drains: each reconcile plans again from the pods
as cluster state shows them, so a restarted controller continues where the API stands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.kube.events import Event
from karpy.lifecycle.termination.eviction import Outcome, pod_ref
from karpy.lifecycle.termination.pods import (
    DrainGroup,
    do_not_disrupt,
    drain_group,
    is_waiting_eviction,
    needs_force_delete,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from datetime import datetime

    from karpy.kube.events import EventRecorder
    from karpy.lifecycle.termination.eviction import Attempt, Evictor
    from karpy.state.records import PodInfo

__all__ = ["DrainPlan", "DrainStatus", "drain", "plan_drain"]

_NAMES_SHOWN: Final = 5


@attrs.frozen(slots=True)
class DrainPlan:
    """What to do about a node's pods now (see the module docstring)."""

    delete: tuple[PodInfo, ...] = ()  # past the deadline threshold, any group
    evict: tuple[PodInfo, ...] = ()  # active, unprotected pods of ``group``
    protected: tuple[PodInfo, ...] = ()  # do-not-disrupt pods of ``group``
    terminating: tuple[PodInfo, ...] = ()  # terminating pods of ``group``
    group: DrainGroup | None = None  # the group being drained (None: none left)
    waiting: int = 0  # every pod the drain still waits for, in all groups
    events: tuple[Event, ...] = ()  # about do-not-disrupt annotations, for the pods

    @property
    def drained(self) -> bool:
        return self.waiting == 0


def plan_drain(pods: Iterable[PodInfo], deadline: datetime | None, now: datetime) -> DrainPlan:
    """The drain's next step for a node with ``pods`` and ``deadline`` at ``now``."""
    delete: list[PodInfo] = []
    groups: dict[DrainGroup, list[PodInfo]] = {}
    waiting = 0
    for pod in pods:
        if not is_waiting_eviction(pod, now):
            continue
        waiting += 1
        if needs_force_delete(pod, deadline, now):
            delete.append(pod)
        else:
            groups.setdefault(drain_group(pod), []).append(pod)
    if not groups:
        return DrainPlan(delete=tuple(delete), waiting=waiting)
    group = min(groups)
    evict: list[PodInfo] = []
    protected: list[PodInfo] = []
    terminating: list[PodInfo] = []
    events: list[Event] = []
    for pod in sorted(groups[group], key=lambda p: p.key):
        if pod.deletion_timestamp is not None or pod.pod.terminating:
            terminating.append(pod)
            continue
        guard = do_not_disrupt(pod, now)
        if guard.invalid:
            events.append(Event(
                pod_ref(pod), "Warning", "InvalidDoNotDisruptAnnotation",
                f"Invalid karpenter.sh/do-not-disrupt annotation: {guard.invalid}, "
                "ignoring annotation",
                dedupe_values=(pod.pod.uid, guard.invalid),
            ))  # fmt: skip
        if guard.active:
            protected.append(pod)
            if guard.until is not None:
                until = guard.until.strftime("%Y-%m-%dT%H:%M:%SZ")
                events.append(Event(
                    pod_ref(pod), "Normal", "DoNotDisruptUntil",
                    f"The karpenter.sh/do-not-disrupt grace period will elapse at {until}",
                    dedupe_values=(pod.pod.uid, until),
                ))  # fmt: skip
            continue
        if guard.until is not None:
            events.append(Event(
                pod_ref(pod), "Normal", "DoNotDisruptGracePeriodElapsed",
                "The karpenter.sh/do-not-disrupt grace period has elapsed, pod is now "
                "disruptable",
                dedupe_values=(pod.pod.uid,),
            ))  # fmt: skip
        evict.append(pod)
    return DrainPlan(
        delete=tuple(delete), evict=tuple(evict), protected=tuple(protected),
        terminating=tuple(terminating), group=group, waiting=waiting, events=tuple(events),
    )  # fmt: skip


@attrs.frozen(slots=True)
class DrainStatus:
    """How a drain pass went: ``waiting`` pods remain (0: drained), and what happened to
    the ones acted on."""

    waiting: int
    group: DrainGroup | None = None
    attempts: tuple[Attempt, ...] = ()
    protected: tuple[PodInfo, ...] = ()
    terminating: tuple[PodInfo, ...] = ()

    @property
    def drained(self) -> bool:
        return self.waiting == 0

    def count(self, outcome: Outcome) -> int:
        return sum(1 for a in self.attempts if a.outcome is outcome)

    def message(self) -> str:
        """Why the node is not drained yet, e.g. ``3 pods are waiting to be evicted: 2
        refused (evicting pod violates a PDB: default/a, default/b), 1 protected by
        karpenter.sh/do-not-disrupt (default/c)``."""
        if self.drained:
            return "drained"
        plural = "pod is" if self.waiting == 1 else "pods are"
        parts: list[str] = []
        by_detail: dict[str, list[str]] = {}
        for attempt in self.attempts:
            if attempt.outcome in (Outcome.REFUSED, Outcome.FAILED) or (
                attempt.outcome is Outcome.PACED and attempt.detail
            ):
                by_detail.setdefault(attempt.detail or "retrying", []).append(attempt.pod.key)
        for detail, keys in sorted(by_detail.items()):
            parts.append(f"{len(keys)} {_blocked_word(detail)} ({detail}: {_names(keys)})")
        if self.protected:
            keys = [p.key for p in self.protected]
            parts.append(f"{len(keys)} protected by karpenter.sh/do-not-disrupt ({_names(keys)})")
        moving = self.count(Outcome.EVICTED) + self.count(Outcome.DELETED)
        if self.terminating or moving:
            parts.append(f"{len(self.terminating) + moving} terminating")
        text = f"{self.waiting} {plural} waiting to be evicted"
        return f"{text}: {', '.join(parts)}" if parts else text


def _blocked_word(detail: str) -> str:
    return "failed" if detail.startswith(("evicting pod:", "deleting pod:")) else "refused"


def _names(keys: Sequence[str]) -> str:
    shown = ", ".join(sorted(keys)[:_NAMES_SHOWN])
    more = len(keys) - _NAMES_SHOWN
    return f"{shown} and {more} other(s)" if more > 0 else shown


async def drain(
    pods: Iterable[PodInfo],
    *,
    deadline: datetime | None,
    now: datetime,
    reason: str,
    evictor: Evictor,
    recorder: EventRecorder,
) -> DrainStatus:
    """Plan the drain of a node with ``pods`` and carry it out (see the module
    docstring); ``reason`` is the node's disruption reason (events and metrics)."""
    plan = plan_drain(pods, deadline, now)
    for event in plan.events:
        recorder.publish(event)
    attempts: list[Attempt] = []
    if plan.delete:
        assert deadline is not None  # only a deadline makes a pod due for deletion
        attempts += await evictor.delete(plan.delete, deadline=deadline, reason=reason)
    if plan.evict:
        attempts += await evictor.evict(plan.evict, reason=reason)
    return DrainStatus(
        waiting=plan.waiting, group=plan.group, attempts=tuple(attempts),
        protected=plan.protected, terminating=plan.terminating,
    )  # fmt: skip
