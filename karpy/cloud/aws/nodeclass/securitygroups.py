"""Security groups an EC2NodeClass selects (``spec.securityGroupSelectorTerms``) →
``status.securityGroups``.

A term selects by tags, by id, or by ``name`` — the group's name, not its ``Name`` tag.
The status lists the groups by id with their names; instances get all of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.ec2nodeclass_status import SecurityGroup
from karpy.cloud.aws.nodeclass.selectors import Filter, describe_all, tag_filters, unique_by

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.ec2nodeclass import SecurityGroupSelectorTerm

__all__ = ["find_security_groups", "security_group_filter_sets", "security_group_statuses"]


def security_group_filter_sets(terms: Sequence[SecurityGroupSelectorTerm]) -> list[list[Filter]]:
    """One DescribeSecurityGroups filter set per tag term, one for the ids, one for the
    names."""
    ids = [term.id for term in terms if term.id]
    names = [term.name for term in terms if not term.id and term.name]
    sets = [tag_filters(term.tags) for term in terms if not term.id and not term.name]
    if ids:
        sets.append([{"Name": "group-id", "Values": ids}])
    if names:
        sets.append([{"Name": "group-name", "Values": names}])
    return sets


async def find_security_groups(
    ec2: Any, terms: Sequence[SecurityGroupSelectorTerm]
) -> list[dict[str, Any]]:
    """The EC2 security groups the terms match (each once)."""
    found: list[dict[str, Any]] = []
    for filters in security_group_filter_sets(terms):
        found += await describe_all(
            ec2, "describe_security_groups", "SecurityGroups", Filters=filters
        )
    return unique_by(found, "GroupId")


def security_group_statuses(groups: Sequence[dict[str, Any]]) -> tuple[SecurityGroup, ...]:
    """``status.securityGroups``, by id."""
    return tuple(
        SecurityGroup(id=g["GroupId"], name=g.get("GroupName"))
        for g in sorted(groups, key=lambda g: str(g["GroupId"]))
    )
