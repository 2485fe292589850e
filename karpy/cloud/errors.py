"""The errors a `CloudProvider` raises, typed so controllers can act on each.

Karpenter's launch logic branches on the kind of failure: insufficient capacity deletes
the NodeClaim (its pods are scheduled again onto other offerings) and marks the offerings
unavailable for a while; a NodeClass that is not ready deletes it too; a missing instance
ends termination; anything else is retried with backoff. These classes carry exactly the
facts those branches need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.errors import ExpectedError

if TYPE_CHECKING:
    from karpy.scheduling.instancetypes import CapacityPool

__all__ = [
    "CloudProviderError",
    "CreateError",
    "InsufficientCapacity",
    "NodeClaimNotFound",
    "NodeClassNotReady",
]


class CloudProviderError(ExpectedError):
    """Base class of the errors below."""


class InsufficientCapacity(CloudProviderError):
    """The cloud had no capacity in the pools tried (``pools``)."""

    def __init__(self, message: str, pools: tuple[CapacityPool, ...] = ()) -> None:
        super().__init__(message)
        self.pools = pools


class NodeClaimNotFound(CloudProviderError):
    """No instance exists (any longer) for the NodeClaim or provider ID asked about."""


class NodeClassNotReady(CloudProviderError):
    """The NodeClaim's NodeClass is missing or not Ready, so nothing can be launched."""


class CreateError(CloudProviderError):
    """A launch failed for another reason; ``reason`` is a short CamelCase word for the
    ``Launched`` condition (``LaunchFailed`` when the provider has nothing better)."""

    def __init__(self, message: str, reason: str = "LaunchFailed") -> None:
        super().__init__(message)
        self.reason = reason
