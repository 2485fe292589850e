"""How many NodeClaims a static NodePool (one with ``spec.replicas``) has, and in what
state, read from one snapshot.

Static drift (`karpy.disruption.methods.staticdrift`) and the static capacity controller
(`karpy.static`) must agree on these numbers, or one would undo the other: a drifted
node being replaced is, for a moment, one NodeClaim too many, and scale-down must not
remove the replacement while the old node is still draining. Karpenter keeps the counts
in memory (``NodePoolState``); here they come from what the API says:

* *running*: not being deleted and not chosen by a disruption decision, plus the
  replacements a decision named that the informer has not shown yet (they are on their
  way and will be running);
* *disrupting*: chosen by a disruption decision (``DisruptionReason``), not yet deleted;
* *deleting*: with a ``deletionTimestamp`` (termination is draining them).

Against ``limits.nodes`` every one of them counts: an instance exists, or is about to,
for each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.disruption.candidates import is_marked
from karpy.scheduling.resources import ONE

if TYPE_CHECKING:
    from karpy.apis.nodepool import NodePool
    from karpy.state.snapshot import StateSnapshot

__all__ = ["StaticCount", "node_limit", "static_count"]


@attrs.frozen(slots=True)
class StaticCount:
    running: int = 0
    disrupting: int = 0
    deleting: int = 0

    @property
    def total(self) -> int:
        """Everything an instance exists or is coming for: what ``limits.nodes`` caps."""
        return self.running + self.disrupting + self.deleting


def static_count(snapshot: StateSnapshot, pool: str) -> StaticCount:
    """The pool's NodeClaims by state (see the module docstring)."""
    running = disrupting = deleting = 0
    awaited: set[str] = set()
    for claim in snapshot.nodeclaims_of(pool):
        if claim.metadata.deletion_timestamp is not None:
            deleting += 1
        elif is_marked(claim):
            disrupting += 1
            awaited.update(claim.awaited_replacements)
        else:
            running += 1
    unseen = sum(1 for name in awaited if name not in snapshot.nodeclaims)
    return StaticCount(running + unseen, disrupting, deleting)


def node_limit(pool: NodePool) -> int | None:
    """The pool's ``limits.nodes``, if it has one."""
    limit = pool.spec.limits.get("nodes")
    return None if limit is None else limit // ONE
