"""The ``nodeclaim.tagging`` controller: once a NodeClaim has a Node, tag its instance with
the node's name.

A launch cannot know the node name (the kubelet picks it, usually from the instance's
private DNS name), so EC2's console and billing reports would show karpy's instances
without a ``Name``. Karpenter's AWS provider fixes that after registration, and so does
karpy: for each NodeClaim whose ``nodeClassRef`` is an EC2NodeClass, that has a
``status.nodeName`` and is not being deleted, it writes the tags of `wanted_tags`
(``Name`` = the node name, ``karpenter.sh/nodeclaim`` and ``eks:eks-cluster-name``) on
the instance ``status.providerID`` names, leaving alone any of those keys the instance
already carries (a user's own ``Name`` in ``spec.tags`` wins). Then it annotates the
NodeClaim ``karpenter.k8s.aws/tagged: "true"`` and, as Karpenter does for NodeClaims made
before it tagged the cluster name, ``compatibility.karpenter.k8s.aws/cluster-name-tagged:
"true"``; a NodeClaim with both is never looked at again.

It tags only what is karpy's to tag. The instance is described first and must carry
every ownership tag a launch writes for this cluster
(`karpy.cloud.aws.launch.tags.is_owned_instance`) and name this NodeClaim in its
``karpenter.sh/nodeclaim`` tag; anything else (another cluster's instance, one made by
hand, a provider ID edited to point elsewhere) is refused with a warning and left
untagged and unannotated. The IAM policy says the same (``AllowScopedResourceTagging`` in
``deploy/aws/cloudformation.yaml``): CreateTags on instances with the cluster's tags, of
these three keys only.

The node name comes from a Node object, which whoever may create Nodes controls. Tag
values are made acceptable to EC2 by `tag_value`: control, format and unassigned
characters are dropped (they would render misleadingly in consoles and logs) and the
rest cut to EC2's 256 characters.

An instance that is gone (NotFound, terminated, shutting down) is not an error: the
lifecycle controllers deal with the NodeClaim. As in Karpenter, one worker tags and it
waits a second after each CreateTags, which shares EC2's mutating-call budget with
CreateFleet.
"""

from __future__ import annotations

import contextlib
import unicodedata
from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import ANNOTATION_CLUSTER_NAME_TAGGED, ANNOTATION_INSTANCE_TAGGED
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.launch.instances import (
    TERMINATING_STATES,
    create_instance_tags,
    describe_instance,
)
from karpy.cloud.aws.launch.providerid import parse_provider_id
from karpy.cloud.aws.launch.tags import (
    TAG_EKS_CLUSTER_NAME,
    TAG_NAME,
    TAG_NODECLAIM,
    is_owned_instance,
    tags_of,
)
from karpy.cloud.aws.nodeclasses import NODE_CLASS
from karpy.cloud.errors import NodeClaimNotFound
from karpy.kube.errors import NotFound
from karpy.kube.resources import NODECLAIMS
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Controller
from karpy.state import kinds
from karpy.state.cluster import is_nodeclaim
from karpy.state.keys import NodeClaimName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.kube.client import KubeClient
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.reconcile import Result
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodeClaimTagging", "is_taggable", "tag_value", "tagging_controller", "wanted_tags"]

log = get_logger("aws.nodeclaim.tagging")

TAG_VALUE_MAX: Final = 256  # EC2's limit, in Unicode characters
PAUSE_AFTER_TAGGING: Final = 1.0  # seconds; Karpenter's one CreateTags a second
RESYNC: Final = 300.0
DONE_ANNOTATIONS: Final = (ANNOTATION_INSTANCE_TAGGED, ANNOTATION_CLUSTER_NAME_TAGGED)


def tag_value(text: str) -> str:
    """``text`` as an EC2 tag value: without control, format, surrogate, private-use and
    unassigned characters (Unicode categories C*) or line and paragraph separators, and
    at most 256 characters long."""
    kept = "".join(
        ch for ch in text if unicodedata.category(ch)[0] != "C"
        and unicodedata.category(ch) not in {"Zl", "Zp"}
    )  # fmt: skip
    return kept[:TAG_VALUE_MAX]


def is_taggable(nodeclaim: NodeClaim) -> bool:
    """An EC2NodeClass NodeClaim with a Node, not being deleted and not tagged yet."""
    annotations = nodeclaim.metadata.annotations
    return (
        NODE_CLASS.serves(nodeclaim.spec.node_class_ref)
        and bool(nodeclaim.status.node_name)
        and nodeclaim.metadata.deletion_timestamp is None
        and not all(annotations.get(key) == "true" for key in DONE_ANNOTATIONS)
    )


def wanted_tags(nodeclaim: NodeClaim, cluster_name: str) -> dict[str, str]:
    """The tags Karpenter writes after registration, values made acceptable to EC2."""
    return {
        TAG_NAME: tag_value(nodeclaim.status.node_name),
        TAG_NODECLAIM: tag_value(nodeclaim.name),
        TAG_EKS_CLUSTER_NAME: tag_value(cluster_name),
    }


class NodeClaimTagging:
    """The reconciler (see the module docstring); keys are NodeClaim names."""

    name = "nodeclaim.tagging"
    watches = frozenset({kinds.NODECLAIM})

    def __init__(
        self,
        clients: AWSClients,
        cluster_name: str,
        *,
        state: ClusterState,
        client: KubeClient,
        clock: Clock = SYSTEM_CLOCK,
        pause: float = PAUSE_AFTER_TAGGING,
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self.state = state
        self.client = client
        self.clock = clock
        self.pause = pause
        self._refused: set[str] = set()  # provider IDs warned about once

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClaimName]:
        if is_nodeclaim(change) and change.new is not None and is_taggable(change.new):
            return (NodeClaimName(change.key),)
        return ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClaimName]:
        return [NodeClaimName(n) for n, claim in snapshot.nodeclaims.items() if is_taggable(claim)]

    async def reconcile(self, key: NodeClaimName) -> Result:
        nodeclaim = self.state.snapshot().nodeclaims.get(key)
        if nodeclaim is None or not is_taggable(nodeclaim):
            return DONE
        provider_id = nodeclaim.status.provider_id
        bound = log.bind(**obj_ref("NodeClaim", key), provider_id=provider_id,
                         **obj_ref("Node", nodeclaim.status.node_name))  # fmt: skip
        try:
            instance_id = parse_provider_id(provider_id)[1]
        except ValueError:  # nothing to retry until the provider ID changes
            bound.warning("not tagging instance: unparsable provider id")
            return DONE
        try:
            raw = await describe_instance(self.clients, instance_id)
            if (raw.get("State") or {}).get("Name") in TERMINATING_STATES:
                return DONE
            existing = tags_of(raw.get("Tags"))
            if not self._may_tag(nodeclaim, existing, bound):
                return DONE
            missing = {
                k: v for k, v in wanted_tags(nodeclaim, self.cluster_name).items()
                if k not in existing and v
            }  # fmt: skip
            if missing:
                await create_instance_tags(self.clients, instance_id, missing)
                bound.info("tagged instance", tags=sorted(missing))
        except NodeClaimNotFound:  # gone: the lifecycle controllers handle the NodeClaim
            bound.debug("not tagging instance: not found")
            return DONE
        patch = {"metadata": {"annotations": dict.fromkeys(DONE_ANNOTATIONS, "true")}}
        with contextlib.suppress(NotFound):  # deleted meanwhile: nothing to mark
            await self.client.patch(NODECLAIMS, key, patch)
        if missing:
            await self.clock.sleep(self.pause)
        return DONE

    def _may_tag(self, nodeclaim: NodeClaim, existing: dict[str, str], bound: Any) -> bool:
        """Whether the instance is karpy's, for this cluster and this NodeClaim."""
        if (is_owned_instance(existing, self.cluster_name)
                and existing.get(TAG_NODECLAIM) == nodeclaim.name):  # fmt: skip
            return True
        provider_id = nodeclaim.status.provider_id
        if provider_id not in self._refused:
            self._refused.add(provider_id)
            bound.warning("refused to tag instance: not karpy's for this nodeclaim",
                          cluster=self.cluster_name)  # fmt: skip
        return False


def tagging_controller(
    tagging: NodeClaimTagging, *, metrics: ControllerMetrics | None = None
) -> Controller[NodeClaimName]:
    """``tagging`` run as a controller: one worker (CreateTags is rate-limited by EC2),
    Karpenter's backoff of 1 s to 1 min on errors, a resync every five minutes."""
    return Controller(tagging, tagging.state, workers=1, resync=RESYNC, clock=tagging.clock,
                      metrics=metrics, base_delay=1.0, max_delay=60.0,
                      synced_kinds=(kinds.NODECLAIM,))  # fmt: skip
