"""Subnets an EC2NodeClass selects (``spec.subnetSelectorTerms``) → ``status.subnets``.

The status lists them by available IP addresses, most first (ties by id), as Karpenter
does: the launch path prefers the roomiest subnet of a zone, and a subnet running out of
addresses sinks to the end on the next refresh. Zone and zone id come with each subnet,
so instance-type offerings and the ``topology.k8s.aws/zone-id`` label need no other call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from karpy.apis.ec2nodeclass_status import Subnet
from karpy.cloud.aws.nodeclass.selectors import Filter, describe_all, tag_filters, unique_by

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.ec2nodeclass import SubnetSelectorTerm

__all__ = ["find_subnets", "subnet_filter_sets", "subnet_statuses"]


def subnet_filter_sets(terms: Sequence[SubnetSelectorTerm]) -> list[list[Filter]]:
    """One DescribeSubnets filter set per tag term, plus one for all the ids."""
    ids = [term.id for term in terms if term.id]
    sets = [tag_filters(term.tags) for term in terms if not term.id]
    if ids:
        sets.append([{"Name": "subnet-id", "Values": ids}])
    return sets


async def find_subnets(ec2: Any, terms: Sequence[SubnetSelectorTerm]) -> list[dict[str, Any]]:
    """The EC2 subnets the terms match (each once)."""
    found: list[dict[str, Any]] = []
    for filters in subnet_filter_sets(terms):
        found += await describe_all(ec2, "describe_subnets", "Subnets", Filters=filters)
    return unique_by(found, "SubnetId")


def subnet_statuses(subnets: Sequence[dict[str, Any]]) -> tuple[Subnet, ...]:
    """``status.subnets``: most available IPs first, then by id."""
    ordered = sorted(
        subnets, key=lambda s: (-int(s.get("AvailableIpAddressCount") or 0), s["SubnetId"])
    )
    return tuple(
        Subnet(id=s["SubnetId"], zone=s["AvailabilityZone"], zone_id=s.get("AvailabilityZoneId"))
        for s in ordered
    )
