"""Starting a disruption command: what happens once a pass has decided.

The candidates are marked first: each NodeClaim gets its replacements' names
(``disruption.karpy.dev/replacements``, with any annotation the command carries, such as
node repair's drain bound) and then the ``DisruptionReason`` condition, with the
resourceVersion the first write returned, so a NodeClaim is never marked without them and
a NodeClaim changed since the decision is left alone. Only when at least one is marked are
the replacements created (ahead of other writes: they gate the drain), the decision
counted and the Events written. The orchestration queue (`karpy.disruption.orchestration`)
takes it from there: it waits for the replacements and deletes the marked NodeClaims.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.conditions import ConditionUpdate
from karpy.apis.disruption import DisruptionReason
from karpy.apis.labels import ANNOTATION_REPLACEMENTS
from karpy.apis.nodeclaim import NodeClaim
from karpy.disruption.events import node_and_claim_events
from karpy.kube.client import priority
from karpy.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle.conditions import DISRUPTION_REASON, conditions_of, patch_status
from karpy.log import describe_error, get_logger, obj_ref
from karpy.rounds.nodeclaims import nodeclaim_for, random_suffix, template_nodeclaim_for

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.disruption.methods.command import Command
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.rounds.contextcache import CompiledContext
    from karpy.scheduling.results import NodeClaimPlan
    from karpy.state.cluster import ClusterState
    from karpy.state.snapshot import StateSnapshot

__all__ = ["CommandStart"]

log = get_logger("disruption")


class CommandStart:
    """Carries out one decided command (see the module docstring)."""

    def __init__(
        self,
        state: ClusterState,
        client: KubeClient,
        recorder: EventRecorder,
        *,
        clock: Clock,
        metrics: KarpenterMetrics | None = None,
    ) -> None:
        self.state = state
        self.client = client
        self.recorder = recorder
        self.clock = clock
        self.metrics = metrics

    async def start(self, command: Command, compiled: CompiledContext) -> None:
        """Mark the candidates (replacement names, then the condition), create the
        replacements, count the decision and tell the nodes; nothing when no candidate
        could be marked (they changed since the decision)."""
        snapshot = self.state.snapshot()
        from_plans = [f"{plan.nodepool}-{random_suffix()}" for plan in command.replacements]
        from_templates = [f"{pool}-{random_suffix()}" for pool in command.template_replacements]
        names = from_plans + from_templates
        now = self.clock.now()
        reason = str(command.reason)
        via = str(command.consolidation_type) or (
            "repair" if command.reason is DisruptionReason.UNHEALTHY else "drift"
        )
        log.info("disrupting via " + via,
                 decision=str(command.decision), reason=reason,
                 command=command.describe(), replacements=names)  # fmt: skip
        marked = []
        for candidate in command.candidates:
            claim = snapshot.nodeclaims.get(candidate.claim.name)
            if claim is None or claim.metadata.deletion_timestamp is not None:
                continue
            marking = ConditionUpdate.true(DISRUPTION_REASON, reason, command.describe())
            conditions = conditions_of(claim).apply(marking, now=now).conditions
            # The replacements' names first, then the condition (with the resourceVersion
            # the first write returned): a NodeClaim is never marked without them.
            annotate = {
                "metadata": {
                    "resourceVersion": claim.metadata.resource_version,
                    "annotations": {
                        ANNOTATION_REPLACEMENTS: ",".join(names),
                        **dict(command.annotations),
                    },
                }
            }
            try:
                annotated = NodeClaim.from_dict(
                    await self.client.patch(NODECLAIMS, claim.name, annotate)
                )
                written = await patch_status(self.client, annotated, conditions=conditions)
            except (Conflict, NotFound) as exc:
                log.info("could not mark nodeclaim for disruption",
                         **obj_ref("NodeClaim", claim.name), error=describe_error(exc))  # fmt: skip
                continue
            marked.append((candidate, written))
        if not marked:
            return
        for name, plan in zip(from_plans, command.replacements, strict=True):
            await self._create_replacement(name, plan, snapshot, compiled, reason)
        for name, pool in zip(from_templates, command.template_replacements, strict=True):
            await self._create_template_replacement(name, pool, snapshot, compiled, reason)
        if self.metrics is not None:
            self.metrics.disruption_decisions.labels(
                str(command.decision), reason, str(command.consolidation_type)
            ).inc()
        if names:
            event_reason, message = "DisruptionLaunching", f"Launching NodeClaim: {reason}"
        elif command.reboot:
            event_reason, message = "DisruptionRebooting", f"Draining Node to reboot: {reason}"
        else:
            event_reason, message = "DisruptionTerminating", f"Disrupting Node: {reason}"
            if command.terminate_first and command.full_reservation:
                message += " (terminated before its replacement: reserved capacity is full)"
            elif command.terminate_first:
                message += " (before its replacement: the pool has no room to make it first)"
        for candidate, _ in marked:
            for event in node_and_claim_events(candidate.name, candidate.claim, event_reason,
                                               message):  # fmt: skip
                self.recorder.publish(event)

    async def _create_nodeclaim(self, name: str, body: dict[str, Any]) -> bool:
        """Create a replacement NodeClaim ahead of other writes; whether this call made
        it (one already there, or an API error, which is logged: no)."""
        try:
            with priority(10):
                await self.client.create(NODECLAIMS, body)
        except AlreadyExists:
            return False
        except KubeError as exc:
            log.error("could not create replacement nodeclaim", **obj_ref("NodeClaim", name),
                      error=describe_error(exc))  # fmt: skip
            return False
        return True

    async def _create_replacement(
        self,
        name: str,
        plan: NodeClaimPlan,
        snapshot: StateSnapshot,
        compiled: CompiledContext,
        reason: str,
    ) -> None:
        nodepool = snapshot.nodepools.get(plan.nodepool)
        template = compiled.context.templates.get(plan.nodepool)
        if nodepool is None or template is None:
            return
        body = nodeclaim_for(plan, nodepool, template, name=name,
                             well_known=compiled.context.well_known_labels)  # fmt: skip
        if not await self._create_nodeclaim(name, body):
            return
        shown = ", ".join(it.name for it, _ in plan.instance_type_options()[:5])
        log.info("created replacement nodeclaim", **obj_ref("NodeClaim", name),
                 **obj_ref("NodePool", plan.nodepool), reason=reason,
                 instanceTypes=shown)  # fmt: skip
        if self.metrics is not None:
            relaxed = "true" if plan.min_values_relaxed else "false"
            self.metrics.nodeclaims_created.labels(reason.lower(), plan.nodepool, relaxed).inc()

    async def _create_template_replacement(
        self, name: str, pool: str, snapshot: StateSnapshot, compiled: CompiledContext,
        reason: str,
    ) -> None:  # fmt: skip
        """A static pool's replacement: its template's NodeClaim (`StaticDrift`)."""
        nodepool = snapshot.nodepools.get(pool)
        if nodepool is None:
            return
        body = template_nodeclaim_for(nodepool, name=name,
                                      well_known=compiled.context.well_known_labels)  # fmt: skip
        if not await self._create_nodeclaim(name, body):
            return
        log.info("created replacement nodeclaim", **obj_ref("NodeClaim", name),
                 **obj_ref("NodePool", pool), reason=reason)  # fmt: skip
        if self.metrics is not None:
            self.metrics.nodeclaims_created.labels(reason.lower(), pool, "false").inc()
