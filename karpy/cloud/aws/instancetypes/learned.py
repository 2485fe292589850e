"""Learned capacity: the real memory of nodes that have registered, per type and AMI.

The flat VM-overhead estimate (``VM_MEMORY_OVERHEAD_PERCENT``) is wrong in both
directions for many types (Karpenter issues aws#6611, aws#6509): too low and pods that
would fit are refused, too high and nodes are launched that cannot hold their pods. Once
a node of a type has registered, its ``status.capacity.memory`` is the truth for that
(instance type, AMI): `LearnedCapacity` keeps the smallest value seen, for 60 days (each
sighting renews it), and the instance-type provider uses it in place of the estimate.

`LearnedCapacityController` feeds it from cluster state: for each registered Node (label
``karpenter.sh/registered=true``) with an instance-type label, the AMI is the
``status.imageID`` of the NodeClaim paired with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import LABEL_INSTANCE_TYPE, LABEL_REGISTERED
from karpy.base.clock import SYSTEM_CLOCK
from karpy.log import get_logger
from karpy.reconcile import DONE, Result
from karpy.state import kinds
from karpy.state.cluster import is_node
from karpy.state.keys import NodeName

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["LEARNED_TTL", "LearnedCapacity", "LearnedCapacityController"]

log = get_logger("aws.instancetypes.learned")

LEARNED_TTL: Final = 60 * 24 * 3600.0  # seconds: Karpenter's discovered-capacity TTL
MILLI: Final = 1000


class LearnedCapacity:
    """(instance type, AMI id) -> smallest memory capacity seen, in bytes."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK, ttl: float = LEARNED_TTL) -> None:
        self.clock = clock
        self.ttl = ttl
        self._version = 0
        self._entries: dict[tuple[str, str], tuple[int, float]] = {}  # -> (bytes, deadline)

    @property
    def version(self) -> int:
        """Changes whenever a learned value appears, shrinks or expires."""
        self._expire()
        return self._version

    def record(self, instance_type: str, ami_id: str, memory_bytes: int) -> bool:
        """Note a node's memory capacity; True when the learned value changed."""
        key = (instance_type, ami_id)
        deadline = self.clock.monotonic() + self.ttl
        seen = self._entries.get(key)
        if seen is not None and seen[0] < memory_bytes:
            return False  # a larger sighting neither replaces nor renews the smaller one
        self._entries[key] = (memory_bytes, deadline)
        if seen is None or seen[0] != memory_bytes:
            self._version += 1
            return True
        return False

    def get(self, instance_type: str, ami_id: str) -> int | None:
        seen = self._entries.get((instance_type, ami_id))
        if seen is None or seen[1] <= self.clock.monotonic():
            return None
        return seen[0]

    def __len__(self) -> int:
        return len(self._entries)

    def _expire(self) -> None:
        now = self.clock.monotonic()
        if any(deadline <= now for _, deadline in self._entries.values()):
            self._entries = {k: v for k, v in self._entries.items() if v[1] > now}
            self._version += 1


class LearnedCapacityController:
    """Records registered nodes' memory into a `LearnedCapacity` (one key per Node)."""

    name = "aws.instancetypes.capacity"
    watches = frozenset({kinds.NODE, kinds.NODECLAIM})

    def __init__(self, state: ClusterState, learned: LearnedCapacity) -> None:
        self.state = state
        self.learned = learned

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeName]:
        if is_node(change):
            return (NodeName(change.key),)
        claim = change.new if change.new is not None else change.old
        node_name = getattr(getattr(claim, "status", None), "node_name", "")
        return (NodeName(node_name),) if node_name else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeName]:
        return map(NodeName, snapshot.nodes)

    async def reconcile(self, key: NodeName) -> Result:
        snapshot = self.state.snapshot()
        node = snapshot.nodes.get(key)
        claim_name = snapshot.claim_of_node.get(key)
        if node is None or claim_name is None or node.node.labels.get(LABEL_REGISTERED) != "true":
            return DONE
        claim = snapshot.nodeclaims.get(claim_name)
        instance_type = node.node.labels.get(LABEL_INSTANCE_TYPE, "")
        memory = node.node.capacity.get("memory")
        if claim is None or not claim.status.image_id or not instance_type or not memory:
            return DONE
        if self.learned.record(instance_type, claim.status.image_id, memory // MILLI):
            log.debug("learned node memory capacity", instanceType=instance_type,
                      imageID=claim.status.image_id, memory=memory // MILLI)  # fmt: skip
        return DONE
