"""`Settling`: emptiness and consolidation wait while the capacity a scale-up asked for
is arriving.

Consolidation asks, node by node, whether a node's pods would fit elsewhere: a what-if
round over the whole cluster each time. While NodeClaims are still launching or
initializing, or pods are nominated to capacity and not bound yet, the answer changes
with every node that turns Ready, and a command decided now is usually abandoned at its
validation 15 s later. At 40,000 pods those what-ifs took most of a core for the whole
scale-up, on threads that share the interpreter with the event loop. So multi-node and
single-node consolidation wait until no NodeClaim is on its way and no pod is nominated.

Emptiness waits too. In a scale-up, a node is empty for a moment because kube-scheduler
put the pods planned for it elsewhere, while other pods are still pending that it can
take: the next round plans them onto it before launching more. Deleting it then costs
a launch later, and at 40,000 pods it cost 1,600 deletions mid-scale-up, each several
writes taken from the request budget the launches needed. Drift is not held back.

Waiting is bounded: in a cluster that never stops scaling, consolidation runs once every
``max_wait`` seconds (5 minutes) anyway, so it can never be held off for good.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.lifecycle.conditions import INITIALIZED, is_true
from karpy.log import get_logger

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.clock import Clock
    from karpy.state.snapshot import StateSnapshot

__all__ = ["MAX_WAIT", "Settling"]

log = get_logger("disruption")

MAX_WAIT: Final = 300.0  # seconds consolidation may be held off in one stretch


class Settling:
    def __init__(self, clock: Clock, max_wait: float = MAX_WAIT) -> None:
        self.clock = clock
        self.max_wait = max_wait
        self._since: float | None = None  # when the current wait began

    def wait_reason(self, snapshot: StateSnapshot, nominated: Mapping[str, str]) -> str:
        """Why consolidation should not run now; "" when it may."""
        arriving = sum(
            1
            for claim in snapshot.nodeclaims.values()
            if claim.metadata.deletion_timestamp is None and not is_true(claim, INITIALIZED)
        )
        if not arriving and not nominated:
            if self._since is not None:
                log.info("consolidation resumes: capacity has arrived")
                self._since = None
            return ""
        now = self.clock.monotonic()
        if self._since is None:
            self._since = now
            log.info("consolidation waits for capacity on its way",
                     nodeClaimsArriving=arriving, podsNominated=len(nominated))  # fmt: skip
        elif now - self._since >= self.max_wait:
            log.info("consolidation runs after waiting its longest",
                     seconds=round(now - self._since), nodeClaimsArriving=arriving,
                     podsNominated=len(nominated))  # fmt: skip
            self._since = now  # the next stretch starts now
            return ""
        return f"{arriving} NodeClaim(s) on their way, {len(nominated)} pod(s) nominated"
