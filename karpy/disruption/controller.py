"""`Disruption`: every 10 seconds (and at once after acting, or when a NodeClaim turns
Consolidatable or Drifted, unless a pass found nothing less than 10 seconds ago), decide
whether to disrupt something, and start doing it (Karpenter's ``disruption`` singleton;
here a `karpy.reconcile.SingletonReconciler`: the periodic resync queues a pass every
POLL seconds, a NodeClaim turning Consolidatable or Drifted queues one at once, and a
pass asks for the next with ``requeue_after``).

A pass takes a fresh snapshot, finds the candidates (`karpy.disruption.candidates`),
and tries the methods in order (`karpy.disruption.methods`): node repair (gate
``NodeRepair``, unless ``LEGACY_NODE_REPAIR``), emptiness, drift, multi-node
consolidation, single-node consolidation. Each gets the candidates it takes
and its budgets (consolidation also the totals its ``Balanced`` pools score moves
against, `karpy.disruption.balanced`), and the first that yields a command wins the
pass. Empty-node and consolidation commands are then *validated*: a later pass,
``validation_delay`` (15 s, Karpenter's) on, recomputes the candidates, budgets and, for
consolidation, the simulation on a new snapshot, and abandons the command unless it
still holds (pods may have arrived, budgets may have closed). No pass sleeps, so a stop
or a lost lease never waits on a decision, and a pass cancelled during its what-if solves
stops their worker thread too (`karpy.rounds.cancellable.solve_in_thread`).

Starting a command writes it to the API: each candidate NodeClaim gets the
``DisruptionReason`` condition and the names of its replacements, then the replacement
NodeClaims are created. `karpy.disruption.orchestration.DisruptionQueue` carries it
out from there, so the decision survives a restart.

Emptiness and consolidation (multi- and single-node) wait while capacity is arriving:
NodeClaims not yet initialized, pods nominated and not bound (`karpy.disruption.settling`;
five minutes at most in one stretch). Drift and repair do not wait, and neither is
validated: like drift, a repair command starts at once.

Nothing is cached across passes except two shortcuts: a pass on the very inputs of one
that found nothing less than a minute ago is skipped, and consolidation remembers when
it found nothing (`karpy.disruption.methods.consolidation.Consolidated`).
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import attrs

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.balanced import balanced_pools, pool_totals
from karpy.disruption.budgets import BudgetVerdict, budget_verdicts
from karpy.disruption.candidates import find_candidates
from karpy.disruption.conditions import CONSOLIDATABLE, DRIFTED
from karpy.disruption.events import UNCONSOLIDATABLE_DEDUPE, node_and_claim_events
from karpy.disruption.methods.command import Command, ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import (
    CONSOLIDATION_INPUTS,
    consolidate,
    emptying_nodes,
)
from karpy.disruption.methods.method import DisruptionClass
from karpy.disruption.methods.ordered import methods_in_order
from karpy.disruption.moves import record_judgements
from karpy.disruption.settling import Settling
from karpy.disruption.simulation import WhatIf
from karpy.disruption.start import CommandStart
from karpy.disruption.unhealthy import diagnose
from karpy.lifecycle.conditions import (
    is_true,
)
from karpy.log import get_logger
from karpy.reconcile import DONE, Result, requeue_after
from karpy.rounds.cancellable import solve_in_thread
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from datetime import datetime

    from karpy.base.clock import Clock
    from karpy.cloud.provider import RepairPolicy
    from karpy.disruption.balanced import PoolTotals
    from karpy.disruption.candidates import Blocked, Candidate
    from karpy.disruption.methods.method import Method
    from karpy.kube.client import KubeClient
    from karpy.kube.events import Event, EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.rounds.buffers import BufferPods
    from karpy.rounds.contextcache import CompiledContext, ContextCache
    from karpy.scheduling.pods import Pod
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["Disruption"]

log = get_logger("disruption")

POLL: Final = 10.0  # seconds between passes (Karpenter's)
VALIDATION_DELAY: Final = 15.0  # seconds (Karpenter's commandValidationDelay)
# Seconds a pass that found nothing stands for later passes on the very same inputs (at
# 10,000 nodes finding the candidates every 10 s was most of an idle controller's CPU).
QUIET_RECHECK: Final = 60.0
SIMULATION_BUDGET: Final = 30.0  # seconds one what-if round may take


class Disruption:
    name = "disruption"
    # It polls (POLL) and requeues itself after acting; a NodeClaim turning Consolidatable
    # or Drifted starts a pass at once.
    watches = frozenset({kinds.NODECLAIM})

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        recorder: EventRecorder,
        settings: Settings,
        *,
        contexts: ContextCache,
        nominations: Callable[[StateSnapshot], Mapping[str, str]],
        clock: Clock,
        metrics: KarpenterMetrics | None = None,
        validation_delay: float = VALIDATION_DELAY,
        methods: Sequence[Method] | None = None,
        buffers: BufferPods | None = None,
        repair_policies: Sequence[RepairPolicy] | None = None,
    ) -> None:
        """``buffers``: the CapacityBuffer placeholders (with the gate on), which every
        what-if schedules and whose room is no empty node. ``repair_policies``: the cloud
        provider's, when node repair is a method (gate ``NodeRepair`` on,
        ``LEGACY_NODE_REPAIR`` off); None otherwise."""
        self.state = state
        self.buffers = buffers
        self.client = client
        self.recorder = recorder
        self.settings = settings
        # karpy writes pod-deletion-cost itself, so it is no user's word (`eviction_cost`)
        self.deletion_cost_managed = settings.feature_gates.pod_deletion_cost_management
        self.contexts = contexts
        self.nominations = nominations
        self.clock = clock
        self.metrics = metrics
        self.validation_delay = validation_delay
        # tried in this order (`karpy.disruption.methods.ordered`)
        gates = settings.feature_gates
        self.methods = tuple(methods) if methods is not None else methods_in_order(
            clock=clock, spot_to_spot=gates.spot_to_spot_consolidation,
            terminate_first_drift=gates.terminate_first_drift,
            repair_policies=repair_policies,
            terminate_first_repair=gates.terminate_first_repair,
        )  # fmt: skip
        self.repair_policies = tuple(repair_policies or ())
        self.settling = Settling(clock)
        self._quiet_at: float | None = None  # when the last pass found nothing to do
        # the inputs of the last full pass that found nothing to do, and when
        self._quiet_inputs: tuple[tuple[object, ...], float] | None = None
        self._held_back = False  # the last pass left emptiness and consolidation for later
        # when a node's repair toleration runs out next (monotonic), as of the last pass
        self._repair_due: float | None = None
        self._pending: tuple[Command, float] | None = None  # awaiting validation, and when

    def wants(self, change: StateChange[Any]) -> bool:
        new, old = change.new, change.old
        if new is None:
            return False
        return any(
            is_true(new, type_) and (old is None or not is_true(old, type_))
            for type_ in (CONSOLIDATABLE, DRIFTED)
        )

    def due(self, snapshot: StateSnapshot) -> bool:
        return True  # every resync (POLL) is a pass

    # --- one pass ------------------------------------------------------------------------

    async def reconcile(self) -> Result:
        if not self.state.synced():
            return requeue_after(1.0)
        if self._pending is not None:
            waiting, due = self._pending
            left = due - self.clock.monotonic()
            if left > 0:
                return requeue_after(left)
            self._pending = None
            validated = await self._validate(waiting)
            if validated is not None:
                snapshot = self.state.snapshot()
                await self._start(validated, await self.contexts.get(snapshot))
            return requeue_after(1.0 if validated is not None else 0)
        if self._quiet_at is not None:
            # A pass that found nothing is followed by the next at most every POLL
            # seconds, however many NodeClaims turn Consolidatable meanwhile: during a
            # scale-up thousands do, and each pass walks every node on the event loop.
            left = self._quiet_at + POLL - self.clock.monotonic()
            if left > 0:
                return requeue_after(left)
        snapshot = self.state.snapshot()
        compiled = await self.contexts.get(snapshot)
        nominated = self.nominations(snapshot)
        hosting = self.buffers.hosting if self.buffers is not None else frozenset()
        inputs = (*(snapshot.of(kind) for kind in CONSOLIDATION_INPUTS), compiled,
                  frozenset(nominated.values()), self._placeholders(), hosting)  # fmt: skip
        if self._unchanged_since_quiet(inputs):
            self._quiet_at = self.clock.monotonic()
            return DONE
        command = await self._decide(snapshot, compiled, nominated)
        if command is None:
            self._quiet_at = self.clock.monotonic()
            self._repair_due = self._next_repair(snapshot)
            if not self._held_back:  # a pass that held back decided nothing for good
                self._quiet_inputs = (inputs, self._quiet_at)
            return DONE
        self._quiet_at = None
        if command.consolidation_type is ConsolidationType.DRIFT:
            await self._start(command, compiled)
            return requeue_after(1.0)
        # Validate after a delay, in a later reconcile: a pass never sleeps, so stopping
        # (or losing the lease) is never held up by a decision in waiting.
        self._pending = (command, self.clock.monotonic() + self.validation_delay)
        return requeue_after(self.validation_delay)

    def _unchanged_since_quiet(self, inputs: tuple[object, ...]) -> bool:
        """Did a full pass find nothing less than QUIET_RECHECK seconds ago, on these very
        inputs? Then this pass would find nothing too (only time-driven budget windows
        could differ, and those are looked at again within the minute)."""
        if self._quiet_inputs is None:
            return False
        seen, at = self._quiet_inputs
        now = self.clock.monotonic()
        if now - at >= QUIET_RECHECK:
            return False
        if self._repair_due is not None and now >= self._repair_due:
            return False  # a node became repairable since: time, not the inputs, changed
        return all(
            a is b or (isinstance(a, frozenset) and a == b)
            for a, b in zip(seen, inputs, strict=True)
        )

    def _next_repair(self, snapshot: StateSnapshot) -> float | None:
        """When (monotonic) the soonest unhealthy condition of a managed node outlasts its
        policy's toleration, if any is counting down: the quiet shortcut must not hide
        that moment, which no informer event marks."""
        if not self.repair_policies:
            return None
        now = self.clock.now()
        soonest: float | None = None
        for claim in snapshot.nodeclaims.values():
            node = snapshot.node_for_claim(claim.name)
            if node is None:
                continue
            left = diagnose(node, self.repair_policies, now).next_in
            if left is not None and (soonest is None or left < soonest):
                soonest = left
        return None if soonest is None else self.clock.monotonic() + soonest

    async def _decide(
        self, snapshot: StateSnapshot, compiled: CompiledContext, nominated: Mapping[str, str]
    ) -> Command | None:
        now = self.clock.now()
        # The survey reads only the snapshot and what is handed to it, so it runs on a
        # worker thread: at 11,000 nodes it took up to 2 s, a stall of the event loop.
        hosting = self.buffers.hosting if self.buffers is not None else frozenset()
        survey = await asyncio.to_thread(
            self._survey, snapshot, compiled, nominated=nominated, now=now,
            placeholders=self._placeholders(), hosting=hosting,
        )  # fmt: skip
        candidates, blocked, empty, what_if, blocked_events = survey
        self._report_blocked(blocked, blocked_events)
        # Graceful methods wait while capacity is arriving (see `Settling`).
        arriving = self.settling.wait_reason(snapshot, nominated)
        self._held_back = bool(arriving)
        # Eventual methods also take nodes blocked only by their pods when a
        # terminationGracePeriod bounds the drain.
        eventual = candidates + [b.eventual for b in blocked if b.eventual is not None]
        # Node repair also takes unhealthy nodes blocked only by what it ignores.
        repairable = candidates + [b.repairable for b in blocked if b.repairable is not None]
        pools = {DisruptionClass.GRACEFUL: candidates, DisruptionClass.EVENTUAL: eventual,
                 DisruptionClass.REPAIR: repairable}  # fmt: skip
        budgets: dict[DisruptionReason, dict[str, int]] = {}  # per reason, once a pass
        for method in self.methods:
            graceful = method.disruption_class is DisruptionClass.GRACEFUL
            if graceful and arriving:
                eligible: list[Candidate] = []
            else:
                eligible = [c for c in pools[method.disruption_class]
                            if method.should_disrupt(c)]  # fmt: skip
            if self.metrics is not None:
                self.metrics.disruption_eligible_nodes.labels(str(method.reason)).set(len(eligible))
            if not eligible:
                continue
            if method.reason not in budgets:
                known = empty if method.reason is DisruptionReason.EMPTY else None
                if known is None:  # a walk over every NodeClaim: off the loop
                    known = await asyncio.to_thread(budget_verdicts, snapshot, method.reason, now)
                budgets[method.reason] = self._budgets(snapshot, method.reason, now, known)
            allowed = budgets[method.reason]
            if not method.should_run(what_if, allowed):
                continue
            outcome = await self._compute(method, eligible, dict(allowed), what_if)
            self._report_unconsolidatable(outcome, method.refusal_event)
            record_judgements(outcome.judged, self.recorder, self.metrics)
            if outcome.command is not None:
                return outcome.command
        return None

    def _survey(
        self,
        snapshot: StateSnapshot,
        compiled: CompiledContext,
        *,
        nominated: Mapping[str, str],
        now: datetime,
        placeholders: tuple[Pod, ...],
        hosting: frozenset[str],
    ) -> Survey:
        """A pass's candidates, what blocks the others (with the Events that say so),
        emptiness's budget verdicts and the what-if rounds' set-up. Runs on a worker
        thread: it must read nothing the event loop changes."""
        policies = self.repair_policies
        unhealthy = (lambda node: diagnose(node, policies, now).unhealthy) if policies else None
        candidates, blocked = find_candidates(
            snapshot, now=now, nominated=set(nominated.values()),
            types_by_name=compiled.types_by_name,
            deletion_cost_managed=self.deletion_cost_managed,
            unhealthy=unhealthy)  # fmt: skip
        candidates = _with_buffer_room(candidates, hosting)
        balanced = balanced_pools(candidates)
        # Empty's verdicts serve twice: which empty nodes are about to go, and emptiness's budget.
        empty = budget_verdicts(snapshot, DisruptionReason.EMPTY, now)
        totals = pool_totals(snapshot, candidates, compiled.types_by_name, balanced,
                             deletion_cost_managed=self.deletion_cost_managed)  # fmt: skip
        what_if = self._what_if(snapshot, compiled, nominated=nominated, now=now,
                                emptying=emptying_nodes(candidates, _allowed(empty)),
                                placeholders=placeholders, totals=totals)  # fmt: skip
        return Survey(candidates, blocked, empty, what_if, _blocked_events(snapshot, blocked))

    def _what_if(
        self,
        snapshot: StateSnapshot,
        compiled: CompiledContext,
        *,
        nominated: Mapping[str, str],
        now: datetime,
        emptying: Mapping[str, float],
        placeholders: Sequence[Pod],
        totals: Mapping[str, PoolTotals] | None = None,
    ) -> WhatIf:
        """The what-if rounds of a pass or of a validation, on ``snapshot``."""
        return WhatIf(snapshot, compiled, nominated=nominated, settings=self.settings,
                      budget=SIMULATION_BUDGET, emptying=emptying, pool_totals=totals,
                      virtual=placeholders, now=now)  # fmt: skip

    async def _compute(
        self,
        method: Method,
        eligible: Sequence[Candidate],
        budgets: dict[str, int],
        what_if: WhatIf,
    ) -> Outcome:
        """``method``'s outcome, in a worker thread when it runs what-ifs (a cancelled
        pass stops them), timed."""
        if not method.simulates:
            return self._timed(method, lambda: method.compute_command(eligible, budgets, what_if))
        return await solve_in_thread(lambda cancel: self._timed(method, lambda: (
            method.compute_command(eligible, budgets, what_if.cancelled_by(cancel)))))  # fmt: skip

    def _timed(self, method: Method, compute: Callable[[], Outcome]) -> Outcome:
        started = time.perf_counter()
        outcome = compute()
        if self.metrics is not None:
            self.metrics.disruption_evaluation_duration.labels(
                str(method.reason), str(method.consolidation_type)
            ).observe(time.perf_counter() - started)
            if outcome.timed_out:
                kind = str(method.consolidation_type)
                self.metrics.disruption_consolidation_timeouts.labels(kind).inc()
        if outcome.timed_out:
            log.info("consolidation search stopped at its time bound",
                     method=str(method.consolidation_type),
                     unconsolidatable=len(outcome.unconsolidatable))  # fmt: skip
        return outcome

    # --- budgets ---------------------------------------------------------------------------

    def _budgets(
        self,
        snapshot: StateSnapshot,
        reason: DisruptionReason,
        now: datetime,
        known: dict[str, BudgetVerdict] | None = None,
    ) -> dict[str, int]:
        """Per NodePool, how many nodes may start being disrupted for ``reason`` now
        (``known``: the verdicts, when already computed)."""
        verdicts = self.verdicts(snapshot, reason, now, known)
        return {name: v.remaining for name, v in verdicts.items()}

    def verdicts(
        self,
        snapshot: StateSnapshot,
        reason: DisruptionReason,
        now: datetime,
        known: dict[str, BudgetVerdict] | None = None,
    ) -> dict[str, BudgetVerdict]:
        verdicts = known if known is not None else budget_verdicts(snapshot, reason, now)
        for name, verdict in verdicts.items():
            if self.metrics is not None:
                self.metrics.nodepools_allowed_disruptions.labels(name, str(reason)).set(
                    verdict.allowed
                )
                self.metrics.nodepools_nodes_consuming_budgets.labels(name, str(reason)).set(
                    verdict.disrupting
                )
        return verdicts

    # --- CapacityBuffers -------------------------------------------------------------------

    def _placeholders(self) -> tuple[Pod, ...]:
        return self.buffers.pods() if self.buffers is not None else ()

    def _buffer_room(self, candidates: list[Candidate]) -> list[Candidate]:
        hosting = self.buffers.hosting if self.buffers is not None else frozenset()
        return _with_buffer_room(candidates, hosting)

    # --- validation ----------------------------------------------------------------------------

    async def _validate(self, command: Command) -> Command | None:
        """The command if it still holds now (after the validation delay), else None."""
        snapshot = self.state.snapshot()
        compiled = await self.contexts.get(snapshot)
        now = self.clock.now()
        nominated = self.nominations(snapshot)
        fresh, _ = await asyncio.to_thread(
            find_candidates, snapshot, now=now, nominated=set(nominated.values()),
            types_by_name=compiled.types_by_name,
            deletion_cost_managed=self.deletion_cost_managed)  # fmt: skip
        fresh = self._buffer_room(fresh)
        by_name = {c.name: c for c in fresh}
        chosen = [by_name.get(c.name) for c in command.candidates]
        verdicts = await asyncio.to_thread(budget_verdicts, snapshot, command.reason, now)
        budgets = self._budgets(snapshot, command.reason, now, verdicts)
        problem = ""
        if command.reason is DisruptionReason.EMPTY:
            command, problem = self._still_empty(command, chosen, budgets)
        elif any(c is None for c in chosen):
            problem = "a candidate is no longer a candidate"
        else:
            for pool in {c.nodepool for c in command.candidates}:
                wanted = sum(1 for c in command.candidates if c.nodepool == pool)
                if budgets.get(pool, 0) < wanted:
                    problem = f'nodepool "{pool}" budget no longer allows {wanted} disruption(s)'
        if not problem and command.reason is DisruptionReason.UNDERUTILIZED:
            still = [c for c in chosen if c is not None]
            empty = await asyncio.to_thread(budget_verdicts, snapshot, DisruptionReason.EMPTY, now)
            what_if = self._what_if(snapshot, compiled, nominated=nominated, now=now,
                                    emptying=emptying_nodes(fresh, _allowed(empty)),
                                    placeholders=self._placeholders())  # fmt: skip
            spot_to_spot = self.settings.feature_gates.spot_to_spot_consolidation
            again, why = await solve_in_thread(lambda cancel: consolidate(
                still, what_if.cancelled_by(cancel), spot_to_spot=spot_to_spot,
                consolidation_type=command.consolidation_type, emptying=what_if.emptying,
            ))  # fmt: skip
            if again is None:
                problem = f"consolidation no longer possible: {why}"
            elif len(again.replacements) > len(command.replacements):
                problem = "the pods now need more new capacity than decided"
            else:
                command = again
        if problem:
            log.info("abandoning disruption: it no longer holds", command=command.describe(),
                     why=problem)  # fmt: skip
            if self.metrics is not None:
                self.metrics.disruption_failed_validations.labels(
                    str(command.consolidation_type)
                ).inc()
            return None
        return command

    def _still_empty(
        self, command: Command, chosen: list[Candidate | None], budgets: dict[str, int]
    ) -> tuple[Command, str]:
        """An emptiness command as Karpenter validates it: the candidates that are still
        candidates, still empty and within their NodePool's budget (counted in the
        command's order) go ahead, and only a command left with none is abandoned. One
        node that took a pod in the 15 s does not send the other 900 back to the start:
        at 11,000 nodes the whole command was dropped and decided again, at a core's
        full use, four times in a row."""
        room = dict(budgets)
        kept: list[Candidate] = []
        for candidate in chosen:
            if candidate is None or not candidate.empty or room.get(candidate.nodepool, 0) < 1:
                continue
            room[candidate.nodepool] -= 1
            kept.append(candidate)
        if not kept:
            return command, (f"none of its {len(chosen)} candidates is still an empty "
                             "candidate within its budget")  # fmt: skip
        dropped = len(chosen) - len(kept)
        if dropped:
            log.info("disrupting fewer nodes than decided", command=command.describe(),
                     dropped=dropped, kept=len(kept))  # fmt: skip
            if self.metrics is not None:
                self.metrics.disruption_failed_validations.labels(
                    str(command.consolidation_type)
                ).inc(dropped)
        return attrs.evolve(command, candidates=tuple(kept)), ""

    # --- starting a command -------------------------------------------------------------------

    async def _start(self, command: Command, compiled: CompiledContext) -> None:
        starter = CommandStart(self.state, self.client, self.recorder, clock=self.clock,
                               metrics=self.metrics)  # fmt: skip
        await starter.start(command, compiled)

    # --- events ----------------------------------------------------------------------------

    def _report_blocked(self, blocked: Sequence[Blocked], events: Sequence[Event]) -> None:
        if self.metrics is not None:
            counts = Counter((item.nodepool, str(item.by)) for item in blocked)
            gauge = self.metrics.disruption_blocked_nodes
            gauge.clear()  # a pool or reason no longer blocking anything goes to no series
            for (pool, by), count in counts.items():
                gauge.labels(pool, by).set(count)
        for event in events:
            self.recorder.publish(event)

    def _report_unconsolidatable(self, outcome: Outcome, reason: str) -> None:
        if not reason:
            return
        for candidate, why in outcome.unconsolidatable:
            if not why:
                continue
            for event in node_and_claim_events(candidate.name, candidate.claim, reason, why,
                                               dedupe_timeout=UNCONSOLIDATABLE_DEDUPE):  # fmt: skip
                self.recorder.publish(event)


def _allowed(verdicts: Mapping[str, BudgetVerdict]) -> dict[str, int]:
    """Per NodePool, how many nodes its budgets allow, in-flight disruptions aside (for
    ``Empty``: 0 means its empty nodes stay, `emptying_nodes`)."""
    return {name: verdict.allowed for name, verdict in verdicts.items()}


class Survey(NamedTuple):
    """What `Disruption._survey` found for a pass."""

    candidates: list[Candidate]
    blocked: list[Blocked]
    empty: dict[str, BudgetVerdict]
    what_if: WhatIf
    blocked_events: list[Event]


def _with_buffer_room(candidates: list[Candidate], hosting: frozenset[str]) -> list[Candidate]:
    """``candidates``, those the last provisioning round kept buffer room on (``hosting``)
    marked, so emptiness leaves them (Karpenter's ``HasBufferPods``)."""
    if not hosting:
        return candidates
    return [attrs.evolve(c, holds_buffer=True) if c.name in hosting else c
            for c in candidates]  # fmt: skip


def _blocked_events(snapshot: StateSnapshot, blocked: Sequence[Blocked]) -> list[Event]:
    """The DisruptionBlocked Events for the Nodes and NodeClaims ``blocked`` names (none
    for the states every node passes through)."""
    events: list[Event] = []
    for item in blocked:
        if item.by.passing:
            continue
        claim = snapshot.nodeclaims.get(item.claim or "")
        node = item.name if item.name in snapshot.nodes else None
        events.extend(node_and_claim_events(node, claim, "DisruptionBlocked",
                                            f"Cannot disrupt Node: {item.reason}"))  # fmt: skip
    return events
