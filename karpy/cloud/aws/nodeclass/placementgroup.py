"""The placement group an EC2NodeClass names (``spec.placementGroupSelector``, by name or
id) → ``PlacementGroupReady``.

Without a selector there is nothing to find and the condition is True. With one, the
group must exist and be available; otherwise the class is not ready, with a message that
names the group, as Karpenter's is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from karpy.apis.conditions import ConditionUpdate
from karpy.cloud.aws.nodeclass.conditions import PLACEMENT_GROUP_READY

if TYPE_CHECKING:
    from karpy.apis.ec2nodeclass import PlacementGroupSelector

__all__ = ["check_placement_group"]


async def check_placement_group(
    ec2: Any, selector: PlacementGroupSelector | None
) -> ConditionUpdate:
    if selector is None:
        return ConditionUpdate.true(PLACEMENT_GROUP_READY)
    shown = selector.name or selector.id or ""
    params = {"GroupNames": [selector.name]} if selector.name else {"GroupIds": [selector.id]}
    try:
        answer = await ec2.describe_placement_groups(**params)
    except ClientError as exc:
        code = str(exc.response.get("Error", {}).get("Code", ""))
        if not code.startswith("InvalidPlacementGroup"):
            raise
        groups: list[dict[str, Any]] = []
    else:
        groups = [g for g in answer.get("PlacementGroups") or () if g.get("State") == "available"]
    if not groups:
        return ConditionUpdate.false(PLACEMENT_GROUP_READY, "PlacementGroupNotFound",
                             f'Placement group "{shown}" not found')  # fmt: skip
    return ConditionUpdate.true(PLACEMENT_GROUP_READY)
