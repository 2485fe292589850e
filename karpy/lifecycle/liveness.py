"""Liveness: a NodeClaim whose instance never launched or whose node never joined is
given up on, so its pods are scheduled again and nothing waits for ever.

As Karpenter: not launched 5 minutes after creation (``launch_timeout``), or launched but
not registered 15 minutes after launch (``registration_timeout``) → the NodeClaim is
deleted (its finalizer then terminates any instance). Otherwise the claim is looked at
again when its deadline comes, with no event needed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Final

from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_NODEPOOL
from karpy.kube.errors import NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle.conditions import LAUNCHED, REGISTERED, is_true
from karpy.log import get_logger, obj_ref

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.lifecycle.context import Lifecycle

__all__ = ["LAUNCH_TTL", "REGISTRATION_TTL", "check_liveness"]

log = get_logger("nodeclaim.lifecycle")

LAUNCH_TTL: Final = timedelta(minutes=5)
REGISTRATION_TTL: Final = timedelta(minutes=15)
UNREADABLE_RECHECK: Final = 60.0  # seconds; while a Node that may be its own is unreadable


async def check_liveness(ctx: Lifecycle, claim: NodeClaim) -> float | None:
    """Delete ``claim`` if it is past its deadline; else seconds until the next deadline
    (None when it has none left: it registered)."""
    if is_true(claim, REGISTERED):
        return None
    now = ctx.clock.now()
    if is_true(claim, LAUNCHED):
        launched = claim.status.condition(LAUNCHED)
        since = (launched.last_transition_time if launched else None) or now
        deadline, reason = since + REGISTRATION_TTL, "registration_timeout"
    else:
        since = claim.metadata.creation_timestamp or now
        deadline, reason = since + LAUNCH_TTL, "launch_timeout"
    left = (deadline - now).total_seconds()
    if left > 0:
        return left
    pid = claim.status.provider_id
    if pid and ctx.state.snapshot().unreadable_provider(pid):
        # Its Node may well exist but be unreadable: not registered is not known.
        log.warning("not deleting nodeclaim: a node for its instance may be unreadable",
                    **obj_ref("NodeClaim", claim.name), providerID=pid)  # fmt: skip
        return UNREADABLE_RECHECK
    log.info("deleting nodeclaim: liveness timeout", **obj_ref("NodeClaim", claim.name),
             reason=reason)  # fmt: skip
    try:
        await ctx.client.delete(NODECLAIMS, claim.name)
    except NotFound:
        return None
    if ctx.metrics is not None:
        labels = claim.metadata.labels
        ctx.metrics.nodeclaims_disrupted.labels(
            reason, labels.get(LABEL_NODEPOOL, ""), labels.get(LABEL_CAPACITY_TYPE, ""), "", ""
        ).inc()
    return None
