"""Taking pods off a draining node through the API: evictions, and deletions at the
deadline, paced per pod.

An **eviction** (``POST pods/<name>/eviction``) is how a drain asks politely: the API
server checks the pod's PodDisruptionBudget and refuses (429) when evicting it would
leave too few healthy replicas. Every eviction carries the pod's UID as a precondition,
so a pod recreated under the same name (a StatefulSet's) is never evicted by mistake. The
answers, as Karpenter reads them:

* 201: the pod is terminating (event ``Evicted``, ``karpenter_pods_drained_total``);
* 404 (gone) or 409 (another pod now has the name): nothing left to do;
* 429 (a PDB refused) or the 500 "more than one PodDisruptionBudget" (the eviction API
  cannot decide between budgets): refused, to be asked again later;
* anything else: failed, to be asked again later (and logged).

A **deletion** is what the deadline does (`karpy.lifecycle.termination.pods`): a plain
DELETE with the same UID precondition and the grace the deadline leaves (event
``Disrupted``), which no budget can refuse.

**Pacing.** A drain is reconciled every second while it waits, and a budget that allows
no disruptions may hold a hundred pods for an hour; asking for all of them every second
would be a hundred useless requests a second. So every pod has its own exponential
backoff, as Karpenter's eviction queue has: after a refusal or a failure the pod is not
asked about again for 100 ms, then 200 ms, 400 ms ... up to 10 s; after an accepted
eviction or deletion it is left alone for 10 s (the informers need a moment to show it
terminating, and a second eviction would be a wasted request). Evictions and deletions
are paced apart: a pod that a budget kept refusing is deleted the moment the deadline
says so, not when its eviction backoff runs out. The backoff lives in
memory only: it paces requests, it decides nothing, so a restarted controller simply
starts again at 100 ms. Requests of one call run concurrently, at most ``concurrency``
at a time. ``karpenter_pods_eviction_requests_total{code}`` counts every answer.
"""

from __future__ import annotations

import asyncio
import enum
from functools import partial
from typing import TYPE_CHECKING, Final

import attrs

from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.client import Preconditions
from karpy.kube.errors import APIError, Conflict, KubeError, NotFound, TooManyRequests
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import PODS
from karpy.lifecycle.termination.pods import force_delete_grace
from karpy.log import describe_error, get_logger, obj_ref

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence
    from datetime import datetime

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.records import PodInfo

__all__ = ["Attempt", "Evictor", "Outcome", "pod_ref"]

log = get_logger("node.termination")

BASE_DELAY: Final = 0.1  # seconds
MAX_DELAY: Final = 10.0
DEFAULT_CONCURRENCY: Final = 20
MULTIPLE_BUDGETS: Final = "more than one PodDisruptionBudget"
_FORGET_AFTER: Final = 300.0  # seconds without a request: drop the pod's backoff entry
_PRUNE_ABOVE: Final = 1024


class Outcome(enum.Enum):
    EVICTED = "evicted"  # the eviction was accepted: the pod is terminating
    DELETED = "deleted"  # the deadline deletion was accepted
    GONE = "gone"  # 404 or 409: no such pod (any longer)
    REFUSED = "refused"  # a PodDisruptionBudget refused, or several cover the pod
    FAILED = "failed"  # another error
    PACED = "paced"  # not asked: the pod's backoff has not run out


@attrs.frozen(slots=True)
class Attempt:
    """What became of one pod; ``detail`` says why a pod was refused or failed (for a
    paced pod: why it was last time)."""

    pod: PodInfo
    outcome: Outcome
    detail: str = ""


@attrs.define(slots=True)
class _Pace:
    failures: int
    not_before: float  # monotonic seconds
    detail: str


def pod_ref(pod: PodInfo) -> ObjectRef:
    return ObjectRef("Pod", pod.pod.name, pod.pod.namespace, pod.pod.uid, "v1")


class Evictor:
    """Evicts and deletes pods (see the module docstring). One per controller: the
    backoff it keeps is per pod UID, across nodes and reconciles."""

    def __init__(
        self,
        client: KubeClient,
        recorder: EventRecorder,
        *,
        metrics: KarpenterMetrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
        concurrency: int = DEFAULT_CONCURRENCY,
        base_delay: float = BASE_DELAY,
        max_delay: float = MAX_DELAY,
    ) -> None:
        self.client = client
        self.recorder = recorder
        self.metrics = metrics
        self.clock = clock
        self.concurrency = max(1, concurrency)
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._pace: dict[tuple[str, str], _Pace] = {}  # (evict|delete, pod uid) -> pace
        self.requests = 0  # eviction and deletion requests sent (for tests and debugging)

    # --- the two ways off the node -----------------------------------------------------

    async def evict(self, pods: Sequence[PodInfo], *, reason: str) -> list[Attempt]:
        """Evict each of ``pods`` whose backoff has run out; ``reason`` is the node's
        disruption reason, for the event and ``karpenter_pods_drained_total``."""
        return await self._each("evict", pods, lambda pod: self._evict_one(pod, reason))

    async def delete(
        self, pods: Sequence[PodInfo], *, deadline: datetime, reason: str
    ) -> list[Attempt]:
        """Delete each of ``pods`` (whose backoff has run out) with the grace left until
        ``deadline``, at least one second, whatever their budgets say."""
        return await self._each("delete", pods, partial(self._delete_one, deadline=deadline,
                                                        reason=reason))  # fmt: skip

    # --- one pod -----------------------------------------------------------------------

    async def _evict_one(self, pod: PodInfo, reason: str) -> Attempt:
        p = pod.pod
        try:
            await self.client.evict(p.name, p.namespace,
                                    delete_options={"preconditions": {"uid": p.uid}})  # fmt: skip
        except (NotFound, Conflict) as exc:
            self._count(exc.status)
            return Attempt(pod, Outcome.GONE)
        except TooManyRequests as exc:
            self._count(exc.status)
            return Attempt(pod, Outcome.REFUSED, _refusal(exc))
        except APIError as exc:
            self._count(exc.status)
            if MULTIPLE_BUDGETS in exc.message:
                return Attempt(pod, Outcome.REFUSED, "eviction does not support multiple PDBs")
            return self._failed(pod, "evicting", exc)
        except KubeError as exc:
            return self._failed(pod, "evicting", exc)
        self._count(200)
        self.recorder.publish(Event(pod_ref(pod), "Normal", "Evicted", f"Evicted pod: {reason}"))
        if self.metrics is not None:
            self.metrics.pods_drained.labels(reason).inc()
        log.debug("evicted pod", **obj_ref("Pod", p.name, p.namespace))
        return Attempt(pod, Outcome.EVICTED)

    async def _delete_one(self, pod: PodInfo, *, deadline: datetime, reason: str) -> Attempt:
        p = pod.pod
        grace = force_delete_grace(deadline, self.clock.now())
        self.recorder.publish(Event(
            pod_ref(pod), "Normal", "Disrupted",
            f"Deleting the pod to accommodate the terminationTime {deadline.isoformat()} of "
            f"the node. The pod was granted {grace} seconds of grace-period of its "
            f"{pod.termination_grace_seconds} terminationGracePeriodSeconds. This bypasses "
            "the PDB of the pod and the do-not-disrupt annotation.",
        ))  # fmt: skip
        try:
            await self.client.delete(PODS, p.name, p.namespace,
                                     preconditions=Preconditions(uid=p.uid),
                                     grace_period_seconds=grace)  # fmt: skip
        except (NotFound, Conflict):
            return Attempt(pod, Outcome.GONE)
        except KubeError as exc:
            return self._failed(pod, "deleting", exc)
        if self.metrics is not None and pod.deletion_timestamp is None:
            self.metrics.pods_drained.labels(reason).inc()
        log.debug("deleting pod", **obj_ref("Pod", p.name, p.namespace),
                  terminationGracePeriodSeconds=pod.termination_grace_seconds,
                  gracePeriodSeconds=grace, terminationTime=deadline)  # fmt: skip
        return Attempt(pod, Outcome.DELETED)

    # --- pacing --------------------------------------------------------------------------

    async def _each(
        self,
        action: str,
        pods: Sequence[PodInfo],
        act: Callable[[PodInfo], Awaitable[Attempt]],
    ) -> list[Attempt]:
        now = self.clock.monotonic()
        self._prune(now)
        due: list[PodInfo] = []
        attempts: list[Attempt] = []
        for pod in pods:
            pace = self._pace.get((action, pod.pod.uid))
            if pace is not None and pace.not_before > now:
                attempts.append(Attempt(pod, Outcome.PACED, pace.detail))
            else:
                due.append(pod)
        if not due:
            return attempts
        gate = asyncio.Semaphore(self.concurrency)

        async def bounded(pod: PodInfo) -> Attempt:
            async with gate:
                self.requests += 1
                attempt = await act(pod)
                self._settle(action, attempt)
                return attempt

        return attempts + list(await asyncio.gather(*(bounded(pod) for pod in due)))

    def _settle(self, action: str, attempt: Attempt) -> None:
        key = (action, attempt.pod.pod.uid)
        now = self.clock.monotonic()
        if attempt.outcome is Outcome.GONE:
            self._pace.pop(key, None)
        elif attempt.outcome in (Outcome.EVICTED, Outcome.DELETED):
            self._pace[key] = _Pace(0, now + self.max_delay, attempt.detail)
        else:
            pace = self._pace.get(key)
            failures = pace.failures + 1 if pace is not None else 1
            delay = min(self.base_delay * 2 ** (failures - 1), self.max_delay)
            self._pace[key] = _Pace(failures, now + delay, attempt.detail)

    def _failed(self, pod: PodInfo, doing: str, exc: KubeError) -> Attempt:
        p = pod.pod
        log.warning(f"failed {doing} pod", **obj_ref("Pod", p.name, p.namespace),
                    error=describe_error(exc))  # fmt: skip
        return Attempt(pod, Outcome.FAILED, f"{doing} pod: {describe_error(exc)}")

    def _prune(self, now: float) -> None:
        if len(self._pace) > _PRUNE_ABOVE:
            self._pace = {key: pace for key, pace in self._pace.items()
                          if pace.not_before > now - _FORGET_AFTER}  # fmt: skip

    def _count(self, code: int) -> None:
        if self.metrics is not None:
            self.metrics.eviction_requests.labels(str(code)).inc()


def _refusal(exc: TooManyRequests) -> str:
    if any(c.reason == "DisruptionBudget" for c in exc.causes) or (
        "disruption budget" in exc.message
    ):
        return "evicting pod violates a PDB"
    return f"eviction throttled: {exc.message}"
