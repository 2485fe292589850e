"""Would the pods of these nodes fit elsewhere? One answer in karpy: the provisioner's
scheduler, run on the cluster as it would be without the candidates (Karpenter's
``SimulateScheduling``).

The round schedules the pending pods no provisioning round has placed yet, the
CapacityBuffer placeholders, the pods of nodes already being deleted, and the candidates'
reschedulable pods, against every other node and in-flight NodeClaim plus new capacity.
The candidates' pods must all find a place (pending pods and placeholders need not: they
are the provisioner's business; but room they take on the remaining nodes is not there
for the candidates' pods, and a placeholder that needs new capacity is in the NodeClaims
the move would need, so a move that takes a buffer's room away pays for it), and none may
count on
a node that is not initialized yet unless it came from a node already being deleted
(disruption must not act on capacity that may never arrive).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import CAPACITY_TYPE_SPOT, LABEL_HOSTNAME, LABEL_NODEPOOL
from karpy.base.gcpause import gc_paused
from karpy.disruption.conditions import under_consolidate_after
from karpy.disruption.prefilter import Prefilter
from karpy.rounds.contextcache import CompiledContext
from karpy.rounds.inputs import RoundInput, build_round_input
from karpy.scheduling.reschedule import reschedulable_pods
from karpy.scheduling.reservedslot import with_one_more_slot
from karpy.scheduling.solver import Scheduler

if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping, Sequence
    from datetime import datetime

    from karpy.disruption.balanced import PoolTotals
    from karpy.disruption.candidates import Candidate
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.results import NodeClaimPlan, Results
    from karpy.settings import Settings
    from karpy.state.snapshot import StateSnapshot

__all__ = ["Simulation", "WhatIf", "simulate"]


@attrs.frozen(slots=True)
class Simulation:
    results: Results
    failures: tuple[str, ...]  # why candidate pods would find no place ("ns/pod: reason")

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def new_nodeclaims(self) -> tuple[NodeClaimPlan, ...]:
        return self.results.new_nodeclaims


class WhatIf:
    """What-if rounds on one snapshot: the round's inputs without any candidate are
    built once, on the first call (the costly part at thousands of nodes; a pass that
    finds only empty nodes never pays for it), and each call marks its candidates
    deleted and adds their pods. `why_not` answers from the same inputs, in
    microseconds, when a single candidate cannot be consolidated at all
    (`karpy.disruption.prefilter`)."""

    def __init__(
        self,
        snapshot: StateSnapshot,
        compiled: CompiledContext,
        *,
        nominated: Mapping[str, str],
        settings: Settings,
        budget: float,
        emptying: Mapping[str, float] | None = None,
        pool_totals: Mapping[str, PoolTotals] | None = None,
        virtual: Sequence[Pod] = (),
        now: datetime | None = None,
    ) -> None:
        """``virtual``: the CapacityBuffer placeholders (`karpy.rounds.buffers`). ``now``:
        the time that decides which nodes are under their ``consolidateAfter`` and so no
        destination for the candidates' pods (None: every node is one)."""
        self.snapshot = snapshot
        self.now = now
        self._resting: frozenset[str] | None = None
        # Empty candidates emptiness will remove, with their prices: a consolidation
        # must not fill them when they cost more than it saves (`consolidate`).
        self.emptying: Mapping[str, float] = dict(emptying or {})
        # The Balanced pools' totals on this snapshot, which their moves are scored
        # against (`karpy.disruption.balanced`).
        self.pool_totals: Mapping[str, PoolTotals] = dict(pool_totals or {})
        self.compiled = compiled
        self.nominated = nominated
        self.settings = settings
        self.budget = budget
        self.virtual = tuple(virtual)
        self._base: RoundInput | None = None
        self._freed: dict[str, WhatIf] = {}
        self._prefilter: Prefilter | None = None
        self.budgets = [b.budget for b in snapshot.budgets.values()]
        self.cancel: threading.Event | None = None  # set: solves raise SolveCancelled

    def cancelled_by(self, cancel: threading.Event) -> WhatIf:
        """These what-ifs, their solves ending with `SolveCancelled` once ``cancel`` is set
        (`karpy.rounds.cancellable.solve_in_thread` sets it)."""
        self.cancel = cancel
        return self

    @property
    def base(self) -> RoundInput:
        if self._base is None:
            self._base = build_round_input(self.snapshot, self.compiled.types_by_name,
                                           nominated=self.nominated,
                                           virtual=self.virtual)  # fmt: skip
        return self._base

    def with_slot_freed(self, reservation: str) -> WhatIf:
        """These what-ifs with one more instance free in capacity reservation
        ``reservation``, as when a node of it is gone (`karpy.scheduling.reservedslot`):
        compiled on first use, once per reservation, and sharing the cluster's inputs."""
        found = self._freed.get(reservation)
        if found is None:
            context = with_one_more_slot(self.compiled.context, reservation)
            compiled = CompiledContext(context, {it.name: it for it in context.index.types},
                                       self.compiled.unusable)  # fmt: skip
            found = WhatIf(
                self.snapshot, compiled, nominated=self.nominated, settings=self.settings,
                budget=self.budget, emptying=self.emptying, pool_totals=self.pool_totals,
                virtual=self.virtual, now=self.now,
            )  # fmt: skip
            found._base, found._resting, found.cancel = self.base, self._resting, self.cancel
            self._freed[reservation] = found
        return found

    def why_not(self, candidate: Candidate, *, spot_to_spot: bool = True) -> str:
        """Why ``candidate`` alone can be neither deleted nor replaced, whatever the
        what-if would say; "" if it might be (then run the what-if). ``spot_to_spot``:
        the ``SpotToSpotConsolidation`` gate (on, the default, is the permissive answer)."""
        if candidate.price is None:
            return ""
        if self._prefilter is None:
            cluster = self.base.cluster
            self._prefilter = Prefilter(cluster.capacity, cluster.bound_pods,
                                        self.compiled.context)  # fmt: skip
        spot_replacement = spot_to_spot or candidate.capacity_type != CAPACITY_TYPE_SPOT
        return self._prefilter.why_not(candidate.name, candidate.price, self._own([candidate]),
                                       spot_replacement=spot_replacement)  # fmt: skip

    def _own(self, candidates: Sequence[Candidate]) -> tuple[Pod, ...]:
        """The candidates' pods that would move (the what-if schedules exactly these)."""
        pods = (info.pod for c in candidates for info in c.pods)
        return tuple(reschedulable_pods(pods, self.budgets))

    @property
    def resting(self) -> frozenset[str]:
        """Hostnames of the nodes under their pool's ``consolidateAfter`` (a pod came or
        went lately): Karpenter (v1.14, #3006) moves no candidate's pod onto them, so a
        node that has just emptied is not filled before emptiness may take it, and one
        that just took pods is not piled onto. Pending pods and pods of nodes already
        being deleted may still go there."""
        if self._resting is None:
            found: set[str] = set()
            if self.now is not None:
                snapshot = self.snapshot
                for claim in snapshot.nodeclaims.values():
                    node = snapshot.node_for_claim(claim.name)
                    if node is None:
                        continue
                    pool = snapshot.nodepools.get(claim.metadata.labels.get(LABEL_NODEPOOL, ""))
                    if under_consolidate_after(claim, pool, self.now):
                        found.add(node.node.labels.get(LABEL_HOSTNAME) or node.name)
            self._resting = frozenset(found)
        return self._resting

    def __call__(self, candidates: Sequence[Candidate]) -> Simulation:
        with gc_paused():
            return self._what_if(candidates)

    def without(self, candidates: Sequence[Candidate]) -> Simulation:
        """The round with ``candidates`` gone and their pods not in it: where the pods
        already waiting would go (`karpy.disruption.reservedfirst` asks whether they would
        take a freed slot)."""
        with gc_paused():
            return self._what_if(candidates, with_pods=False)

    def _what_if(self, candidates: Sequence[Candidate], *, with_pods: bool = True) -> Simulation:
        base = self.base
        names = {c.name for c in candidates}
        capacity = tuple(
            attrs.evolve(n, marked_for_deletion=True) if n.name in names else n
            for n in base.cluster.capacity
        )
        own = self._own(candidates) if with_pods else ()
        pods = (*base.pods, *own)
        settings = self.settings
        scheduler = Scheduler(
            self.compiled.context, attrs.evolve(base.cluster, capacity=capacity),
            preference_policy=settings.preference_policy,
            reserved_capacity=settings.feature_gates.reserved_capacity, reserved_fallback=True,
            resting_nodes=self.resting, moving_pods=frozenset(p.key for p in own),
        )  # fmt: skip
        results = scheduler.solve(pods, budget=self.budget, cancel=self.cancel)
        moving = {p.key for p in pods[base.staying :]}  # candidates' and deleting nodes'
        own_keys = {p.key for p in own}
        failures = [f"{u.pod.key}: {u.render()}" for u in results.unschedulable
                    if u.pod.key in moving]  # fmt: skip
        failures += [f"{p.key}: not tried before the time bound" for p in results.deferred
                     if p.key in moving]  # fmt: skip
        initialized = {n.name for n in capacity if n.initialized}
        for placement in results.existing_nodes:
            if placement.name in initialized:
                continue
            failures += [
                f"{p.key}: would rely on node {placement.name}, which is not initialized yet"
                for p in placement.pods
                if p.key in own_keys
            ]
        return Simulation(results, tuple(failures))


def simulate(
    snapshot: StateSnapshot,
    compiled: CompiledContext,
    candidates: Sequence[Candidate],
    *,
    nominated: Mapping[str, str],
    settings: Settings,
    budget: float,
    now: datetime | None = None,
) -> Simulation:
    """One what-if round (see `WhatIf`, for several on one snapshot)."""
    what_if = WhatIf(snapshot, compiled, nominated=nominated, settings=settings,
                     budget=budget, now=now)  # fmt: skip
    return what_if(candidates)
