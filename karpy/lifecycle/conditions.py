"""Status conditions on NodeClaims, and the writes that change them safely.

Several controllers set conditions on one NodeClaim (launch sets ``Launched``, the node
termination controller ``Drained`` and ``InstanceTerminating``, disruption
``DisruptionReason``). A JSON merge patch replaces the whole ``status.conditions`` list,
so two writers patching from different reads would erase each other's conditions. Every
status write here therefore carries the ``metadata.resourceVersion`` that was read
(Karpenter's ``MergeFromWithOptimisticLock``): a stale one fails with 409 and the
controller reconciles again from the fresh object.

`set_condition` follows the Kubernetes convention (and operatorpkg's): the transition
time changes only when the status does, and a condition without a reason carries its
type as the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.core import Condition
from karpy.kube.resources import NODECLAIMS

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import datetime

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.kube.client import KubeClient

__all__ = [
    "DISRUPTION_REASON",
    "DRAINED",
    "INITIALIZED",
    "INSTANCE_TERMINATING",
    "LAUNCHED",
    "REGISTERED",
    "VOLUMES_DETACHED",
    "is_true",
    "patch_status",
    "set_condition",
]

LAUNCHED: Final = "Launched"
REGISTERED: Final = "Registered"
INITIALIZED: Final = "Initialized"
DRAINED: Final = "Drained"
VOLUMES_DETACHED: Final = "VolumesDetached"
INSTANCE_TERMINATING: Final = "InstanceTerminating"
DISRUPTION_REASON: Final = "DisruptionReason"
READY: Final = "Ready"
# Karpenter's ready set: Ready is True once all of these are.
READY_SET: Final = (LAUNCHED, REGISTERED, INITIALIZED)
_MESSAGE_LIMIT: Final = 300  # Karpenter truncates launch failure messages to 300 chars


def is_true(claim: NodeClaim, type_: str) -> bool:
    condition = claim.status.condition(type_)
    return condition is not None and condition.is_true


def set_condition(
    conditions: tuple[Condition, ...],
    type_: str,
    status: str,
    *,
    now: datetime,
    reason: str = "",
    message: str = "",
    generation: int = 0,
) -> tuple[Condition, ...]:
    """``conditions`` with ``type_`` set (and the root ``Ready`` kept in step with the
    ready set); the same tuple when nothing changes."""
    updated = _set_one(conditions, type_, status, now, reason, message, generation)
    if type_ in READY_SET:
        updated = _set_ready(updated, now, generation)
    return updated


def _set_one(  # noqa: PLR0917
    conditions: tuple[Condition, ...],
    type_: str,
    status: str,
    now: datetime,
    reason: str,
    message: str,
    generation: int,
) -> tuple[Condition, ...]:
    reason = reason or type_
    message = message[:_MESSAGE_LIMIT]
    old = next((c for c in conditions if c.type == type_), None)
    if old is not None and (old.status, old.reason, old.message) == (status, reason, message):
        return conditions
    changed_at = old.last_transition_time if old is not None and old.status == status else now
    new = Condition(type=type_, status=status, reason=reason, message=message,
                    last_transition_time=changed_at, observed_generation=generation)  # fmt: skip
    if old is None:
        return (*conditions, new)
    return tuple(new if c.type == type_ else c for c in conditions)


def _set_ready(
    conditions: tuple[Condition, ...], now: datetime, generation: int
) -> tuple[Condition, ...]:
    by_type = {c.type: c for c in conditions}
    for type_ in READY_SET:
        condition = by_type.get(type_)
        if condition is None or not condition.is_true:
            status = "Unknown" if condition is None else condition.status
            reason = "UnhealthyDependents" if condition is not None else "AwaitingReconciliation"
            message = f"{type_}={status}"
            return _set_one(conditions, READY, "False" if status == "False" else "Unknown",
                            now, reason, message, generation)  # fmt: skip
    return _set_one(conditions, READY, "True", now, READY, "", generation)


async def patch_status(
    client: KubeClient,
    claim: NodeClaim,
    *,
    conditions: tuple[Condition, ...] | None = None,
    fields: Mapping[str, Any] | None = None,
) -> Any:
    """Write ``conditions`` and other status ``fields`` of ``claim`` with a merge patch
    that carries the resourceVersion it was read at (409 when stale); the new object."""
    status: dict[str, Any] = dict(fields or {})
    if conditions is not None:
        status["conditions"] = [c.to_dict() for c in conditions]
    patch = {"metadata": {"resourceVersion": claim.metadata.resource_version},
             "status": status}  # fmt: skip
    return await client.patch_status(NODECLAIMS, claim.name, patch)
