"""When a terminating node's pods must be gone, whatever blocks their eviction.

A NodeClaim with ``spec.terminationGracePeriod`` promises that its node is gone that long
after the NodeClaim was deleted: PodDisruptionBudgets and ``karpenter.sh/do-not-disrupt``
are honoured until then, and no longer. The NodeClaim lifecycle writes the instant down
as the annotation ``karpenter.sh/nodeclaim-termination-timestamp`` (RFC 3339) the first
time it sees the NodeClaim deleted, so every controller (and a restarted one) reads the
same deadline instead of recomputing it from a clock.

`termination_deadline` is that reading, shared by the NodeClaim lifecycle (which writes
the annotation) and node termination (which drains against it). Before the annotation
is written (or if its text cannot be read) the deadline is computed the way the
annotation would have been: ``deletionTimestamp + terminationGracePeriod``. A NodeClaim
with neither has no deadline: its drain waits for PDBs and do-not-disrupt pods for as
long as they block.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from karpy.apis.labels import ANNOTATION_TERMINATION_TIMESTAMP

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim

__all__ = ["parse_deadline", "termination_deadline"]


def parse_deadline(text: str) -> datetime | None:
    """An RFC 3339 timestamp (``2025-01-01T00:10:00Z``, fractions and offsets allowed) as
    an aware datetime, or None when ``text`` is not one."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def termination_deadline(nodeclaim: NodeClaim) -> datetime | None:
    """The instant by which the node of ``nodeclaim`` must be drained (see the module
    docstring): the annotation, else deletionTimestamp + terminationGracePeriod, else
    None."""
    text = nodeclaim.metadata.annotations.get(ANNOTATION_TERMINATION_TIMESTAMP)
    if text is not None:
        parsed = parse_deadline(text)
        if parsed is not None:
            return parsed
    deleted = nodeclaim.metadata.deletion_timestamp
    grace = nodeclaim.spec.termination_grace_period
    if deleted is None or grace is None:
        return None
    return deleted + grace
