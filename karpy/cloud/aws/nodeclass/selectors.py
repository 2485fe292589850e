"""EC2 filters from an EC2NodeClass's selector terms, and the pages of a Describe call.

Every selector (subnets, security groups, AMIs, capacity reservations) follows one rule,
Karpenter's: terms are ORed, the fields of a term are ANDed. A term of tags becomes one
Describe call whose filters are ``tag:<key>=<value>`` per tag (``tag-key=<key>`` when the
value is ``*``, "any value"); the ids (and names) of all terms are gathered into one more
call, since EC2 ORs the values of a single filter. The union of the answers, deduplicated
by id, is what the selector matched.

Messages that say "matched nothing" show the selector as the user wrote it (its JSON
wire form), so the condition alone tells what to fix.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.records import Record

__all__ = ["Filter", "describe_all", "show_terms", "tag_filters"]

Filter = dict[str, Any]  # {"Name": ..., "Values": [...]}, as botocore takes it


def tag_filters(tags: Mapping[str, str] | None) -> list[Filter]:
    """One EC2 filter per tag; ``*`` matches any value of the key."""
    return [
        {"Name": "tag-key", "Values": [key]}
        if value == "*"
        else {"Name": f"tag:{key}", "Values": [value]}
        for key, value in (tags or {}).items()
    ]


def show_terms(terms: Iterable[Record]) -> str:
    """Selector terms as compact JSON, for condition messages."""
    return orjson.dumps([term.to_dict() for term in terms], option=orjson.OPT_SORT_KEYS).decode()


async def describe_all(
    client: Any, operation: str, result_key: str, **params: Any
) -> list[dict[str, Any]]:
    """Every item of a paginated Describe/List call (``describe_subnets``, ``Subnets``)."""
    items: list[dict[str, Any]] = []
    paginator = client.get_paginator(operation)
    async for page in paginator.paginate(**params):
        items.extend(page.get(result_key) or ())
    return items


def unique_by(items: Sequence[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """``items`` with one entry per ``key`` value (the last one seen), in first-seen order."""
    seen: dict[str, dict[str, Any]] = {}
    for item in items:
        seen[str(item.get(key))] = item
    return list(seen.values())
