"""Status conditions on NodeClaims, and the writes that change them safely.

Several controllers set conditions on one NodeClaim (launch sets ``Launched``, the node
termination controller ``Drained`` and ``InstanceTerminating``, disruption
``DisruptionReason``). A JSON merge patch replaces the whole ``status.conditions`` list,
so two writers patching from different reads would erase each other's conditions. Every
status write here therefore carries the ``metadata.resourceVersion`` that was read
(Karpenter's ``MergeFromWithOptimisticLock``): a stale one fails with 409 and the
controller reconciles again from the fresh object.

The conditions themselves follow the rules of `karpy.apis.conditions` (as operatorpkg's
do for Karpenter); this module declares the NodeClaim's: ``Ready`` stands on
``Launched``, ``Registered`` and ``Initialized``, and messages are cut to 300 characters
(as Karpenter cuts a launch failure's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.conditions import ConditionTypes
from karpy.kube.resources import NODECLAIMS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.apis.conditions import Condition, ConditionSet
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.kube.client import KubeClient

__all__ = [
    "DISRUPTION_REASON",
    "DRAINED",
    "INITIALIZED",
    "INSTANCE_TERMINATING",
    "LAUNCHED",
    "NODECLAIM_CONDITIONS",
    "REGISTERED",
    "VOLUMES_DETACHED",
    "conditions_of",
    "is_true",
    "patch_status",
]

LAUNCHED: Final = "Launched"
REGISTERED: Final = "Registered"
INITIALIZED: Final = "Initialized"
DRAINED: Final = "Drained"
VOLUMES_DETACHED: Final = "VolumesDetached"
INSTANCE_TERMINATING: Final = "InstanceTerminating"
DISRUPTION_REASON: Final = "DisruptionReason"
# Karpenter's NodeClaim conditions: Ready is True once all of Launched, Registered and
# Initialized are; a message is at most 300 characters.
NODECLAIM_CONDITIONS: Final = ConditionTypes(
    dependents=(LAUNCHED, REGISTERED, INITIALIZED), message_limit=300
)


def conditions_of(claim: NodeClaim) -> ConditionSet:
    """``claim``'s conditions, to read and set."""
    return NODECLAIM_CONDITIONS.of(claim.status.conditions, generation=claim.metadata.generation)


def is_true(claim: NodeClaim, type_: str) -> bool:
    condition = claim.status.condition(type_)
    return condition is not None and condition.is_true


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
