"""What disruption records of the consolidation moves a method judged
(`karpy.disruption.balanced.Judgement`), once the method has answered: the score
metrics, a ``ConsolidationApproved`` Event for a move a Balanced pool approved, and a
debug log line per scored pool.

Every judged move counts once in ``karpenter_consolidation_moves_total`` per source pool,
whatever its policy (a ``WhenEmptyOrUnderutilized`` move is always ``approved``), with the
move's decision; a Balanced pool's score goes to ``karpenter_consolidation_score`` with
that pool's own decision. A single-node move approved by a Balanced pool gets the Event on
its Node and NodeClaim, a multi-node move on each Balanced NodePool that approved it (the
score describes the move, not any one node). A refused move gets no Event, as in
Karpenter: under Balanced most moves are refused, and their Events would bury the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.disruption.events import node_and_claim_events
from karpy.kube.events import Event, ObjectRef
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.disruption.balanced import Judgement, PoolScore
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics

__all__ = ["CONSOLIDATION_APPROVED", "record_judgements"]

CONSOLIDATION_APPROVED: Final = "ConsolidationApproved"

log = get_logger("disruption")


def record_judgements(
    judged: Sequence[Judgement], recorder: EventRecorder, metrics: KarpenterMetrics | None
) -> None:
    for judgement in judged:
        decision = _decision(judgement.approved)
        for pool in judgement.pools:
            labels = (decision, pool.nodepool, pool.policy)
            if metrics is not None:
                metrics.consolidation_moves.labels(*labels).inc()
            if pool.score is None:
                continue
            own = _decision(pool.score.approved)
            if metrics is not None:
                metrics.consolidation_score.labels(own, pool.nodepool, pool.policy).observe(
                    pool.score.value
                )
            log.debug("scored consolidation move", nodepool=pool.nodepool,
                      score=round(pool.score.value, 4), threshold=pool.score.threshold,
                      savingsFraction=round(pool.score.savings_fraction, 4),
                      disruptionFraction=round(pool.score.disruption_fraction, 4),
                      approved=pool.score.approved,
                      candidates=[c.name for c in judgement.candidates
                                  if c.nodepool == pool.nodepool])  # fmt: skip
            if judgement.approved:
                for event in _approved_events(judgement, pool):
                    recorder.publish(event)


def _decision(approved: bool) -> str:
    return "approved" if approved else "rejected"


def _approved_events(judgement: Judgement, pool: PoolScore) -> list[Event]:
    assert pool.score is not None
    message = pool.score.describe()
    if len(judgement.candidates) == 1:
        (candidate,) = judgement.candidates
        return node_and_claim_events(candidate.name, candidate.claim, CONSOLIDATION_APPROVED,
                                     message)  # fmt: skip
    source = next(c.pool for c in judgement.candidates if c.nodepool == pool.nodepool)
    ref = ObjectRef("NodePool", pool.nodepool, uid=source.metadata.uid,
                    api_version="karpenter.sh/v1")  # fmt: skip
    return [Event(ref, "Normal", CONSOLIDATION_APPROVED, message,
                  dedupe_values=(ref.kind, ref.name, CONSOLIDATION_APPROVED, message))]  # fmt: skip
