"""Which nodes node repair may act on, in which order, and how long their drain may take:
the pure part of repair as a voluntary disruption (Karpenter 1.15, RFC core#3192),
shared by the `Repair` method and the legacy ``node.health`` controller.

**Unhealthy.** A repair policy names a condition type, a status and optionally a regex
over the condition's ``reason``; a node is *unhealthy* once a condition it matches has
held for the policy's toleration (since the condition's ``lastTransitionTime``). When
several policies match, the one whose toleration ran out first decides (ties: the higher
priority), since it is the diagnosis the node has been eligible under the longest.

**Order.** Repair is paced by budgets, so it must choose which eligible node goes first.
The RFC's score is ``E = rank + age/τ``: ``rank`` is the policy's priority compressed to a
dense rank (only the order of priorities matters, not their size), ``age`` the time since
the node became *eligible* (not since the fault began, so a flaky signal's long toleration
banks nothing), and ``τ`` (`AGING_STEP`) the wait that buys one rank. Higher scores go
first; ties go to the cheaper node to disrupt, then the node name. A high-priority flood
delays a low-priority real fault by at most ``Δrank·τ``. The RFC's per-NodePool backoff
for pools whose replacements keep failing is not implemented: the rollback of a failed
replacement (`karpy.disruption.orchestration`) is what paces such a pool in karpy.

**Drain bound.** A policy's ``termination_grace_period`` composes with the NodeClaim's
as a minimum: 0 is forceful (no drain), None inherits the NodeClaim's (possibly none:
an unbounded drain), anything else is the shorter of the two.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from datetime import datetime

    from karpy.cloud.provider import RepairPolicy
    from karpy.state.records import NodeInfo

__all__ = [
    "AGING_STEP",
    "Diagnosis",
    "diagnose",
    "priority_ranks",
    "repair_grace",
    "repair_score",
]

# τ: the wait past toleration that lifts a node one priority rank. karpy's choice: the RFC
# leaves its value open; ten minutes is the shortest default toleration (AWS's
# AcceleratedHardwareReady), so a fault waits at most that per rank it is behind.
AGING_STEP: Final = timedelta(minutes=10)


@attrs.frozen(slots=True)
class Diagnosis:
    """What repair reads off one node now."""

    policy: RepairPolicy | None  # the policy that makes it unhealthy; None: healthy now
    eligible_since: datetime | None = None  # when its toleration ran out (policy set)
    next_in: float | None = None  # healthy: seconds until a matching policy's toleration ends

    @property
    def unhealthy(self) -> bool:
        return self.policy is not None


def diagnose(node: NodeInfo, policies: Sequence[RepairPolicy], now: datetime) -> Diagnosis:
    """Is ``node`` unhealthy under ``policies`` at ``now``, by which, and since when
    (see the module docstring)?"""
    best: tuple[datetime, int, RepairPolicy] | None = None
    soonest: float | None = None
    for policy in policies:
        condition = node.condition(policy.condition_type)
        if condition is None or not policy.matches(condition.status, condition.reason):
            continue
        eligible = (condition.last_transition_time or now) + policy.toleration
        if eligible > now:
            left = (eligible - now).total_seconds()
            soonest = left if soonest is None else min(soonest, left)
            continue
        key = (eligible, -policy.priority, policy)
        if best is None or key[:2] < best[:2]:
            best = key
    if best is None:
        return Diagnosis(None, next_in=soonest)
    return Diagnosis(best[2], eligible_since=best[0])


def priority_ranks(policies: Iterable[RepairPolicy]) -> dict[int, int]:
    """Each distinct priority's dense rank, 0 for the lowest."""
    return {value: rank for rank, value in enumerate(sorted({p.priority for p in policies}))}


def repair_score(diagnosis: Diagnosis, ranks: dict[int, int], now: datetime) -> float:
    """The RFC's ``rank + age/τ`` of an unhealthy node (higher goes first)."""
    assert diagnosis.policy is not None and diagnosis.eligible_since is not None
    age = max(timedelta(0), now - diagnosis.eligible_since)
    return ranks.get(diagnosis.policy.priority, 0) + age / AGING_STEP


def repair_grace(policy: timedelta | None, nodeclaim: timedelta | None) -> timedelta | None:
    """The drain bound of a repair: the policy's and the NodeClaim's
    ``terminationGracePeriod`` composed as a minimum (None: unbounded)."""
    if policy is None:
        return nodeclaim
    if nodeclaim is None:
        return policy
    return min(policy, nodeclaim)
