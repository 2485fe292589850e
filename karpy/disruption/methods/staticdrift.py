"""Static drift (Karpenter's ``staticdrift.go``): a drifted node of a static NodePool
(``spec.replicas``) is replaced one for one by a NodeClaim made from the pool's template,
then deleted, within the pool's ``Drifted`` budget.

Static pools are not scheduled into, so there is no what-if: whatever ran on the old
node goes where kube-scheduler puts it. The replacement is made before the old node is
drained, so for a while the pool has one node more than ``replicas``; that is why a pool
still scaling down is left alone (the extra node would be deleted as surplus), and why a
replacement must fit under ``limits.nodes`` counting every NodeClaim the pool has
(`karpy.disruption.staticpools`). One node is started per pass, oldest drift first; the
controller runs the next pass a second later.

**Terminate first** (gate ``TerminateFirstDrift``, Karpenter's RFC core#3203). A pool at
its ``limits.nodes`` has no room for a replacement, so replacing first would stall its
drift for ever. Then the drifted node is deleted first (a delete-only command within the
``Drifted`` budget, drained as any other) and the static capacity controller makes the
replacement once the old NodeClaim is gone. karpy does this only while the pool is whole
(``replicas`` NodeClaims, every one initialized), so a pool is never more than one
replacement short, whatever the budget; Karpenter leaves that to the budget and PDBs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.candidates import is_marked
from karpy.disruption.conditions import DRIFTED
from karpy.disruption.methods.command import NOTHING, Command, ConsolidationType, Outcome
from karpy.disruption.methods.method import DisruptionClass
from karpy.disruption.staticpools import node_limit, static_count
from karpy.lifecycle.conditions import INITIALIZED, is_true

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.disruption.candidates import Candidate
    from karpy.disruption.simulation import WhatIf
    from karpy.state.snapshot import StateSnapshot

__all__ = ["StaticDrift", "static_drift_command", "static_replacement"]


def static_drift_command(
    candidates: Sequence[Candidate],
    budgets: dict[str, int],
    snapshot: StateSnapshot,
    *,
    terminate_first: bool = False,
) -> Outcome:
    """The first drifted static candidate (oldest drift first) whose pool's budget,
    replica count and node limit allow a replacement now; at the limit, with
    ``terminate_first``, its deletion alone (see the module docstring)."""

    def since(c: Candidate) -> tuple[str, str]:
        condition = c.claim.status.condition(DRIFTED)
        stamp = condition.last_transition_time if condition is not None else None
        return (stamp.isoformat() if stamp else "", c.name)

    for candidate in sorted(candidates, key=since):
        if budgets.get(candidate.nodepool, 0) <= 0:
            continue
        command = static_replacement(candidate, snapshot, DisruptionReason.DRIFTED,
                                     terminate_first=terminate_first)  # fmt: skip
        if command is not None:
            return Outcome(command)
    return NOTHING


def static_replacement(
    candidate: Candidate,
    snapshot: StateSnapshot,
    reason: DisruptionReason,
    *,
    terminate_first: bool = False,
) -> Command | None:
    """The command replacing a static pool's ``candidate`` one for one for ``reason``, if
    its pool's replica count and node limit allow it now (budgets aside): a replacement
    from the template, or at the limit, with ``terminate_first``, its deletion alone.
    Shared with node repair (`karpy.disruption.methods.repair`)."""
    pool = candidate.pool
    if pool.spec.replicas is None:
        return None
    count = static_count(snapshot, pool.name)
    if count.running + count.disrupting > pool.spec.replicas:
        return None  # still scaling down: the surplus goes first
    limit = node_limit(pool)
    if limit is not None and count.total + 1 > limit:
        if terminate_first and _whole(snapshot, pool.name, pool.spec.replicas):
            return Command(reason, ConsolidationType.DRIFT, (candidate,), terminate_first=True)
        return None
    return Command(reason, ConsolidationType.DRIFT, (candidate,),
                   template_replacements=(pool.name,))  # fmt: skip


def _whole(snapshot: StateSnapshot, pool: str, replicas: int) -> bool:
    """The pool has its ``replicas`` NodeClaims, none leaving, every one initialized."""
    claims = list(snapshot.nodeclaims_of(pool))
    return len(claims) == replicas and all(
        c.metadata.deletion_timestamp is None and not is_marked(c) and is_true(c, INITIALIZED)
        for c in claims
    )


class StaticDrift:
    reason = DisruptionReason.DRIFTED
    consolidation_type = ConsolidationType.DRIFT
    disruption_class = DisruptionClass.EVENTUAL
    simulates = False
    refusal_event = "DisruptionBlocked"

    def __init__(self, *, terminate_first: bool = False) -> None:
        self.terminate_first = terminate_first

    def should_disrupt(self, candidate: Candidate) -> bool:
        return candidate.pool.is_static and is_true(candidate.claim, DRIFTED)

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return True

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        return static_drift_command(candidates, budgets, what_if.snapshot,
                                    terminate_first=self.terminate_first)  # fmt: skip
