"""AWS provider IDs: ``aws:///<zone>/<instance-id>``, as the AWS cloud controller manager
writes them on Nodes and Karpenter on NodeClaims.

The zone is part of the ID, so a NodeClaim's zone can be read without asking EC2; the
instance ID is what every EC2 call needs. Both directions live here so the format is
written in one place.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["PROVIDER_ID_PREFIX", "parse_provider_id", "provider_id"]

PROVIDER_ID_PREFIX: Final = "aws://"
# aws:///us-west-2a/i-0123456789abcdef0 (the zone may be empty in old IDs: aws:////i-...)
_PROVIDER_ID: Final = re.compile(r"^aws:///(?P<zone>[^/]*)/(?P<id>i-[0-9a-zA-Z]+)$")


def provider_id(zone: str, instance_id: str) -> str:
    """The provider ID of ``instance_id`` launched in ``zone``."""
    return f"aws:///{zone}/{instance_id}"


def parse_provider_id(value: str) -> tuple[str, str]:
    """``(zone, instance id)`` of an AWS provider ID; `ValueError` for anything else."""
    match = _PROVIDER_ID.match(value)
    if match is None:
        raise ValueError(f"{value!r} is not an AWS provider ID (aws:///<zone>/<instance-id>)")
    return match["zone"], match["id"]
