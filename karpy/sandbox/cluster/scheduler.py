"""The kube-scheduler stand-in: batches of pending pods, bound where kube-scheduler would.

Upstream schedules one pod at a time from a priority queue; this stand-in works in
passes, which is what lets it keep up with 40,000 pods in one Python process:

1. Something relevant happens (a pod to schedule appears, a node joins or changes, a
   bound pod goes away) and the store hook sets the wake-up event (`SchedulingState`).
2. After ``debounce`` seconds (more events join the same pass), the pass takes an
   immutable snapshot and plans on a worker thread (`placement.Planner`, which runs
   kube-scheduler's filter, score and select cycle for each pod, `scheduleone`), so the
   event loop keeps serving the API meanwhile.
3. Back on the loop, it binds each placed pod through the binding subresource (uid
   precondition; a pod that changed or went away meanwhile is skipped, as a real
   scheduler's bind would fail), and gives each pod that fits nowhere
   ``PodScheduled=False``, reason ``Unschedulable``, with a kube-scheduler-style message —
   only if the pod does not carry that condition already, so a pod that stays
   unschedulable costs one write, not one per pass. Writes go in slices of 20 ms that
   yield to the event loop in between.

``status.nominatedNodeName`` is honoured as kube-scheduler 1.35+ does it (KEP-5278,
NominatedNodeNameForExpectation on by default), which is what karpy's nominations of the
pods it planned onto a new node rely on: a pod nominated to a schedulable node is tried
there first and bound there unscored if it fits (`scheduleone`); pods nominated to a node
hold room on it against pods of lower or equal priority, counted for resources, pod count
and host ports but not for spread or inter-pod affinity (`nominated`); a nomination to a
node that does not exist yet is kept, with its room, until the node appears; the stand-in
never writes ``nominatedNodeName`` (1.35+ no longer clears it after a failed cycle; the API
server clears it at binding); a nomination that ends frees its node for the next pass
(`schedulingstate`).

Not modelled: preemption (so the stand-in never nominates), setting
``nominatedNodeName`` at the start of a binding cycle (upstream does only when PreBind or
Permit has work, e.g. volumes to bind), scheduling gates beyond "wait until none are
left", other schedulers' pods (``schedulerName`` other than ``default-scheduler`` are left
alone), extenders and the cluster-level default spread constraints. Priorities order the
queue and decide which nominations hold room against a pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.placement import Failure, PassResult, Planner, Surroundings
from karpy.sandbox.cluster.schedulingstate import SchedulingState

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.scheduleone import Scoring

log = logging.getLogger("karpy.sandbox.cluster")

SLICE_SECONDS = 0.02  # longest stretch of writes before yielding to the event loop
# Resources besides pods and nodes that a pass reads: (group, version, plural).
_SURROUNDINGS = {
    "daemonsets": ("apps", "v1", "daemonsets"),
    "namespaces": ("", "v1", "namespaces"),
    "claims": ("", "v1", "persistentvolumeclaims"),
    "volumes": ("", "v1", "persistentvolumes"),
    "classes": ("storage.k8s.io", "v1", "storageclasses"),
    "csinodes": ("storage.k8s.io", "v1", "csinodes"),
}


class KubeScheduler:
    def __init__(
        self,
        access: ClusterAccess,
        *,
        debounce: float = 0.1,
        scoring: Scoring = "LeastAllocated",
        seed: int = 0,
    ) -> None:
        """``scoring`` is NodeResourcesFit's strategy; ``seed`` drives the random choice
        among nodes that score the same (upstream's ``selectHost``)."""
        self.access = access
        self.debounce = debounce
        self.state = SchedulingState()
        self.planner = Planner(scoring=scoring, seed=seed)
        self.passes = 0
        self.last: PassResult | None = None
        self.longest_pass = 0.0  # seconds, planning and writing (for benchmarks)
        self.recent_passes: deque[float] = deque(maxlen=1000)  # their durations, newest last
        self._task: asyncio.Task[None] | None = None

    def on_change(self, kind: Kind, change: Change) -> None:
        self.state.on_change(kind, change)

    def resync(self) -> None:
        """Try every pending pod against every node on the next pass (the safety net of a
        level-triggered controller: a missed event costs at most a resync period)."""
        self.state.everything_fresh = True
        self.state.wake.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="sandbox-kube-scheduler"
            )

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await self.state.wake.wait()
            await asyncio.sleep(self.debounce)
            self.state.wake.clear()
            try:
                await self.run_pass()
            except Exception:
                log.exception("kube-scheduler: pass failed; retrying")
                self.state.everything_fresh = True
                await asyncio.sleep(1.0)
                self.state.wake.set()

    async def run_pass(self) -> PassResult:
        started = time.perf_counter()
        inputs, marks = self.state.snapshot()
        around = Surroundings(
            **{
                field: tuple(self.access.entries(self.access.view(*resource)))
                for field, resource in _SURROUNDINGS.items()
            }
        )
        result = await asyncio.to_thread(self.planner.plan, inputs, around)
        await self._bind(result)
        await self._mark(result.failures)
        self.state.settle(marks, keep_dirty=result.saturated, retry=result.retry)
        self.passes += 1
        self.last = result
        took = time.perf_counter() - started
        self.longest_pass = max(self.longest_pass, took)
        self.recent_passes.append(took)
        log.debug(
            "kube-scheduler: pass %d: %d fresh, %d retried, %d bound, %d unschedulable, %.3fs",
            self.passes,
            result.full,
            result.incremental,
            len(result.placements),
            len(result.failures),
            result.seconds,
        )
        return result

    async def _bind(self, result: PassResult) -> None:
        access = self.access
        slice_ends = time.perf_counter() + SLICE_SECONDS
        for placed in result.placements:
            entry = access.entry(access.pods, placed.namespace, placed.name)
            if (
                entry is not None
                and facts.uid(entry.obj) == placed.uid
                and facts.awaits_scheduling(entry.obj)
            ):
                try:
                    access.bind(placed.namespace, placed.name, placed.uid, placed.node)
                except APIError as err:
                    log.debug("kube-scheduler: bind %s: %s", placed.name, err)
            if time.perf_counter() > slice_ends:
                await asyncio.sleep(0)
                slice_ends = time.perf_counter() + SLICE_SECONDS

    async def _mark(self, failures: tuple[Failure, ...]) -> None:
        access = self.access
        now = access.now()
        slice_ends = time.perf_counter() + SLICE_SECONDS
        for failure in failures:
            entry = access.entry(access.pods, failure.namespace, failure.name)
            if (
                entry is not None
                and facts.uid(entry.obj) == failure.uid
                and facts.awaits_scheduling(entry.obj)
                and not facts.marked_unschedulable(entry.obj)
            ):
                status: dict[str, Any] = dict(facts.status(entry.obj))
                status["conditions"] = [
                    c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"
                ] + [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "lastProbeTime": None,
                        "lastTransitionTime": now,
                        "reason": "Unschedulable",
                        "message": failure.message,
                    }
                ]
                try:
                    access.write_status(access.pods, entry, status)
                except APIError as err:
                    log.debug("kube-scheduler: mark %s: %s", failure.name, err)
            if time.perf_counter() > slice_ends:
                await asyncio.sleep(0)
                slice_ends = time.perf_counter() + SLICE_SECONDS
