"""`Provisioner`: one scheduling round per closed batch window, and the NodeClaims it
decides on.

A round (`Provisioner.reconcile`) runs only on a synced cluster state, one at a time (it
is a `karpy.reconcile.SingletonReconciler`):

1. take a snapshot; drop nominations that ended and count how (`NominationOutcomes`);
2. compile or reuse the scheduling context (`ContextCache`);
3. build the round's inputs (`build_round_input`, on a worker thread: it reads the
   immutable snapshot): the pods pending now minus those nominated to capacity on its
   way, plus pods of nodes being deleted;
4. set up the scheduler and solve, in a worker thread so the event loop keeps serving
   watches, writes and probes,
   bounded by ``SCHEDULING_TIMEOUT``; a round cancelled mid-solve (the controller stops
   or loses its lease) stops the thread too and creates nothing (`solve_in_thread`);
5. create the NodeClaims decided on (bounded concurrency, NodePool limits re-checked
   against what exists), nominate their pods, and record ``Nominated`` Events; record a
   ``FailedScheduling`` Event with the scheduler's one-line reason for each pod that
   cannot be placed;
6. if the time bound cut the round short, go again at once: what was decided has been
   created, the next round continues with the rest.

Pod, node and NodeClaim changes do not queue a round directly: `batch_items` names the
items a change brings (a pod needing a home, capacity that will not come), and a
`karpy.reconcile.BatchingSource` gathers them into a window whose close queues the round.
The periodic resync (every ``resync`` seconds, 10 by default as Karpenter requeues
pending pods) queues one while pods are pending or nominations are held (`due`), so a pod
whose nomination lapsed or whose NodeClaim failed is looked at again without any new
event, and the nominations of pods bound since end (and are counted) even when nothing is
pending.

NodeClaims a round created stand in for themselves until the informer reports them
(`claims_informed`, subscribed to cluster state by the wiring): till then the next round
counts them as capacity on its way, and against their NodePool's limits.

With the CapacityBuffer gate on, every round also schedules the buffers' placeholders
(`karpy.rounds.buffers`): a NodeClaim is created for those that fit nowhere, as for
pending pods, but a placeholder is never nominated, never gets an Event, and a round runs
on every resync while there are any (so a real pod that took the room gets it back).
Where the round put them is filed back for disruption and the buffers' status.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import TAINT_DISRUPTED
from karpy.apis.nodeclaim import NodeClaim
from karpy.base.quantity import format_resource
from karpy.kube.client import priority
from karpy.kube.errors import AlreadyExists, KubeError, TransportError
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import NODECLAIMS
from karpy.log import describe_error, get_logger, obj_ref
from karpy.provisioning.conflicts import shut_out_by_anti_affinity
from karpy.provisioning.nodenames import node_of_target
from karpy.provisioning.nominations import Nominations
from karpy.provisioning.outcomes import NominationOutcomes
from karpy.reconcile import DONE, Result, requeue_after
from karpy.rounds.cancellable import solve_in_thread
from karpy.rounds.contextcache import ContextCache, context_cache
from karpy.rounds.inputs import build_round_input
from karpy.rounds.nodeclaims import nodeclaim_for, random_suffix
from karpy.scheduling.buffers import is_virtual
from karpy.scheduling.resources import fits as resource_fits
from karpy.scheduling.solver import Scheduler
from karpy.scheduling.usage import NodePoolUsage
from karpy.scheduling.validation import AVOIDS_KARPENTER
from karpy.state import kinds
from karpy.state.cluster import is_node, is_nodeclaim, is_pod

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.provisioning.nodenames import NominatedNodeNames
    from karpy.rounds.buffers import BufferPods
    from karpy.rounds.contextcache import CompiledContext
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.results import NodeClaimPlan, Results
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["Provisioner"]

log = get_logger("provisioner")

CREATE_CONCURRENCY: Final = 64
CREATE_PRIORITY: Final = 10
FAILED_SCHEDULING_DEDUPE: Final = 300.0  # seconds
_NOT_SYNCED_RETRY: Final = 1.0
_INSTANCE_TYPES_SHOWN: Final = 5


class Provisioner:
    """The reconciler (see the module docstring)."""

    name = "provisioner"
    # State changes reach a round through the batching window (`batch_items`), not
    # directly: the singleton itself watches nothing.
    watches: frozenset[str] = frozenset()
    batch_watches = frozenset({kinds.POD, kinds.NODE, kinds.NODECLAIM})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        provider: CloudProvider,
        recorder: EventRecorder,
        settings: Settings,
        *,
        unavailable: UnavailableOfferings,
        metrics: KarpenterMetrics | None = None,
        clock: Clock,
        nominations: Nominations | None = None,
        contexts: ContextCache | None = None,
        buffers: BufferPods | None = None,
        hints: NominatedNodeNames | None = None,
    ) -> None:
        """``contexts`` is the compiled-context cache, shared with disruption by the
        operator; without one the provisioner builds its own. ``buffers``: the
        CapacityBuffer placeholders (with the gate on). ``hints`` writes the pods'
        ``status.nominatedNodeName`` (``NOMINATED_NODE_NAMES``)."""
        self.buffers = buffers
        self.hints = hints
        self.state = state
        self.client = client
        self.provider = provider
        self.recorder = recorder
        self.settings = settings
        self.metrics = metrics
        self.clock = clock
        self.nominations = nominations or Nominations(
            max(2 * settings.batch_max_duration / 1e9, 10.0)
        )
        self.contexts = contexts or context_cache(settings, provider, unavailable)
        self.timeout = settings.scheduling_timeout / 1e9
        self.rounds = 0
        self.solving = False  # a round's solve is running in a worker thread
        self.outcomes = NominationOutcomes(metrics)
        self._created: dict[str, tuple[NodeClaim, float]] = {}  # not yet seen by the informer
        self._first_seen: dict[str, float] = {}  # pending pod key -> monotonic first sight
        self._no_pools_reported = False

    # --- what queues a round ---------------------------------------------------------------

    def batch_items(self, change: StateChange[Any]) -> Iterable[Hashable]:
        """The items ``change`` brings to the batching window (none when it calls for no
        round); only reads."""
        if is_nodeclaim(change):
            # Capacity that was promised and will not come (a launch refused, a NodeClaim
            # deleted): its pods need another home now, not at the next resync.
            claim, was = change.new, change.old
            ending = claim is None or (
                claim.metadata.deletion_timestamp is not None
                and (was is None or was.metadata.deletion_timestamp is None)
            )
            if ending and self.state.snapshot().pending:
                return (f"nodeclaim/{change.key}",)
            return ()
        if is_pod(change):
            pod = change.new
            if pod is None:
                return ()
            if pod.provisionable:
                return (pod.pod.uid or change.key,)
            if self._bound_elsewhere(pod, change.old):
                # kube-scheduler put it on a node planned for other pods, which may not
                # fit there now: look again soon rather than at the next resync.
                return (f"displaced/{pod.pod.node_name}",)
            return ()
        if is_node(change) and change.new is not None:
            node, was_node = change.new, change.old
            if _disrupted(node) and (was_node is None or not _disrupted(was_node)):
                return (f"node/{change.key}",)  # its pods will need a home
        return ()

    def claims_informed(self, changes: Sequence[StateChange[Any]]) -> None:
        """Forget the NodeClaims created here that the informer has now reported (added,
        or already gone): they no longer need standing in for."""
        for change in changes:
            if is_nodeclaim(change):
                self._created.pop(change.key, None)

    def wants(self, change: StateChange[Any]) -> bool:
        return False  # see `watches`

    def _bound_elsewhere(self, new: PodInfo, old: PodInfo | None) -> bool:
        """Was a nominated pod just bound to a node other than its target's?"""
        node = new.pod.node_name
        if not node or (old is not None and old.pod.node_name):
            return False
        nomination = self.nominations.get(new.key)
        if nomination is None:
            return False
        target = nomination.target
        return node not in (target, self.state.snapshot().node_of_claim.get(target))

    def due(self, snapshot: StateSnapshot) -> bool:
        # While nominations are held a round runs too, if only to end them: the last
        # pods of a scale-up are bound when nothing is pending any more, and their
        # outcomes would otherwise go uncounted (and their nominations kept) until then.
        return (
            bool(snapshot.pending)
            or len(self.nominations) > 0
            or bool(self._placeholders())
            or (self.hints is not None and self.hints.adoptable(snapshot, self.nominations))
        )

    def _placeholders(self) -> tuple[Pod, ...]:
        return self.buffers.pods() if self.buffers is not None else ()

    # --- the round -----------------------------------------------------------------------

    async def reconcile(self) -> Result:
        if not self.state.synced():
            return requeue_after(_NOT_SYNCED_RETRY)
        started = time.perf_counter()
        snapshot = self.state.snapshot()
        live = self._live_nominations(snapshot)
        self._note_pending(snapshot)
        virtual = self._placeholders()
        if not snapshot.pending and not virtual and not _any_deleting(snapshot):
            self._count_round("nothing_to_do")
            return DONE
        compiled = await self.contexts.get(snapshot)
        extra = [claim for claim, _ in self._created.values()]
        # Off the event loop: at 40,000 pods this walks every pod, node and NodeClaim.
        inputs = await asyncio.to_thread(build_round_input, snapshot, compiled.types_by_name,
                                         nominated=live, extra_claims=extra,
                                         virtual=virtual)  # fmt: skip
        if not inputs.pods:
            self._count_round("nothing_to_do")
            return DONE
        if not compiled.context.pools:
            self._no_nodepools(inputs.pods, compiled)
            self._count_round("no_nodepools")
            return DONE
        self._no_pools_reported = False

        def scheduler() -> Scheduler:  # built on the solver's thread too: it walks the nodes
            return Scheduler(
                compiled.context, inputs.cluster,
                preference_policy=self.settings.preference_policy,
                reserved_capacity=self.settings.feature_gates.reserved_capacity,
            )  # fmt: skip

        results = await self._solve(scheduler, inputs.pods)
        if self.buffers is not None:
            ready = {n.name for n in inputs.cluster.capacity if n.initialized}
            self.buffers.record_round(results, ready)
        created = await self._create_all(results.new_nodeclaims, snapshot, compiled)
        self._nominate_existing(results, snapshot)
        self._report_unschedulable(results, _unused_pools(snapshot, compiled))
        self._observe(results, inputs.pending, created, time.perf_counter() - started,
                      nominated=inputs.nominated)  # fmt: skip
        self.rounds += 1
        if results.deferred:
            return requeue_after(0)
        return DONE

    async def _solve(self, scheduler: Callable[[], Scheduler], pods: Sequence[Pod]) -> Results:
        """The round's solve, in a worker thread that ends with the round if the round is
        cancelled (`solve_in_thread`): then nothing is created and the round counts as
        abandoned."""
        self.solving = True
        try:
            return await solve_in_thread(
                lambda cancel: scheduler().solve(pods, budget=self.timeout, cancel=cancel)
            )
        except asyncio.CancelledError:
            log.info("abandoned provisioning round", pods=len(pods))
            self._count_round("abandoned")
            raise
        finally:
            self.solving = False

    # --- nominations ---------------------------------------------------------------------

    def live_nominations(self, snapshot: StateSnapshot) -> dict[str, str]:
        """Pod key -> the NodeClaim or Node it is nominated to, for nominations that still
        hold (disruption leaves those targets alone)."""
        return self._live_nominations(snapshot)

    def _live_nominations(self, snapshot: StateSnapshot) -> dict[str, str]:
        now = self.clock.now().timestamp()
        for name in [n for n, (_, at) in self._created.items()
                     if n in snapshot.nodeclaims or self.clock.monotonic() - at > 60]:  # fmt: skip
            del self._created[name]
        accepted: dict[str, frozenset[str] | None] = {}

        def fits(pod_key: str, target: str) -> bool:
            if target not in accepted:
                accepted[target] = self._room_holds(snapshot, target)
            holds = accepted[target]
            return holds is None or pod_key in holds

        hints = self.hints
        if hints is None:
            return self.outcomes.prune(self.nominations, snapshot, now, fits=fits,
                                       in_flight=self._created)  # fmt: skip
        if self.state.synced():
            hints.adopt(snapshot, self.nominations, now)
        window_for = hints.window_for(snapshot, self.nominations.window)
        live = self.outcomes.prune(self.nominations, snapshot, now, fits=fits,
                                   in_flight=self._created, window_for=window_for,
                                   on_ended=lambda ended: hints.ended(ended, snapshot))  # fmt: skip
        hints.sweep(live, snapshot)
        return live

    def _room_holds(self, snapshot: StateSnapshot, target: str) -> frozenset[str] | None:
        """Which of the pods nominated to initialized ``target`` its room still holds; None
        while it has no node. In kube-scheduler's queue order (oldest first), each pod
        takes its requests from what the bound pods and the pods before it leave, and
        must not be kept apart from the bound pods by required anti-affinity. The rest no
        longer fit: kube-scheduler placed other pods there, and a node named on more pods
        than it holds takes none of them (each counts the others' room as taken)."""
        room = _free_on(snapshot, target)
        if room is None:
            return None
        node_name = snapshot.node_of_claim.get(target, target)
        node = snapshot.nodes[node_name]  # room is known: the node exists
        bound = [i.pod for i in snapshot.pods_on(node_name)]
        waiting = [
            info
            for key in self.nominations.pods_for(target)
            if (info := snapshot.pods.get(key)) is not None and not info.pod.node_name
        ]
        waiting.sort(key=lambda i: (i.pod.creation_timestamp, i.key))
        holds: set[str] = set()
        for info in waiting:
            if not resource_fits(info.pod.requests, room):
                continue
            if shut_out_by_anti_affinity(info.pod, node.node.labels, bound):
                continue
            room = {name: left - info.pod.requests.get(name, 0) for name, left in room.items()}
            holds.add(info.key)
        return frozenset(holds)

    def _nominate(self, pods: Sequence[Pod], target: str, kind: str) -> None:
        # Placeholders hold room by being scheduled each round, not by nominations (which
        # would never end, and would keep disruption off their node for good).
        pods = [p for p in pods if not is_virtual(p)]
        self.nominations.nominate((p.key for p in pods), target, self.clock.now().timestamp())
        message = f"Pod should schedule on: {kind}/{target}"
        for pod in pods:
            self._decided(pod.key)
            self.recorder.publish(Event(_pod_ref(pod), "Normal", "Nominated", message,
                                        dedupe_values=(pod.uid, target)))  # fmt: skip
        if self.hints is not None:
            # A target whose node exists can be named at once; a NodeClaim still on its way
            # is named by registration, before its node can take pods (`name_nominated`).
            snapshot = self.state.snapshot()
            node = node_of_target(snapshot, target)
            if node:
                self.hints.set_later(node, _infos(snapshot, (p.key for p in pods)))

    async def name_nominated(self, claim: str, node: str) -> int:
        """Write ``node`` as the nominatedNodeName of the pods nominated to NodeClaim
        ``claim`` (registration calls it before it lifts the node's unregistered taint);
        how many were written."""
        if self.hints is None:
            return 0
        snapshot = self.state.snapshot()
        return await self.hints.set(node, _infos(snapshot, self.nominations.pods_for(claim)))

    def _nominate_existing(self, results: Results, snapshot: StateSnapshot) -> None:
        for placement in results.existing_nodes:
            name = placement.name
            claim = snapshot.claim_for_node(name) if name in snapshot.nodes else None
            kind = "node" if name in snapshot.nodes else "nodeclaim"
            self._nominate(placement.pods, claim.name if claim is not None else name, kind)

    # --- creating NodeClaims -------------------------------------------------------------

    async def _create_all(
        self, plans: Sequence[NodeClaimPlan], snapshot: StateSnapshot, compiled: CompiledContext
    ) -> int:
        if not plans:
            return 0
        usage = _pool_usage(snapshot, self._created)
        waiting = iter(plans)
        created = 0

        async def creator() -> None:
            nonlocal created
            for plan in waiting:  # shared by the creators: each plan is taken once
                created += await self._create(plan, snapshot, compiled, usage)

        # A fixed set of creators rather than a task per plan: a round of tens of thousands
        # of NodeClaims cancelled at shutdown has CREATE_CONCURRENCY tasks to cancel, not a
        # semaphore queue whose every cancellation costs a scan of the queue.
        # Creating NodeClaims goes ahead of the lifecycle's writes in the rate limiter:
        # the capacity a round decided on is asked for first, whatever else is queued.
        with priority(CREATE_PRIORITY):
            await asyncio.gather(*(creator() for _ in range(min(CREATE_CONCURRENCY, len(plans)))))
        return created

    async def _create(
        self,
        plan: NodeClaimPlan,
        snapshot: StateSnapshot,
        compiled: CompiledContext,
        usage: dict[str, NodePoolUsage],
    ) -> bool:
        nodepool = snapshot.nodepools.get(plan.nodepool)
        template = compiled.context.templates.get(plan.nodepool)
        if nodepool is None or template is None:
            return False
        exceeded = _exceeded(nodepool.spec.limits, usage.get(plan.nodepool, NodePoolUsage()))
        if exceeded:
            self._limit_reached(plan, exceeded)
            return False
        well_known = compiled.context.well_known_labels
        for _ in range(3):  # a name clash is retried with a fresh name
            name = f"{plan.nodepool}-{random_suffix()}"
            body = nodeclaim_for(plan, nodepool, template, name=name, well_known=well_known)
            try:
                created = await self.client.create(NODECLAIMS, body)
            except AlreadyExists:
                continue
            except TransportError as exc:
                created = await self.client.try_get(NODECLAIMS, name)  # did it land?
                if created is None:
                    log.error("could not create nodeclaim", **obj_ref("NodePool", plan.nodepool),
                              error=describe_error(exc))  # fmt: skip
                    return False
            except KubeError as exc:
                log.error("could not create nodeclaim", **obj_ref("NodePool", plan.nodepool),
                          error=describe_error(exc))  # fmt: skip
                return False
            self._created_claim(plan, NodeClaim.from_dict(created), usage)
            return True
        return False

    def _created_claim(
        self, plan: NodeClaimPlan, claim: NodeClaim, usage: dict[str, NodePoolUsage]
    ) -> None:
        if claim.name not in self.state.snapshot().nodeclaims:  # else the informer was first
            self._created[claim.name] = (claim, self.clock.monotonic())
        pool_usage = usage.get(plan.nodepool, NodePoolUsage())
        usage[plan.nodepool] = pool_usage.plus_node(plan.instance_type.capacity)
        options = [it.name for it, _ in plan.instance_type_options()]
        shown = ", ".join(options[:_INSTANCE_TYPES_SHOWN])
        if len(options) > _INSTANCE_TYPES_SHOWN:
            shown += f" and {len(options) - _INSTANCE_TYPES_SHOWN} other(s)"
        replan = self.outcomes.count_created(plan.pods)
        log.info("created nodeclaim", **obj_ref("NodePool", plan.nodepool),
                 **obj_ref("NodeClaim", claim.name), requests=_quantities(plan.requests),
                 instanceTypes=shown, pods=len(plan.pods), plan=replan)  # fmt: skip
        if self.metrics is not None:
            relaxed = "true" if plan.min_values_relaxed else "false"
            self.metrics.nodeclaims_created.labels("provisioned", plan.nodepool, relaxed).inc()
        self._nominate(plan.pods, claim.name, "nodeclaim")

    def _limit_reached(self, plan: NodeClaimPlan, exceeded: str) -> None:
        message = f'nodepool "{plan.nodepool}" has reached its limits: {exceeded}'
        log.info("nodepool limits reached; not creating nodeclaim",
                 **obj_ref("NodePool", plan.nodepool), exceeded=exceeded)  # fmt: skip
        for pod in plan.pods:
            self._failed(pod, message)

    # --- explaining ------------------------------------------------------------------------

    def _report_unschedulable(self, results: Results, unused_pools: str) -> None:
        ignored = 0
        for item in results.unschedulable:
            reason = item.render()
            if reason.startswith("ignored by karpenter"):
                ignored += 1
                if AVOIDS_KARPENTER in reason:
                    continue  # pods that avoid karpenter's nodes get no event, as Karpenter
            elif unused_pools:
                reason = f"{reason}; {unused_pools}"
            self._failed(item.pod, reason)
        if self.metrics is not None:
            self.metrics.ignored_pods.set(ignored)

    def _failed(self, pod: Pod, reason: str) -> None:
        if is_virtual(pod):
            return  # no pod to tell; the buffer's Provisioning condition says it
        self._decided(pod.key)
        self.recorder.publish(Event(
            _pod_ref(pod), "Warning", "FailedScheduling", f"Failed to schedule pod, {reason}",
            dedupe_values=(pod.uid, reason), dedupe_timeout=FAILED_SCHEDULING_DEDUPE,
        ))  # fmt: skip

    def _no_nodepools(self, pods: Sequence[Pod], compiled: CompiledContext) -> None:
        skipped = {s.template.nodepool: s.reason for s in compiled.context.skipped}
        reasons = {**skipped, **compiled.unusable}
        if reasons:
            detail = "; ".join(f'nodepool "{n}": {r}' for n, r in sorted(reasons.items()))
            message = f"no nodepool can provision: {detail}"
        else:
            message = "no ready nodepools found"
        if not self._no_pools_reported:
            log.info("cannot provision: no usable nodepools", pods=len(pods), reason=message)
            self._no_pools_reported = True
        for pod in pods:
            self._failed(pod, message)

    # --- bookkeeping ---------------------------------------------------------------------

    def _note_pending(self, snapshot: StateSnapshot) -> None:
        now = self.clock.monotonic()
        seen = self._first_seen
        for key in [k for k in seen if k not in snapshot.pending]:
            del seen[key]
        for key in snapshot.pending:
            seen.setdefault(key, now)

    def _decided(self, pod_key: str) -> None:
        first = self._first_seen.pop(pod_key, None)
        if first is not None and self.metrics is not None:
            self.metrics.pod_decision_duration.observe(self.clock.monotonic() - first)

    def _count_round(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.rounds.labels(outcome).inc()

    def _observe(
        self, results: Results, pending: int, created: int, seconds: float, *, nominated: int
    ) -> None:
        new = sum(len(c.pods) for c in results.new_nodeclaims)
        existing = sum(len(n.pods) for n in results.existing_nodes)
        log.info(
            "provisioning round",
            pods=results.pods, pending=pending, alreadyNominated=nominated,
            newNodeClaims=len(results.new_nodeclaims), created=created, podsOnNewNodeClaims=new,
            podsOnExistingCapacity=existing, unschedulable=len(results.unschedulable),
            deferred=len(results.deferred), solveSeconds=round(results.seconds, 3),
            seconds=round(seconds, 3),
        )  # fmt: skip
        metrics = self.metrics
        if metrics is None:
            return
        outcome = "deferred" if results.deferred else "launched" if created else "no_launch"
        metrics.rounds.labels(outcome).inc()
        metrics.scheduling_duration.labels(self.name).observe(results.seconds)
        metrics.provisioner_scheduling_duration.observe(results.seconds)
        metrics.scheduler_queue_depth.labels(self.name, "").set(len(results.deferred))
        metrics.unschedulable_pods.labels(self.name).set(len(results.unschedulable))
        for state_name, count in (("pending", pending), ("nominated_new", new),
                                  ("nominated_existing", existing),
                                  ("unschedulable", len(results.unschedulable)),
                                  ("deferred", len(results.deferred))):  # fmt: skip
            metrics.round_pods.labels(state_name).set(count)


def _pod_ref(pod: Pod) -> ObjectRef:
    return ObjectRef("Pod", pod.name, pod.namespace, pod.uid, "v1")


def _disrupted(record: Any) -> bool:
    node = getattr(record, "node", None)
    if node is None:
        return False
    return any(t.key == TAINT_DISRUPTED and t.effect == "NoSchedule" for t in node.taints)


def _any_deleting(snapshot: StateSnapshot) -> bool:
    return any(
        info.deletion_timestamp is not None or _disrupted(info) for info in snapshot.nodes.values()
    )


def _pool_usage(
    snapshot: StateSnapshot, created: dict[str, tuple[NodeClaim, float]]
) -> dict[str, NodePoolUsage]:
    """Per NodePool, its NodeClaims: the capacity they have or (not launched yet) were
    sized for, and how many they are."""
    capacities: dict[str, list[Mapping[str, int]]] = {}
    claims = list(snapshot.nodeclaims.values())
    claims += [c for name, (c, _) in created.items() if name not in snapshot.nodeclaims]
    for claim in claims:
        if claim.metadata.deletion_timestamp is not None:
            continue
        pool = claim.metadata.labels.get("karpenter.sh/nodepool", "")
        capacity = claim.status.capacity or claim.spec.resources.requests
        capacities.setdefault(pool, []).append(capacity)
    return {pool: NodePoolUsage.of_nodes(each) for pool, each in capacities.items()}


def _exceeded(limits: dict[str, int] | Any, usage: NodePoolUsage) -> str:
    """Which limit ``usage`` already exceeds (Karpenter's ``ExceededBy``), or ""."""
    for resource, limit in sorted(limits.items()):
        used = usage.amount(resource)
        if used > limit:
            return f"{resource} {_quantity(resource, used)} > {_quantity(resource, limit)}"
    return ""


def _quantity(resource: str, milli: int) -> str:
    return format_resource(resource, milli)


def _quantities(resources: dict[str, int] | Any) -> dict[str, str]:
    return {name: _quantity(name, value) for name, value in sorted(resources.items())}


def _unused_pools(snapshot: StateSnapshot, compiled: CompiledContext) -> str:
    """Why the NodePools a round could not use were left out ("" when it used all), so a
    pod's FailedScheduling says why a pool it may have been meant for did not count."""
    used = {p.template.nodepool for p in compiled.context.pools}
    reasons = {s.template.nodepool: s.reason for s in compiled.context.skipped}
    reasons.update(compiled.unusable)
    for pool in snapshot.nodepools.values():
        if pool.name in used or pool.name in reasons or pool.is_static:
            continue
        if pool.metadata.deletion_timestamp is not None:
            reasons[pool.name] = "being deleted"
            continue
        ready = next((c for c in pool.status.conditions if c.type == "Ready"), None)
        if ready is None or ready.status != "True":
            detail = f" ({ready.message})" if ready is not None and ready.message else ""
            reasons[pool.name] = f"not ready{detail}"
    return "; ".join(f'nodepool "{name}" skipped: {why}' for name, why in sorted(reasons.items()))


def _free_on(snapshot: StateSnapshot, target: str) -> dict[str, int] | None:
    """What is left of the allocatable of ``target``'s node (a NodeClaim's or a Node's
    name) after the pods bound there; None when it has no node yet."""
    node_name = snapshot.node_of_claim.get(target, target)
    node = snapshot.nodes.get(node_name)
    if node is None:
        return None
    free = dict(node.node.allocatable)
    for info in snapshot.pods_on(node_name):
        if info.pod.is_active:
            for resource, value in info.pod.requests.items():
                free[resource] = free.get(resource, 0) - value
    return free


def _infos(snapshot: StateSnapshot, keys: Iterable[str]) -> list[PodInfo]:
    """The pods of ``keys`` that ``snapshot`` holds."""
    return [info for key in keys if (info := snapshot.pods.get(key)) is not None]
