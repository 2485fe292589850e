"""The scheduler: place pending pods on existing capacity or on the cheapest new nodes.

`Scheduler.solve` follows Karpenter's algorithm, step for step:

``solve``
    Pods are queued largest first. Each is tried in turn (`_try_schedule`); a pod that
    cannot be placed goes to the back of the queue, and the round ends when a full pass
    over the queue places nothing (this lets pods with affinity to other pending pods, or
    spread constraints that need a particular order, succeed on a later pass).
``_try_schedule``
    Tries the pod as it is; on failure relaxes one preference at a time (see
    `PodShape.relax`) and tries again, until placed or nothing is left to relax.
``_add``
    The order capacity is tried in: `_add_to_existing_node` (registered nodes and in-flight
    NodeClaims, initialized ones first, then by name), `_add_to_inflight_claim` (NodeClaims
    planned earlier in this round, fewest pods first), `_add_to_new_claim` (a new
    NodeClaim from each NodePool in weight order; the first that fits wins).

The differences from Karpenter are in cost, not outcome: pods are grouped into shapes
whose derived data is computed once; requirement algebra is memoised; instance types are
bitsets; candidate nodes for pods with hostname anti-affinity come from an index of empty
hosts instead of a scan; and rejections that can only get worse as nodes fill up are
remembered per shape so a node is not re-examined for a shape it already refused.

The solve is pure and synchronous. A time budget bounds it: when the caller's clock says
the budget is spent, placements so far are returned and the remaining pods are reported
as deferred, not unschedulable.

It runs in a worker thread, which Python cannot interrupt, so a stopping controller asks it
to stop: the caller passes a `threading.Event` as ``cancel`` and sets it. The solve looks
at it between groups of pods (when the pod shape changes, and every `CANCEL_CHECK_PODS`
pods of one shape) and raises `SolveCancelled`: a cancelled round has no result at all,
since NodeClaims planned for part of a queue would be sized and spread for a round that
never finished.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from karpy.base.gcpause import gc_paused
from karpy.scheduling.algebra import RequirementAlgebra
from karpy.scheduling.clustersnapshot import ClusterSnapshot
from karpy.scheduling.daemonsets import daemon_overhead_groups
from karpy.scheduling.environment import RoundEnvironment
from karpy.scheduling.existingnode import ExistingNode, existing_nodes
from karpy.scheduling.explain import Explainer
from karpy.scheduling.finalize import finalize_claims
from karpy.scheduling.index import bitset_bytes, iter_bits, iter_set_bits
from karpy.scheduling.kinds import GroupKind, Outcome, PreferencePolicy, RejectionKind
from karpy.scheduling.limits import PoolLimits
from karpy.scheduling.nodeclaim import (
    NewNodeClaim,
    Plan,
    Rejection,
    is_permanent,
)
from karpy.scheduling.queue import ClaimOrder, Lane, PodQueue
from karpy.scheduling.reservations import ReservationManager
from karpy.scheduling.resources import smallest_requests
from karpy.scheduling.results import (
    ExistingNodePlacement,
    Results,
    Unschedulable,
    UnschedulableReason,
)
from karpy.scheduling.roomindex import RoomIndex
from karpy.scheduling.shapes import PodShape, ShapeBuilder, visible_label_keys
from karpy.scheduling.topology import Topology
from karpy.scheduling.validation import pod_problem
from karpy.scheduling.volumelimits import pod_volumes
from karpy.scheduling.volumes import VolumeError, volume_requirements

if TYPE_CHECKING:
    import threading
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

    from karpy.scheduling.context import PoolCandidates, SchedulingContext
    from karpy.scheduling.daemonsets import DaemonOverheadGroup
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.requirements import Requirements
    from karpy.scheduling.volumelimits import PodVolumes

__all__ = ["ClusterSnapshot", "Scheduler", "SolveCancelled"]

DEFAULT_BUDGET_SECONDS: Final = 30.0
# Pods of one shape tried between two looks at the cancel flag.
CANCEL_CHECK_PODS: Final = 64
# Outcomes of trying one pod shape against all capacity.
MAX_INSTANCE_TYPES: Final = 600
# Resources whose room a planned claim tracks, to skip claims too small for a pod.
_ROOM_RESOURCES: Final = ("cpu", "memory")
# Use an index of candidate hosts when it is smaller than this share of the nodes.
_INDEX_SHARE: Final = 4


class SolveCancelled(Exception):
    """The solve stopped because its ``cancel`` flag was set; the round has no result."""

    def __init__(self, pods_tried: int) -> None:
        super().__init__(f"solve cancelled after {pods_tried} pod(s) tried")
        self.pods_tried = pods_tried


class Scheduler:
    """One provisioning round over a `SchedulingContext` and a `ClusterSnapshot`."""

    def __init__(
        self,
        context: SchedulingContext,
        cluster: ClusterSnapshot,
        *,
        preference_policy: PreferencePolicy | str = PreferencePolicy.RESPECT,
        max_instance_types: int = MAX_INSTANCE_TYPES,
        reserved_capacity: bool = True,
        reserved_fallback: bool = False,
        lanes: bool = True,
        resting_nodes: frozenset[str] = frozenset(),
        moving_pods: frozenset[str] = frozenset(),
    ) -> None:
        """``reserved_capacity`` enables capacity-reservation tracking (Karpenter's
        ReservedCapacity gate); ``reserved_fallback`` lets pods that cannot get a held
        reservation fall back to other capacity (consolidation does; provisioning does
        not). ``lanes=False`` walks every planned claim instead of only those in the lanes
        topology allows (`_lane`): the decisions are the same, which tests check.
        ``resting_nodes`` (hostnames) take none of ``moving_pods`` (pod keys): a
        consolidation's what-if keeps the pods it moves off nodes under their
        ``consolidateAfter`` (`karpy.disruption.simulation.WhatIf.resting`)."""
        self.context = context
        self.cluster = cluster
        self.policy = PreferencePolicy(preference_policy)
        self.max_instance_types = max_instance_types
        self.well_known = context.well_known_labels
        self.restricted_domains = context.restricted_label_domains
        self.relax_min_values = context.min_values_policy == "BestEffort"
        self.tolerate_prefer_no_schedule = any(
            t.effect == "PreferNoSchedule" for p in context.pools for t in p.template.taints
        )
        self.algebra = RequirementAlgebra()
        self.claims: list[NewNodeClaim] = []
        self.claim_order = ClaimOrder()
        self.lane_keys: tuple[str, ...] = ()  # see `_lane`
        self.existing: list[ExistingNode] = []
        self.room = RoomIndex(())
        # Existing nodes and planned claims by host position (see `Topology.hosts`).
        self.by_host: dict[int, ExistingNode | NewNodeClaim] = {}
        self.limits = PoolLimits(context, cluster.capacity)
        self.reservations = ReservationManager(context.index.types) if reserved_capacity else None
        self.reserved_fallback = reserved_fallback
        self.lanes = lanes
        self.resting_nodes = resting_nodes
        self.moving_pods = moving_pods
        self.daemon_groups: dict[str, tuple[DaemonOverheadGroup, ...]] = {
            pool.template.nodepool: daemon_overhead_groups(
                pool.template, context.index, pool.options, cluster.daemonset_pods, self.well_known
            )
            for pool in context.pools
        }
        self.topology: Topology
        self.env: RoundEnvironment  # set when the round starts (it needs the topology)
        self._solved = False
        self.smallest_requests: dict[str, int] = {}
        # Per pod (by id), the claims it mounts by CSI driver, when some node or instance
        # type has limits.
        self.pod_volumes: dict[int, PodVolumes] = {}

    # -- setup -------------------------------------------------------------------------------
    def _place_existing_nodes(self) -> None:
        for node in self.existing:
            node.position = self.topology.hosts.position(node.hostname)
            self.by_host[node.position] = node
        self.room = RoomIndex((n.position, n.remaining) for n in self.existing)

    # -- the round ----------------------------------------------------------------------------
    def solve(
        self,
        pods: Sequence[Pod],
        *,
        clock: Callable[[], float] = time.monotonic,
        budget: float = DEFAULT_BUDGET_SECONDS,
        cancel: threading.Event | None = None,
    ) -> Results:
        """Place ``pods``; stop placing when ``budget`` seconds of ``clock`` have passed.
        Raise `SolveCancelled` soon after ``cancel`` is set (see the module docstring).

        A `Scheduler` plans one round: build a new one (cheap, given the context) for the
        next.
        """
        if self._solved:
            raise RuntimeError("a Scheduler solves one round; create a new one per round")
        self._solved = True
        with gc_paused():
            return self._solve(pods, clock=clock, budget=budget, cancel=cancel)

    def _solve(
        self,
        pods: Sequence[Pod],
        *,
        clock: Callable[[], float],
        budget: float,
        cancel: threading.Event | None,
    ) -> Results:
        cancelled = cancel.is_set if cancel is not None else _never
        if cancelled():
            raise SolveCancelled(0)
        started = clock()
        deadline = started + budget
        unschedulable: list[Unschedulable] = []
        shapes, schedulable = self._shapes(pods, unschedulable)
        excluded = {p.uid for p in pods if p.uid and p.node_name}
        self.existing = existing_nodes(self.cluster)
        self.topology = Topology(
            universe=self.context.domains,
            nodes_by_name={n.name: n for n in self.cluster.nodes},
            domain_nodes=[n for n in self.cluster.capacity if not n.marked_for_deletion],
            bound_pods=self.cluster.index.bound(self.cluster.bound_pods),
            namespace_labels=self.cluster.namespaces,
            excluded=frozenset(excluded),
            policy=self.policy,
            hostnames=[n.hostname for n in self.existing],
        )
        self.env = RoundEnvironment(
            context=self.context,
            algebra=self.algebra,
            topology=self.topology,
            policy=self.policy,
            tolerate_prefer_no_schedule=self.tolerate_prefer_no_schedule,
            relax_min_values=self.relax_min_values,
            max_instance_types=self.max_instance_types,
            reservations=self.reservations,
            reserved_fallback=self.reserved_fallback,
            taken_names=frozenset(
                {n.name for n in self.cluster.nodes} | {n.name for n in self.cluster.capacity}
            ),
        )
        self._place_existing_nodes()
        for shape in shapes.shapes:
            self.topology.prepare(shape)
        self.lane_keys = self.topology.domain_keys() if self.lanes else ()
        shape_of = {id(pod): shape for pod, shape in schedulable}
        self.smallest_requests = smallest_requests(s.requests for s in shapes.shapes)
        queue = PodQueue(pod for pod, _ in schedulable)
        failed: dict[int, Pod] = {}
        deferred: list[Pod] = []
        last_shape: PodShape | None = None
        tried = same_shape = 0
        while True:
            pod = queue.pop()
            if pod is None:
                break
            if clock() >= deadline:
                deferred.append(pod)
                deferred.extend(queue.remaining())
                break
            shape = shape_of[id(pod)]
            if shape is not last_shape or same_shape >= CANCEL_CHECK_PODS:
                if cancelled():
                    raise SolveCancelled(tried)
                last_shape, same_shape = shape, 0
            same_shape += 1
            tried += 1
            if self._try_schedule(pod, shape):
                failed.pop(id(pod), None)
            else:
                failed[id(pod)] = pod
                queue.push(pod)
        if cancelled():  # explaining failures and finishing claims take a while too
            raise SolveCancelled(tried)
        explainer = Explainer(self.env, self.fresh_claim, self.limits)
        unschedulable.extend(
            Unschedulable(pod, explainer.explain(shape_of[id(pod)], self.pod_volumes.get(id(pod))))
            for pod in failed.values()
        )
        claims, truncated = finalize_claims(self.env, self.claims)
        for pod, reason in truncated:
            unschedulable.append(Unschedulable(pod, reason))
        return Results(
            new_nodeclaims=tuple(claims),
            existing_nodes=tuple(
                ExistingNodePlacement(n.node.name, tuple(n.pods)) for n in self.existing if n.pods
            ),
            unschedulable=tuple(sorted(unschedulable, key=lambda u: u.pod.key)),
            deferred=tuple(sorted(deferred, key=lambda p: p.key)),
            pods=len(pods),
            shapes=len(shapes.shapes),
            seconds=clock() - started,
        )

    def _shapes(
        self, pods: Sequence[Pod], unschedulable: list[Unschedulable]
    ) -> tuple[ShapeBuilder, list[tuple[Pod, PodShape]]]:
        bound = self.cluster.bound_pods
        visible = visible_label_keys(pods, ()) | self.cluster.index.selector_keys(bound)
        builder = ShapeBuilder(visible, self.policy)
        schedulable: list[tuple[Pod, PodShape]] = []
        volumes = self.cluster.volumes
        # Count a pod's claims when some limit could refuse them: an existing node's
        # CSINode, or an instance type's declared limit for new NodeClaims.
        count_volumes = bool(volumes.attach_limits) or self.context.index.attach_limited
        for pod in pods:
            problem = pod_problem(pod, self.well_known, self.restricted_domains)
            if problem is not None:
                unschedulable.append(Unschedulable(pod, _ignored(problem)))
                continue
            alternatives: tuple[Requirements, ...] = ()
            if pod.volumes:
                try:
                    alternatives = volume_requirements(pod, volumes)
                except VolumeError as exc:
                    unschedulable.append(Unschedulable(pod, _ignored(str(exc))))
                    continue
                if count_volumes:
                    self.pod_volumes[id(pod)] = pod_volumes(pod, volumes)
            schedulable.append((pod, builder.shape_of(pod, alternatives)))
        return builder, schedulable

    def _try_schedule(self, pod: Pod, shape: PodShape) -> bool:
        current: PodShape | None = shape
        while current is not None:
            outcome = self._add(pod, current)
            if outcome is Outcome.PLACED:
                return True
            if outcome is Outcome.WAIT_FOR_RESERVATION:
                # Relaxing would only steer the pod away from capacity it may get next round.
                return False
            current = current.relax(self.tolerate_prefer_no_schedule, self.policy)
            if current is not None:
                self.topology.prepare(current)
        return False

    def _add(self, pod: Pod, shape: PodShape) -> Outcome:
        hosts = self._candidate_hosts(shape)
        if self._add_to_existing_node(pod, shape, hosts):
            return Outcome.PLACED
        if self._add_to_inflight_claim(pod, shape, hosts):
            return Outcome.PLACED
        if not self.context.pools:
            return Outcome.FAILED
        return self._add_to_new_claim(pod, shape)

    # -- where to look --------------------------------------------------------------------------
    def _candidate_hosts(self, shape: PodShape) -> int | None:
        """Host positions (a bitset) a pod of ``shape`` may use, or None for any.

        Hostname anti-affinity allows only hosts without a selected pod; a spread
        constraint the pod counts toward allows hosts below ``maxSkew``; affinity allows
        hosts that already hold a selected pod. Positions index `Topology.hosts`.
        """
        groups = self.topology.matching_groups(shape)
        if not groups:
            return None
        allowed: int | None = None
        every = self.topology.hosts.all
        for group in groups:
            if not group.is_hostname:
                continue
            if group.kind == GroupKind.ANTI_AFFINITY or (
                group.kind == GroupKind.SPREAD and group.selects(shape.namespace, shape.labels)
            ):
                mask = every & ~group.full_hosts
            elif group.kind == GroupKind.AFFINITY and group.nonzero_hosts:
                # Pods cannot require a hostname, so some selected pod is always
                # compatible: the pod must join one of the hosts already holding one.
                mask = group.nonzero_hosts
            else:
                continue
            allowed = mask if allowed is None else allowed & mask
        return allowed

    def _indexed(self, hosts: int, size: int) -> list[ExistingNode | NewNodeClaim] | None:
        """The nodes at the positions of ``hosts`` when there are few enough to list."""
        if hosts.bit_count() * _INDEX_SHARE >= size:
            return None
        by_position = self.by_host
        return [by_position[p] for p in iter_bits(hosts) if p in by_position]

    def _add_to_existing_node(self, pod: Pod, shape: PodShape, hosts: int | None) -> bool:
        existing = self.existing
        if not existing:
            return False
        memo = shape.memo
        start = memo.existing_cursor
        if start >= len(existing):
            return False
        claims = self.pod_volumes.get(id(pod))
        roomy = self.room.candidates(shape.requests)
        both = hosts if roomy is None else roomy if hosts is None else hosts & roomy
        if both is None:
            nodes: Iterable[ExistingNode] = existing[start:]
        else:
            nodes = self._existing_at(both, existing[start].position, start)
        # The cursor skips nodes that refuse this shape for the rest of the round; nodes
        # left out for lack of room qualify, those topology rules out may not.
        cursor_moving = hosts is None
        resting = self.resting_nodes if pod.key in self.moving_pods else None
        for node in nodes:
            if resting and node.hostname in resting:
                cursor_moving = False  # other pods of this shape may still go there
                continue
            plan = node.can_add(shape, self.env, claims)
            if isinstance(plan, Plan):
                node.add(pod, shape, plan, self.topology, claims)
                self.room.update(node.position, node.remaining)
                return True
            if cursor_moving and is_permanent(plan):
                memo.existing_cursor = node.index + 1
            else:
                cursor_moving = False
        return False

    def _existing_at(self, mask: int, first: int, start: int) -> Iterator[ExistingNode]:
        """The existing nodes at the positions of ``mask`` from ``first`` on, in try order
        (existing nodes hold the first positions, in that order)."""
        if mask.bit_count() * _INDEX_SHARE < len(self.existing):
            positions: Iterable[int] = iter_bits(mask >> first << first)
        else:
            positions = iter_set_bits(bitset_bytes(mask, 0) or b"", first)
        by_host = self.by_host
        for position in positions:
            node = by_host.get(position)
            if isinstance(node, ExistingNode) and node.index >= start:
                yield node

    def _add_to_inflight_claim(self, pod: Pod, shape: PodShape, hosts: int | None) -> bool:
        if not self.claims:
            return False
        rejected = shape.memo.rejected_claims
        order = self.claim_order
        requests = shape.requests
        order.unpark(requests)
        listed = self._indexed(hosts, len(self.claims)) if hosts is not None else None
        candidates: Iterable[int]
        if listed is not None:
            ranked = sorted(
                (c for c in listed if isinstance(c, NewNodeClaim) and c.index in order),
                key=lambda c: (len(c.pods), c.index),
            )
            candidates = [c.index for c in ranked]
        else:
            candidates = order
        claims = self.claims
        volumes = self.pod_volumes.get(id(pod))
        parked: list[tuple[NewNodeClaim, str, int]] = []
        # Topology under the current counts rules out whole zones or hosts at once; screen
        # claims by their own domains before the full (much dearer) question.
        screen = self.topology.screen(shape) if self.topology.constrains(shape) else None
        if screen is not None and listed is None:
            lanes = order.lanes()
            open_lanes = [lane for lane in lanes if screen.admits(self.lane_keys, lane)]
            if len(open_lanes) < len(lanes):
                candidates = order.among(open_lanes)
        for i in candidates:
            if i in rejected:
                continue
            claim = claims[i]
            if hosts is not None and not hosts >> claim.position & 1:
                continue
            short = _short_of(claim.room, requests)
            if short is not None:
                parked.append((claim, *short))
                continue
            if screen is not None and screen.rejects(claim.requirements, claim.hostname):
                continue
            plan = claim.can_add(shape, self.env, pod_volumes=volumes)
            if isinstance(plan, Plan):
                self._park(parked)
                self._hold(claim, plan)
                claim.add(pod, shape, plan, self.env, volumes)
                self._reorder(claim)
                return True
            if is_permanent(plan):
                rejected.add(i)
        self._park(parked)
        return False

    def _park(self, parked: list[tuple[NewNodeClaim, str, int]]) -> None:
        for claim, resource, room in parked:
            self.claim_order.park(claim.index, len(claim.pods), resource, room)

    def _add_to_new_claim(self, pod: Pod, shape: PodShape) -> Outcome:
        volumes = self.pod_volumes.get(id(pod))
        for position, pool in enumerate(self.context.pools):
            if position in shape.memo.rejected_pools:
                continue
            options = self.limits.options_within(pool)
            if not options:
                continue
            claim = NewNodeClaim(
                pool, options, self.daemon_groups[pool.template.nodepool], len(self.claims)
            )
            plan = claim.can_add(
                shape, self.env, relax_min_values=self.relax_min_values, pod_volumes=volumes
            )
            if isinstance(plan, Plan):
                self._open(claim)
                self._hold(claim, plan)
                claim.add(pod, shape, plan, self.env, volumes)
                self._reorder(claim)
                self.limits.reserve(pool, claim.options)
                return Outcome.PLACED
            if plan.kind == RejectionKind.RESERVED:
                # A reservation this pool could use is held: do not fall back to lower pools.
                return Outcome.WAIT_FOR_RESERVATION
            if is_permanent(plan):
                shape.memo.rejected_pools.add(position)
        return Outcome.FAILED

    def _reorder(self, claim: NewNodeClaim) -> None:
        """Re-rank a claim that gained a pod; close it once no pod of the round can fit.

        Its room is, per resource, what its largest remaining option has left. A claim is
        closed when some room is below the smallest request any pod of the round makes:
        no later pod can join it, so it no longer costs a look per pod.
        """
        order = self.claim_order
        index = self.context.index
        room = claim.room
        for resource in _ROOM_RESOURCES:
            room[resource] = index.max_allocatable(claim.options, resource) - claim.requests.get(
                resource, 0
            )
        for resource, smallest in self.smallest_requests.items():
            left = room.get(resource)
            if left is None:
                left = index.max_allocatable(claim.options, resource) - claim.requests.get(
                    resource, 0
                )
            if left < smallest:
                if claim.index in order:
                    order.remove(claim.index)
                return
        order.moved(claim.index, len(claim.pods), self._lane(claim))

    def _lane(self, claim: NewNodeClaim) -> Lane:
        """The claim's values for the keys topology decides by (see `ClaimOrder`)."""
        requirements = claim.requirements
        lane: list[frozenset[str] | None] = []
        for key in self.lane_keys:
            req = requirements.find(key)
            lane.append(None if req is None or req.complement else req.values)
        return tuple(lane)

    def _hold(self, claim: NewNodeClaim, plan: Plan) -> None:
        if self.reservations is not None and (plan.reservations or claim.reserved):
            self.reservations.hold(claim.hostname, plan.reservations)

    def _open(self, claim: NewNodeClaim) -> None:
        claim.position = self.topology.hosts.position(claim.hostname)
        self.claims.append(claim)
        self.by_host[claim.position] = claim

    # -- for explanations and finalisation -------------------------------------------------------
    def fresh_claim(self, pool: PoolCandidates) -> NewNodeClaim | Rejection:
        options = self.limits.options_within(pool)
        if not options:
            return Rejection(RejectionKind.LIMITS, self.limits.describe(pool))
        return NewNodeClaim(pool, options, self.daemon_groups[pool.template.nodepool], -1)


def _short_of(room: Mapping[str, int], requests: Mapping[str, int]) -> tuple[str, int] | None:
    """The resource (and room) a claim lacks for ``requests``, if any."""
    for resource in _ROOM_RESOURCES:
        left = room.get(resource)
        if left is not None and left < requests.get(resource, 0):
            return resource, left
    return None


def _never() -> bool:
    return False


def _ignored(problem: str) -> UnschedulableReason:
    return UnschedulableReason(message=f"ignored by karpenter: {problem}")
