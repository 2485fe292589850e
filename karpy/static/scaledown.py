"""Which of a static pool's NodeClaims go first when it has more than ``replicas``
(Karpenter's static deprovisioning order).

Losing a node that never launched costs nothing; losing an empty node costs nothing
but the instance; losing a node with pods costs their eviction. So, in that order:

1. NodeClaims with no provider ID yet (not launched, or their launch keeps failing);
2. nodes with nothing to evict: only DaemonSet pods (or none), none of them protected by
   ``karpenter.sh/do-not-disrupt``; a launched NodeClaim whose Node has not registered
   has no pods and counts here;
3. the others, those without a protected pod first, then by disruption cost: the
   eviction cost of their pods times the share of their lifetime left (a node about to
   expire anyway is cheaper to remove).

Names break ties, so the choice is the same on every controller. NodeClaims already
being deleted or chosen by a disruption decision are not candidates: they are not
counted as running either (`karpy.disruption.staticpools`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.disruption.candidates import eviction_cost, is_marked, lifetime_remaining
from karpy.lifecycle.termination.pods import do_not_disrupt

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence
    from datetime import datetime

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.state.records import PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["running_claims", "scale_down_order"]


def running_claims(
    snapshot: StateSnapshot, pool: str, *, deleted: Collection[str] = ()
) -> list[NodeClaim]:
    """The pool's NodeClaims that count as running: not deleting, not chosen by a
    disruption decision, and not among ``deleted`` (deleted moments ago, the informer
    has not said so yet)."""
    return [
        c for c in snapshot.nodeclaims_of(pool)
        if c.metadata.deletion_timestamp is None and not is_marked(c) and c.name not in deleted
    ]  # fmt: skip


def scale_down_order(
    snapshot: StateSnapshot, claims: Sequence[NodeClaim], *, now: datetime
) -> list[NodeClaim]:
    """``claims`` in the order they should go (see the module docstring)."""

    def rank(claim: NodeClaim) -> tuple[int, bool, float, str]:
        if not claim.status.provider_id:
            return (0, False, 0.0, claim.name)
        node = snapshot.node_for_claim(claim.name)
        pods = [p for p in snapshot.pods_on(node.name) if p.pod.is_active] if node else []
        protected = any(do_not_disrupt(p, now).active for p in pods)
        evicted = [p for p in pods if not p.pod.is_daemonset_pod]
        if not evicted and not protected:
            return (1, False, 0.0, claim.name)
        cost = _cost(evicted) * lifetime_remaining(claim, now)
        return (2, protected, cost, claim.name)

    return sorted(claims, key=rank)


def _cost(pods: Sequence[PodInfo]) -> float:
    return sum(eviction_cost(p) for p in pods)
