"""Disruption budgets: how many of a NodePool's nodes may be disrupted at once, and why.

A NodePool's ``spec.disruption.budgets`` each cap concurrent voluntary disruptions
(Karpenter's semantics):

* ``nodes`` is a count or a percentage of the pool's nodes, rounded **up** (like a PDB's
  ``maxUnavailable``: 5% of 10 nodes allows 1);
* a budget with ``schedule`` (cron, UTC) and ``duration`` is active only from each cron
  hit for ``duration``; one without is always active;
* ``reasons`` (Empty, Underutilized, Drifted) limit a budget to those reasons; none
  means every reason;
* the most restrictive active budget that applies wins; with none active a pool is not
  limited;
* nodes already being disrupted (deleting, tainted for disruption, or not Ready) use up
  the budget: what is allowed now is the budget minus those, never below zero.

The pool's node count is its managed, initialized nodes whose instance is not already
terminating (Karpenter's count: an uninitialized replacement does not widen a percent).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

import attrs
from croniter import croniter

from karpy.apis.disruption import DisruptionReason
from karpy.apis.labels import LABEL_NODEPOOL
from karpy.disruption.candidates import is_disrupting, is_marked
from karpy.lifecycle.conditions import INITIALIZED, is_true

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.nodepool import Budget, NodePool
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "UNLIMITED",
    "BudgetVerdict",
    "allowed_by_budgets",
    "budget_is_active",
    "budget_verdicts",
    "scaled_nodes",
]

UNLIMITED: Final = 2**31 - 1  # Karpenter's MaxInt32: no active budget applies
_PERCENT = re.compile(r"^(100|[0-9]{1,2})%$")


def scaled_nodes(nodes: str, total: int) -> int:
    """A budget's ``nodes`` against ``total`` nodes: a count as is, a percentage of the
    total rounded up."""
    match = _PERCENT.match(nodes)
    if match is None:
        return int(nodes)
    return math.ceil(total * int(match.group(1)) / 100)


def budget_is_active(budget: Budget, now: datetime) -> bool:
    """Is ``budget`` in force at ``now``? Always, without a schedule; else when the first
    cron hit after ``now - duration`` is not after ``now`` (cron in UTC)."""
    if budget.schedule is None:
        return True
    now = now.astimezone(UTC)
    duration = budget.duration or timedelta(0)
    start = now - duration
    # croniter's get_next is strictly after its start; Karpenter's Next is too.
    hit: datetime = croniter(budget.schedule, start).get_next(datetime)
    return hit <= now


@attrs.frozen(slots=True)
class BudgetVerdict:
    """What a NodePool's budgets allow for one reason right now."""

    nodepool: str
    reason: DisruptionReason
    total: int  # the pool's counted nodes
    allowed: int  # by the most restrictive active budget (UNLIMITED when none applies)
    disrupting: int  # counted nodes already being disrupted
    budget: Budget | None  # the budget that decided, if any

    @property
    def remaining(self) -> int:
        """Nodes that may start being disrupted now."""
        return max(0, self.allowed - self.disrupting)

    def describe(self) -> str:
        if self.budget is None:
            return f'nodepool "{self.nodepool}" has no active budget for {self.reason}'
        window = ""
        if self.budget.schedule is not None:
            window = f', schedule "{self.budget.schedule}" for {self.budget.duration}'
        return (
            f'nodepool "{self.nodepool}" budget nodes={self.budget.nodes}{window} allows '
            f"{self.allowed} of {self.total} node(s) for {self.reason}; "
            f"{self.disrupting} already disrupting, {self.remaining} left"
        )


def allowed_by_budgets(
    pool: NodePool,
    reason: DisruptionReason,
    *,
    total: int,
    disrupting: int,
    now: datetime,
) -> BudgetVerdict:
    """The verdict of ``pool``'s budgets for ``reason`` (see the module docstring)."""
    allowed, deciding = UNLIMITED, None
    for budget in _applying(pool.spec.disruption.budgets, reason):
        if not budget_is_active(budget, now):
            continue
        value = scaled_nodes(budget.nodes, total)
        if value < allowed:
            allowed, deciding = value, budget
    return BudgetVerdict(pool.name, reason, total, allowed, disrupting, deciding)


def _applying(budgets: Iterable[Budget], reason: DisruptionReason) -> Iterable[Budget]:
    return (b for b in budgets if b.applies_to(reason))


def budget_verdicts(
    snapshot: StateSnapshot, reason: DisruptionReason, now: datetime
) -> dict[str, BudgetVerdict]:
    """Per NodePool, its budgets' verdict for ``reason``: counted nodes are managed,
    initialized and not yet terminating their instance; those deleting, marked for
    disruption or not Ready are disrupting. For ``Unhealthy`` a node merely not Ready is
    not: being unhealthy is what makes it repair's candidate, and counting it would have
    a lone broken node use up the very budget that lets it be repaired (karpy's reading;
    Karpenter 1.15's code was not available)."""
    totals: dict[str, int] = {}
    disrupting: dict[str, int] = {}
    for claim in snapshot.nodeclaims.values():
        node = snapshot.node_for_claim(claim.name)
        if node is None or not is_true(claim, INITIALIZED):
            continue
        if is_true(claim, "InstanceTerminating"):
            continue
        pool = claim.metadata.labels.get(LABEL_NODEPOOL) or node.node.labels.get(LABEL_NODEPOOL)
        if not pool:
            continue
        totals[pool] = totals.get(pool, 0) + 1
        not_ready = not node.ready and reason is not DisruptionReason.UNHEALTHY
        busy = (not_ready or is_disrupting(node) or is_marked(claim)
                or claim.metadata.deletion_timestamp is not None)  # fmt: skip
        if busy:
            disrupting[pool] = disrupting.get(pool, 0) + 1
    return {
        name: allowed_by_budgets(
            pool, reason, total=totals.get(name, 0), disrupting=disrupting.get(name, 0), now=now
        )
        for name, pool in snapshot.nodepools.items()
    }
