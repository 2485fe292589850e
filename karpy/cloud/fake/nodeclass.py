"""NodeClass readiness without a cloud, so the same manifests run on the fake cloud.

The fake cloud serves the AWS provider's NodeClass kind (`NODE_CLASS`, declared in
`karpy.apis`, so the fake does not import the AWS provider), as Karpenter's KWOK provider
serves its own. It has no subnets, security groups or AMIs to resolve, so every NodeClass
that is not being deleted is Ready: this reconciler writes ``ValidationSucceeded=True``
and ``Ready=True`` (observing the class's generation) and nothing else, once, and again
only when the generation changes or someone else writes different conditions. A write
that loses a race (409) is retried by the controller with the newer version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.conditions import ConditionTypes, ConditionUpdate
from karpy.apis.ec2nodeclass_kind import EC2NODECLASS_KIND
from karpy.kube.errors import NotFound
from karpy.kube.resources import Resource
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result
from karpy.state.keys import NodeClassName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NODE_CLASS", "NODE_CLASSES", "FakeNodeClassReadiness"]

log = get_logger("fake.nodeclass")

VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
# Ready stands on ValidationSucceeded alone: there is nothing else to resolve.
FAKE_NODECLASS_CONDITIONS: Final = ConditionTypes(dependents=(VALIDATION_SUCCEEDED,))
NODE_CLASS: Final = EC2NODECLASS_KIND
NODE_CLASSES: Final = (NODE_CLASS,)
NODE_CLASS_RESOURCE: Final = Resource.of_custom(NODE_CLASS.definition)


class FakeNodeClassReadiness:
    name = "fake.nodeclass.readiness"
    watches = frozenset({NODE_CLASS.kind})

    def __init__(self, state: ClusterState, client: KubeClient, *, clock: Clock) -> None:
        self.state = state
        self.client = client
        self.clock = clock

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClassName]:
        return (NodeClassName(change.key),)

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClassName]:
        return map(NodeClassName, snapshot.of(NODE_CLASS.kind))

    async def reconcile(self, key: NodeClassName) -> Result:
        node_class = self.state.snapshot().node_class(NODE_CLASS, key)
        if node_class is None or node_class.metadata.deletion_timestamp is not None:
            return DONE
        before = FAKE_NODECLASS_CONDITIONS.of(
            node_class.status.conditions, generation=node_class.metadata.generation
        )
        after = before.apply(ConditionUpdate.true(VALIDATION_SUCCEEDED), now=self.clock.now())
        if after.conditions == before.conditions:
            return DONE
        patch = {"metadata": {"resourceVersion": node_class.metadata.resource_version},
                 "status": {"conditions": [c.to_dict() for c in after.conditions]}}  # fmt: skip
        try:
            await self.client.patch_status(NODE_CLASS_RESOURCE, key, patch)
        except NotFound:
            return DONE
        log.info("nodeclass ready (fake cloud: nothing to resolve)",
                 **obj_ref(NODE_CLASS.kind, key))  # fmt: skip
        return DONE
