"""`NodeClaimLifecycle`: the controller that carries a NodeClaim from creation to a
working node, and from deletion to gone.

Each reconcile reads the NodeClaim from cluster state and takes every step that is due,
in order, each a no-op once done, so a controller killed at any point resumes where the
API says it stands:

* the ``karpenter.sh/termination`` finalizer is added before anything is launched (an
  instance must never exist without a NodeClaim that will clean it up);
* `launch` → `register` → `initialize` (``karpy.lifecycle.launch``, ``.registration``,
  ``.initialization``);
* `check_liveness` gives up on a claim that never launched or never joined, and otherwise
  asks to be woken at its deadline;
* a deleted NodeClaim is finalized (``karpy.lifecycle.finalize``).

It is woken by changes to the NodeClaim and to its Node (found by provider ID), and by
the periodic resync.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import FINALIZER_TERMINATION
from karpy.kube.client import priority
from karpy.lifecycle.finalize import finalize
from karpy.lifecycle.initialization import initialize
from karpy.lifecycle.launch import launch
from karpy.lifecycle.liveness import check_liveness
from karpy.lifecycle.registration import register
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import is_nodeclaim
from karpy.state.keys import NodeClaimName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.lifecycle.context import Lifecycle
    from karpy.state.cluster import StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["LIFECYCLE_PRIORITY", "NodeClaimLifecycle"]

LIFECYCLE_PRIORITY: Final = 5  # below creating NodeClaims (10), above housekeeping (0)


class NodeClaimLifecycle:
    name = "nodeclaim.lifecycle"
    watches = frozenset({kinds.NODECLAIM, kinds.NODE})

    def __init__(self, ctx: Lifecycle) -> None:
        self.ctx = ctx

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClaimName]:
        if is_nodeclaim(change):
            return (NodeClaimName(change.key),)
        record = change.new if change.new is not None else change.old
        provider_id = record.provider_id if record is not None else ""
        if not provider_id:
            return ()
        claim = self.ctx.state.snapshot().claim_by_provider_id.get(provider_id)
        return () if claim is None else (NodeClaimName(claim),)

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClaimName]:
        return map(NodeClaimName, snapshot.nodeclaims)

    async def reconcile(self, key: NodeClaimName) -> Result:
        claim = self.ctx.state.snapshot().nodeclaims.get(key)
        if claim is None:
            return DONE
        if claim.metadata.deletion_timestamp is not None:
            return await finalize(self.ctx, claim)
        if FINALIZER_TERMINATION not in claim.metadata.finalizers:
            claim = await self.ctx.patch_metadata(
                claim, {"finalizers": [*claim.metadata.finalizers, FINALIZER_TERMINATION]}
            )
        # Bringing capacity up goes ahead of housekeeping writes (conditions, counters) in
        # the rate limiter: in a scale-up the request budget is what paces it.
        with priority(LIFECYCLE_PRIORITY):
            launched = await launch(self.ctx, claim)
            if launched is None:
                return DONE  # deleted: its deletion is the next event
            claim = await register(self.ctx, launched)
            claim = await initialize(self.ctx, claim)
        deadline = await check_liveness(self.ctx, claim)
        return DONE if deadline is None else requeue_after(deadline)
