"""EC2NodeClass readiness without AWS, so the same manifests run on the fake cloud.

The fake cloud has no subnets, security groups or AMIs to resolve, so every EC2NodeClass
that is not being deleted is Ready: this reconciler writes ``ValidationSucceeded=True``
and ``Ready=True`` (observing the class's generation) and nothing else, once, and again
only when the generation changes or someone else writes different conditions. A write
that loses a race (409) is retried by the controller with the newer version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.conditions import ConditionTypes, ConditionUpdate
from karpy.kube.errors import NotFound
from karpy.kube.resources import EC2NODECLASSES
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["FakeNodeClassReadiness"]

log = get_logger("fake.nodeclass")

VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
# Ready stands on ValidationSucceeded alone: there is nothing else to resolve.
FAKE_NODECLASS_CONDITIONS: Final = ConditionTypes(dependents=(VALIDATION_SUCCEEDED,))


class FakeNodeClassReadiness:
    name = "fake.nodeclass.readiness"
    watches = frozenset({kinds.EC2NODECLASS})

    def __init__(self, state: ClusterState, client: KubeClient, *, clock: Clock) -> None:
        self.state = state
        self.client = client
        self.clock = clock

    def keys_for(self, change: StateChange) -> Iterable[str]:
        return (change.key,)

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        return snapshot.ec2nodeclasses.keys()

    async def reconcile(self, key: str) -> Result:
        node_class = self.state.snapshot().ec2nodeclasses.get(key)
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
            await self.client.patch_status(EC2NODECLASSES, key, patch)
        except NotFound:
            return DONE
        log.info("nodeclass ready (fake cloud: nothing to resolve)",
                 **obj_ref("EC2NodeClass", key))  # fmt: skip
        return DONE
