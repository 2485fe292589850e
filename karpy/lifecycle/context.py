"""What every NodeClaim lifecycle step needs, passed as one value.

The steps (launch, registration, initialization, liveness, finalization) are plain
async functions of a `Lifecycle` and a NodeClaim; keeping their collaborators in one
frozen record keeps the signatures short and makes every dependency injectable in tests
(the clock, the cloud provider, the API client, the event recorder, the metrics).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.labels import FINALIZER_TERMINATION
from karpy.apis.nodeclaim import NodeClaim
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle import conditions

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Mapping

    from karpy.apis.conditions import ConditionUpdate
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.state.cluster import ClusterState

__all__ = ["Lifecycle"]


@attrs.frozen(slots=True, eq=False)
class Lifecycle:
    state: ClusterState
    client: KubeClient
    provider: CloudProvider
    recorder: EventRecorder
    unavailable: UnavailableOfferings
    clock: Clock
    metrics: KarpenterMetrics | None = None
    # NodeClaim name -> the pods the provisioner nominated to it (keys), for the Events
    # that tell them their capacity failed to launch; none when not wired.
    nominated: Callable[[str], Iterable[str]] | None = None
    # (NodeClaim name, its Node's name) -> name the Node on the pods nominated to the
    # NodeClaim (status.nominatedNodeName), before registration lets the node take pods.
    name_nominated: Callable[[str, str], Awaitable[int]] | None = None

    async def set_conditions(
        self,
        claim: NodeClaim,
        *updates: ConditionUpdate,
        fields: Mapping[str, Any] | None = None,
    ) -> NodeClaim:
        """Set conditions and status ``fields`` on ``claim`` (one write, only when
        something changes); the claim as written."""
        current = conditions.conditions_of(claim).apply(*updates, now=self.clock.now())
        if current.conditions == claim.status.conditions and not fields:
            return claim
        written = await conditions.patch_status(self.client, claim,
                                                conditions=current.conditions,
                                                fields=fields)  # fmt: skip
        return NodeClaim.from_dict(written)

    async def patch_metadata(
        self, claim: NodeClaim, metadata: Mapping[str, Any], *, guarded: bool = True
    ) -> NodeClaim:
        """Merge-patch ``metadata`` of ``claim`` with its resourceVersion (409 if stale).
        ``guarded=False`` sends no resourceVersion: only for patches of labels and
        annotations, which a merge patch sets key by key and so cannot undo a change
        made meanwhile (a list, such as finalizers, it would replace whole)."""
        guard = {"resourceVersion": claim.metadata.resource_version} if guarded else {}
        patch = {"metadata": {**metadata, **guard}}
        written = await self.client.patch(NODECLAIMS, claim.name, patch)
        return NodeClaim.from_dict(written)

    async def remove_finalizer(self, claim: NodeClaim) -> NodeClaim | None:
        """Drop ``karpenter.sh/termination`` (other finalizers kept); None once gone."""
        remaining = [f for f in claim.metadata.finalizers if f != FINALIZER_TERMINATION]
        written = await self.client.patch(
            NODECLAIMS, claim.name,
            {"metadata": {"finalizers": remaining or None,
                          "resourceVersion": claim.metadata.resource_version}},
        )  # fmt: skip
        return NodeClaim.from_dict(written) if written else None
