"""The `CloudProvider` protocol: the one seam between karpy's controllers and a cloud.

Controllers never talk to a cloud API directly. Provisioning asks a provider which
instance types a NodePool may launch; the NodeClaim lifecycle asks it to `create` the
instance behind a NodeClaim, to `get` or `list` instances, and to `delete` one during
termination; garbage collection compares its `list` with the NodeClaims; disruption asks
`is_drifted`; node repair reads `repair_policies`. The provider also declares what the
core must know of it without knowing its name: the NodeClass kinds it serves
(`node_classes`: what to watch, how to read it, when it is Ready), the label keys its
instance types define (`well_known_labels`) and the label domains it reserves
(`restricted_label_domains`). Everything that crosses the seam is a
plain immutable record (`Instance`, `RepairPolicy`, the scheduler's `InstanceType`) or
one of the typed errors of `karpy.cloud.errors`.

Two rules every implementation keeps, because a controller may be killed at any moment
and restarted:

* **Idempotent launches.** `create` for a NodeClaim that already has an instance returns
  that instance instead of launching another (the instance carries the NodeClaim's name,
  as a tag on EC2 or an annotation on a fake Node), so a retried or repeated launch never
  doubles capacity.
* **Nothing only in memory.** `get` and `list` answer from the cloud (or, for the fake,
  the API server), never from a record of what this process launched.

`get_instance_types` returns the same sequence object for as long as its answer for that
NodePool is unchanged, so callers may cache what they compile from it by identity.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from datetime import datetime, timedelta

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodeclass import NodeClassKind
    from karpy.apis.nodepool import NodePool
    from karpy.base.component import Component
    from karpy.kube.events import EventRecorder
    from karpy.scheduling.instancetypes import InstanceType

__all__ = ["CloudProvider", "Instance", "RepairAction", "RepairPolicy"]


@attrs.frozen(slots=True, kw_only=True)
class Instance:
    """An instance as the cloud reports it, in the terms a NodeClaim's status uses.

    ``labels`` are the labels its node will carry that the cloud decides: the instance
    type's (instance type, arch, os, provider labels), the offering's (zone, capacity type,
    reservation) and the values the launch resolved for the NodeClaim's requirements;
    ``annotations`` are what the launch records on the NodeClaim (the AWS provider's
    NodeClass hash, against which drift is judged).
    Quantities are integer milli-units (`karpy.base.quantity`).
    """

    provider_id: str
    nodeclaim: str = ""  # the NodeClaim it was launched for, from its tag/annotation
    instance_type: str = ""
    zone: str = ""
    capacity_type: str = ""
    image_id: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    capacity: Mapping[str, int] = attrs.field(factory=dict)
    allocatable: Mapping[str, int] = attrs.field(factory=dict)
    created: datetime | None = None
    terminating: bool = False


class RepairAction(enum.StrEnum):
    """What node repair does to a node a policy calls unhealthy (Karpenter 1.15)."""

    REPLACE = "ReplaceNode"
    REBOOT = "RebootNode"


@attrs.frozen(slots=True)
class RepairPolicy:
    """A node condition that, held for ``toleration``, makes the node unhealthy
    (node repair replaces it).

    The rest is Karpenter 1.15's (RFC core#3192 and the reason-aware policies):
    ``reason_regex`` narrows the policy to conditions whose ``reason`` it matches
    (searched anywhere in the reason, as Go's ``regexp.MatchString`` does; None matches
    any reason); ``action`` is what repair does; ``termination_grace_period`` bounds the
    drain (0: forceful, no drain; None: the NodeClaim's own; else the shorter of the two);
    ``priority`` orders eligible nodes (higher first; only the order of the values
    matters)."""

    condition_type: str
    condition_status: str
    toleration: timedelta
    reason_regex: str | None = None
    action: RepairAction = RepairAction.REPLACE
    termination_grace_period: timedelta | None = None
    priority: int = 0

    def matches(self, status: str, reason: str) -> bool:
        """Does a condition of this type with ``status`` and ``reason`` fall under it?"""
        if status != self.condition_status:
            return False
        return self.reason_regex is None or re.search(self.reason_regex, reason) is not None


class CloudProvider(Protocol):
    """See the module docstring. Methods raise `karpy.cloud.errors` errors; anything
    else is a bug or a transient failure the caller retries with backoff."""

    @property
    def name(self) -> str:
        """Short name, for metrics and logs (``fake``, ``aws``)."""
        ...

    @property
    def well_known_labels(self) -> frozenset[str]:
        """Label keys the provider defines on its instance types, which pods and NodePools
        may use in requirements (added to Karpenter's own)."""
        ...

    @property
    def restricted_label_domains(self) -> frozenset[str]:
        """Label domains (added to Karpenter's ``karpenter.sh``) whose labels a pod may
        require only when they are well-known: the provider sets them itself."""
        ...

    @property
    def node_classes(self) -> Sequence[NodeClassKind[Any]]:
        """The NodeClass kinds a ``nodeClassRef`` may name (Karpenter's
        ``GetSupportedNodeClasses``): the same declarations the provider's module exports
        as ``NODE_CLASSES``, which the operator reads to watch them before the provider is
        built."""
        ...

    async def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        """What ``nodepool`` may launch, with offerings and prices; `NodeClassNotReady`
        when its NodeClass cannot be used."""
        ...

    async def create(self, nodeclaim: NodeClaim) -> Instance:
        """Launch (or find, when one exists) the instance for ``nodeclaim``: one of the
        instance types and offerings its requirements allow, the cheapest available.
        Raises `InsufficientCapacity`, `NodeClassNotReady` or `CreateError`."""
        ...

    async def delete(self, nodeclaim: NodeClaim) -> None:
        """Begin terminating the instance of ``nodeclaim`` (by its provider ID). Raises
        `NodeClaimNotFound` when there is no instance (any longer): termination is done."""
        ...

    async def reboot(self, nodeclaim: NodeClaim) -> None:
        """Reboot the instance of ``nodeclaim`` in place (node repair's ``RebootNode``,
        Karpenter 1.15's ``CloudProvider.Reboot``): it comes back as the same Node with a
        new ``status.nodeInfo.bootID``. Raises `NodeClaimNotFound` when there is no
        instance (any longer)."""
        ...

    async def get(self, provider_id: str) -> Instance:
        """The instance, or `NodeClaimNotFound` if it is gone or terminating."""
        ...

    async def list(self) -> Sequence[Instance]:
        """Every instance this provider manages for the cluster (terminating ones too)."""
        ...

    async def is_drifted(self, nodeclaim: NodeClaim) -> str:
        """A drift reason (``AMIDrift``, ...) when the instance no longer matches its
        NodeClass, else the empty string."""
        ...

    def repair_policies(self) -> Sequence[RepairPolicy]:
        """Node conditions that mark a node unhealthy (node repair)."""
        ...

    def controllers(self, recorder: EventRecorder) -> Sequence[Component]:
        """The provider's own controllers (NodeClass status, refreshes, interruption), run
        beside karpy's while this process leads; ``recorder`` publishes their Events."""
        ...
