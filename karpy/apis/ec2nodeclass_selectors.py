"""EC2NodeClass selector terms (subnets, security groups, capacity reservations, AMIs):
the shapes each term may take, as the CRD's OpenAPI bounds and CEL rules enforce them.

Terms in a list are ORed; the fields within one term are ANDed. Each kind of term has
its own mutual-exclusion rules (an ``id`` stands alone, an AMI ``alias`` must be the
only term).
"""

from __future__ import annotations

import re
from typing import Any

from karpy.apis.openapi import Rule, Schema, array, obj, string, string_map

__all__ = [
    "ALIAS_FAMILIES",
    "AMI_TERMS",
    "CAPACITY_RESERVATION_TERMS",
    "SECURITY_GROUP_TERMS",
    "SUBNET_TERMS",
    "has_any",
]

ALIAS_FAMILIES = ("al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025")
_WINDOWS_ALIASES = ("windows2019", "windows2022", "windows2025")


def has_any(term: dict[str, Any], *fields: str) -> bool:
    return any(f in term for f in fields)


def _tags(description: str) -> Schema:
    return string_map(
        None,
        description,
        max_properties=20,
        rules=(
            Rule(
                "self.all(k, k != '' && self[k] != '')",
                "empty tag keys or values aren't supported",
                lambda tags: all(k != "" and v != "" for k, v in tags.items()),
            ),
        ),
    )


def _expected_one_of(fields: tuple[str, ...]) -> Rule:
    listed = ", ".join(f"'{f}'" for f in fields)
    return Rule(
        "self.all(x, " + " || ".join(f"has(x.{f})" for f in fields) + ")",
        f"expected at least one, got none, [{listed}]",
        lambda terms: all(has_any(t, *fields) for t in terms),
    )


# Karpenter's subnet, security group and capacity reservation rules use self.all(...)
# where self.exists(...) was surely meant: "id with other fields" is only rejected when
# *every* term has it. The CRD's behaviour is the API, so it is reproduced as written.
def _all_terms_rule(field: str, others: tuple[str, ...], message: str) -> Rule:
    alternatives = " || ".join(f"has(x.{o})" for o in others)
    if len(others) > 1:
        alternatives = f"({alternatives})"
    return Rule(
        f"!self.all(x, has(x.{field}) && {alternatives})",
        message,
        lambda terms: not all(field in t and has_any(t, *others) for t in terms),
    )


SUBNET_TERMS = array(
    obj(
        "Subnets that have all these tags, or the subnet with this ID.",
        {
            "id": string("The subnet ID.", pattern="subnet-[0-9a-z]+"),
            "tags": _tags("Tags the subnet must have; the value * matches any value."),
        },
    ),
    "Where nodes may be launched: the union of the subnets each term selects.",
    max_items=30,
    rules=(
        Rule(
            "self.size() != 0",
            "subnetSelectorTerms cannot be empty",
            lambda terms: len(terms) != 0,
        ),
        _expected_one_of(("tags", "id")),
        _all_terms_rule(
            "id",
            ("tags",),
            "'id' is mutually exclusive, cannot be set with a combination of other fields "
            "in a subnet selector term",
        ),
    ),
)

SECURITY_GROUP_TERMS = array(
    obj(
        "Security groups that have all these tags, or one by ID or group name.",
        {
            "id": string("The security group ID.", pattern="sg-[0-9a-z]+"),
            "name": string("The security group's name (not its Name tag)."),
            "tags": _tags("Tags the group must have; the value * matches any value."),
        },
    ),
    "The security groups of the nodes: the union of the groups each term selects.",
    max_items=30,
    rules=(
        Rule(
            "self.size() != 0",
            "securityGroupSelectorTerms cannot be empty",
            lambda terms: len(terms) != 0,
        ),
        _expected_one_of(("tags", "id", "name")),
        _all_terms_rule(
            "id",
            ("tags", "name"),
            "'id' is mutually exclusive, cannot be set with a combination of other fields "
            "in a security group selector term",
        ),
        _all_terms_rule(
            "name",
            ("tags", "id"),
            "'name' is mutually exclusive, cannot be set with a combination of other "
            "fields in a security group selector term",
        ),
    ),
)

CAPACITY_RESERVATION_TERMS = array(
    obj(
        "Capacity reservations by ID, or by tags, owner and match criteria.",
        {
            "id": string("The reservation ID.", pattern="^cr-[0-9a-z]+$"),
            "instanceMatchCriteria": string(
                "Whether the reservation accepts any matching instance (open) or only "
                "those that target it (targeted).",
                enum=("open", "targeted"),
            ),
            "ownerID": string("The AWS account that owns the reservation.", pattern="^[0-9]{12}$"),
            "tags": _tags("Tags the reservation must have; the value * matches any value."),
        },
    ),
    "On-demand capacity reservations and capacity blocks nodes may launch into.",
    max_items=30,
    rules=(
        _expected_one_of(("tags", "id", "instanceMatchCriteria")),
        _all_terms_rule(
            "id",
            ("tags", "ownerID", "instanceMatchCriteria"),
            "'id' is mutually exclusive, cannot be set along with other fields in a "
            "capacity reservation selector term",
        ),
    ),
)


def _alias_family(alias: str) -> str:
    return alias.split("@", maxsplit=1)[0]


def _alias_version(alias: str) -> str | None:
    parts = alias.split("@")
    return parts[1] if len(parts) > 1 else None


AMI_TERMS = array(
    obj(
        "An AMI alias (family@version), an AMI ID, or AMIs by name, owner, tags or an "
        "SSM parameter.",
        {
            "alias": string(
                "A Karpenter-maintained AMI family and version, e.g. al2023@latest or "
                "bottlerocket@v1.20.0.",
                max_length=30,
                rules=(
                    Rule(
                        "self.matches('^[a-zA-Z0-9]+@.+$')",
                        "'alias' is improperly formatted, must match the format 'family@version'",
                        lambda a: re.search(r"^[a-zA-Z0-9]+@.+$", a) is not None,
                    ),
                    Rule(
                        "self.split('@')[0] in "
                        "['al2','al2023','bottlerocket','windows2019','windows2022','windows2025']",
                        "family is not supported, must be one of the following: 'al2', "
                        "'al2023', 'bottlerocket', 'windows2019', 'windows2022', 'windows2025'",
                        lambda a: _alias_family(a) in ALIAS_FAMILIES,
                    ),
                    Rule(
                        "self.split('@')[0] in ['windows2019','windows2022','windows2025'] ? "
                        "self.split('@')[1] == 'latest' : true",
                        "windows families may only specify version 'latest'",
                        lambda a: (
                            _alias_family(a) not in _WINDOWS_ALIASES
                            or _alias_version(a) == "latest"
                        ),
                    ),
                ),
            ),
            "id": string("The AMI ID.", pattern="ami-[0-9a-z]+"),
            "name": string("The AMI name; may contain * wildcards."),
            "owner": string("The AMI owner: an account ID, self, amazon or aws-marketplace."),
            "ssmParameter": string("An SSM parameter whose value is an AMI ID."),
            "tags": _tags("Tags the AMI must have; the value * matches any value."),
        },
    ),
    "The AMIs nodes may boot from; the newest compatible one is used.",
    min_items=1,
    max_items=30,
    rules=(
        _expected_one_of(("tags", "id", "name", "alias", "ssmParameter")),
        Rule(
            "!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || "
            "has(x.owner)))",
            "'id' is mutually exclusive, cannot be set with a combination of other fields "
            "in amiSelectorTerms",
            lambda terms: (
                not any("id" in t and has_any(t, "alias", "tags", "name", "owner") for t in terms)
            ),
        ),
        Rule(
            "!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || "
            "has(x.owner)))",
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "fields in amiSelectorTerms",
            lambda terms: (
                not any("alias" in t and has_any(t, "id", "tags", "name", "owner") for t in terms)
            ),
        ),
        Rule(
            "!(self.exists(x, has(x.alias)) && self.size() != 1)",
            "'alias' is mutually exclusive, cannot be set with a combination of other "
            "amiSelectorTerms",
            lambda terms: not (any("alias" in t for t in terms) and len(terms) != 1),
        ),
    ),
)
