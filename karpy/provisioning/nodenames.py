"""Telling kube-scheduler where each pod was planned: ``status.nominatedNodeName``.

kube-scheduler places a pending pod by its own scoring (LeastAllocated by default: the
emptiest node that fits), and so mostly on a node karpy planned for other pods. Pods of
different sizes then fragment the room, and a quarter of a 40,000-pod scale-up's
NodeClaims were bought again for pods placed elsewhere ([scale.md]). Since Kubernetes 1.35
(KEP-5278, ``NominatedNodeNameForExpectation``, beta and on by default) a component other
than the scheduler may set a pending pod's ``nominatedNodeName`` to say where it expects
the pod to go. kube-scheduler then:

* tries that node first, and binds the pod there without scoring when it fits;
* keeps the room of nominated pods on their node against pods of equal or lower priority;
* never clears the field itself (kube-apiserver clears it when the pod is bound).

What karpy does with it (`NominatedNodeNames`):

* **Set** it, on each pod nominated to a NodeClaim, once the NodeClaim's Node exists and
  before registration lifts its ``karpenter.sh/unregistered`` taint (so the pods are named
  before the node can take any pod); on pods nominated to a node that exists, at once.
  Only where the field is empty (a component never overwrites another's nomination), with
  the pod's resourceVersion: a pod that changed meanwhile answers 409 and is left.
* **Clear** what it set when its nomination ends with the pod still unbound (no room left,
  expired, target gone): the pod is planned again, and a hint karpy no longer stands by
  must not keep room for it. The clear carries the resourceVersion too, so a value another
  component wrote meanwhile is never removed.
* **Take back** what karpy does not remember: an unschedulable pod whose field names a
  node of a karpy NodeClaim but which karpy holds no nomination for (set before a restart,
  or a write that landed after its nomination ended) is nominated to that NodeClaim again
  (`adopt`, each round), so its hint ends the same way. Such pods keep a round due.

The writes have a token bucket of their own (``KUBE_CLIENT_QPS``, as Events have): a
40,000-pod scale-up's hints must not hold up a launch. Pods carrying the field are, as in
Karpenter, not provisionable (``Pod.is_provisionable``): until karpy clears a hint it set,
the pod is left to kube-scheduler.

kube-scheduler before 1.35 (or with the gate off) reads the field as a preemption in
progress: it still tries the node first, but clears the field after a failed attempt;
karpy sets it once per nomination and does not fight that.

All of this is off unless ``NOMINATED_NODE_NAMES=true``: it buys fewer nodes (a 40,000-pod
scale-up in the sandbox: 9,078 NodeClaims against 11,055, a tenth bought again against
44%), but it costs about one write per pod, and there the scale-up took longer (every pod
Running 435 s after the last was created, against 317 s). docs/scale.md has the figures.

[scale.md]: ../../docs/scale.md
"""

from __future__ import annotations

import asyncio
import itertools
from typing import TYPE_CHECKING, Final

from karpy.errors import ExpectedError, KarpyError
from karpy.kube.client import priority as priority_scope
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.resources import PODS
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping

    from karpy.kube.client import KubeClient
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.provisioning.nominations import Ended, Nominations
    from karpy.state.records import PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["CONCURRENCY", "NominatedNodeNames", "node_of_target"]

log = get_logger("provisioner")

CONCURRENCY: Final = 32  # hint writes in flight at once
# Rate-limiter priorities within the hints' own budget: the names registration waits for
# first, then clears (a pod waits for its clear to be planned again), then the rest.
AWAITED_SET: Final = 2
CLEAR: Final = 1
QUEUED_SET: Final = 0
# How long a pod carrying karpy's name may wait on its initialized node before karpy gives
# the plan up (others wait the nomination window): kube-scheduler tries the named node
# first, but a scale-up of tens of thousands of pods takes it minutes to reach them all,
# and giving up costs a clear, a new plan and a new name.
NAMED_WINDOW: Final = 120.0


class NominatedNodeNames:
    """Sets and clears pods' ``status.nominatedNodeName`` (see the module docstring).

    A `karpy.base.component.Component`: the writes not waited for (`set_later`,
    `sweep`, `ended`) run on its own tasks while it runs."""

    name = "nominated-node-names"

    def __init__(self, client: KubeClient, *, metrics: KarpenterMetrics | None = None) -> None:
        self.client = client
        self.metrics = metrics
        self._set: dict[str, str] = {}  # pod key -> the node karpy set (or took back)
        # pod key -> the name being cleared: queued, in flight, or written and not yet seen
        # by the informer (till then the pod must not be taken back, `adopt`)
        self._clearing: dict[str, str] = {}
        self._slots = asyncio.Semaphore(CONCURRENCY)
        # (rank, order, node or "" to clear, pod): clears before sets, each in order
        self._queue: asyncio.PriorityQueue[tuple[int, int, str, PodInfo]] = asyncio.PriorityQueue()
        self._order = itertools.count()

    # --- the component ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        workers = [asyncio.create_task(self._work()) for _ in range(CONCURRENCY)]
        try:
            await stop.wait()
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            _, _, node, pod = await self._queue.get()
            try:
                if node:
                    await self._write_set(node, pod, level=QUEUED_SET)
                else:
                    await self._write_clear(pod)
            except KarpyError as exc:  # writes stopped (the lease was lost): so are the rest
                log.debug("nominatedNodeName not written", pod=pod.key, error=describe_error(exc))

    # --- setting ---------------------------------------------------------------------

    async def set(self, node: str, pods: Iterable[PodInfo]) -> int:
        """Name ``node`` on each of ``pods`` that is unbound, active and carries no
        nomination; how many were written. Waits for the writes."""
        todo = [p for p in pods if self._wants(node, p)]
        for pod in todo:
            self._set[pod.key] = node  # claimed now: a round's catch-up does not write it too
        results = await asyncio.gather(*(self._write_set(node, p, level=AWAITED_SET)
                                         for p in todo))  # fmt: skip
        return sum(results)

    def set_later(self, node: str, pods: Iterable[PodInfo]) -> None:
        """As `set`, on the component's tasks."""
        for pod in pods:
            if self._wants(node, pod):
                self._set[pod.key] = node  # claimed now: a second ask does not queue it twice
                self._put(node, pod)

    def sweep(self, live: Mapping[str, str], snapshot: StateSnapshot) -> int:
        """Level-triggered catch-up, each round: name the node of every live nomination
        (pod key -> target) whose target has one and whose pod carries no nomination yet
        (a write that met a conflict, a NodeClaim registered before this process took
        over); how many writes were queued. A name karpy wrote once for a nomination is
        not written again (an older kube-scheduler clears it, and karpy does not fight
        that)."""
        queued = 0
        for key, target in live.items():
            node = node_of_target(snapshot, target)
            if not node or self._set.get(key) == node:
                continue
            pod = snapshot.pods.get(key)
            if pod is not None and self._wants(node, pod):
                self._set[key] = node
                self._put(node, pod)
                queued += 1
        return queued

    def _wants(self, node: str, pod: PodInfo) -> bool:
        """Should ``pod`` be named ``node`` now? Not when bound or finished, not when it
        carries a nomination (another component's, or ours whose echo came back), not when
        our write of that very name is already on its way."""
        if pod.pod.node_name or not pod.pod.is_active or pod.pod.nominated_node_name:
            return False
        return self._set.get(pod.key) != node

    def _put(self, node: str, pod: PodInfo) -> None:
        self._queue.put_nowait((0 if not node else 1, next(self._order), node, pod))

    async def _write_set(self, node: str, pod: PodInfo, *, level: int) -> bool:
        """Write ``node`` on ``pod`` (claimed in ``_set`` by the caller); on a refusal the
        claim goes, so a later round's catch-up may try again with the pod as it is then."""
        patch = {"metadata": {"resourceVersion": pod.resource_version},
                 "status": {"nominatedNodeName": node}}  # fmt: skip
        result = await self._patch(pod, patch, level=level)
        self._count("set", result)
        if result != "written" and self._set.get(pod.key) == node:
            del self._set[pod.key]
        return result == "written"

    # --- clearing --------------------------------------------------------------------

    def ended(self, ended: Mapping[str, Ended], snapshot: StateSnapshot) -> None:
        """Nominations that ended: clear the hints karpy set on pods still unbound."""
        for key, outcome in ended.items():
            node = self._set.pop(key, None)
            if node is None or not outcome.still_pending:
                continue
            pod = snapshot.pods.get(key)
            if pod is not None and pod.pod.nominated_node_name == node and not pod.pod.node_name:
                self._clearing[key] = node
                self._put("", pod)

    async def _write_clear(self, pod: PodInfo) -> None:
        patch = {"metadata": {"resourceVersion": pod.resource_version},
                 "status": {"nominatedNodeName": None}}  # fmt: skip
        result = "conflict"
        try:
            result = await self._patch(pod, patch, level=CLEAR)
        finally:
            self._count("cleared", result)
            if result != "written":  # the name may still be there: `adopt` may take it back
                self._clearing.pop(pod.key, None)

    def window_for(self, snapshot: StateSnapshot, window: float) -> Callable[[str], float]:
        """A nomination's window (`Nominations.prune`): `NAMED_WINDOW` for a pod that
        carries the name karpy set, ``window`` for the others."""

        def of(key: str) -> float:
            node = self._set.get(key)
            pod = snapshot.named.get(key) if node else None
            if pod is not None and pod.pod.nominated_node_name == node:
                return max(window, NAMED_WINDOW)
            return window

        return of

    # --- names karpy does not remember ------------------------------------------------

    def adopt(self, snapshot: StateSnapshot, nominations: Nominations, now: float) -> int:
        """Each round: nominate again every unschedulable, unbound pod whose name is a node
        of a karpy NodeClaim but which karpy holds no nomination for (set before a restart,
        or a write that landed after its nomination ended), so that name ends as karpy's
        names end; how many. Names of other nodes are someone else's (a preemption)."""
        for key in [k for k, node in self._clearing.items() if _cleared(snapshot, k, node)]:
            del self._clearing[key]
        adopted = 0
        for key, node, claim in self._takeable(snapshot, nominations):
            nominations.nominate((key,), claim, now)
            self._set[key] = node
            adopted += 1
        if adopted:
            log.info("took back nominations from pods' nominatedNodeName", pods=adopted)
        return adopted

    def adoptable(self, snapshot: StateSnapshot, nominations: Nominations) -> bool:
        """Is there a pod `adopt` would take (so a round is due)?"""
        return next(self._takeable(snapshot, nominations), None) is not None

    def _takeable(
        self, snapshot: StateSnapshot, nominations: Nominations
    ) -> Iterator[tuple[str, str, str]]:
        """(pod key, its name, the NodeClaim of that node) for each pod `adopt` takes."""
        for key, info in snapshot.named.items():
            if key in self._clearing or nominations.get(key) is not None:
                continue
            if not _unschedulable(info):
                continue
            node = info.pod.nominated_node_name
            claim = snapshot.claim_for_node(node) if node in snapshot.nodes else None
            if claim is not None and claim.metadata.deletion_timestamp is None:
                yield key, node, claim.name

    # --- one write ---------------------------------------------------------------------

    async def _patch(self, pod: PodInfo, patch: Mapping[str, object], *, level: int) -> str:
        async with self._slots:
            try:
                with priority_scope(level):
                    await self.client.patch_status(PODS, pod.pod.name, patch,
                                                   namespace=pod.pod.namespace)  # fmt: skip
            except NotFound:
                return "gone"
            except Conflict:
                return "conflict"
            except ExpectedError as exc:
                log.warning("could not write nominatedNodeName", pod=pod.key,
                            error=describe_error(exc))  # fmt: skip
                return "conflict"
        return "written"

    def _count(self, action: str, result: str) -> None:
        if self.metrics is not None:
            self.metrics.nominated_node_names.labels(action, result).inc()


def _unschedulable(info: PodInfo) -> bool:
    """What karpy would provision for, were it not for its nominatedNodeName."""
    pod = info.pod
    return pod.unschedulable_condition and not pod.is_daemonset_pod and not pod.is_static_pod


def _cleared(snapshot: StateSnapshot, key: str, node: str) -> bool:
    """Does ``snapshot`` show the pod without the name ``node`` (or gone)?"""
    pod = snapshot.named.get(key)
    return pod is None or pod.pod.nominated_node_name != node


def node_of_target(snapshot: StateSnapshot, target: str) -> str | None:
    """The Node a nomination target (a Node's or a NodeClaim's name) is, once it exists."""
    return target if target in snapshot.nodes else snapshot.node_of_claim.get(target)
