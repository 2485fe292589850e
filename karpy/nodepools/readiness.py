"""NodePool readiness: can this pool be provisioned from, and if not, why not?

A round only uses NodePools whose ``Ready`` condition is True, so this controller is what
turns "my pods stay pending" into a reason on the object a user looks at:

* ``NodeClassReady``: the NodeClass its ``nodeClassRef`` names exists, is not being
  deleted and is Ready (False with ``NodeClassNotFound``, ``NodeClassTerminating`` or
  ``NodeClassNotReady``, naming the class). The kinds a ref may name, and what Ready
  means for each, are the cloud provider's answer (its `NodeClassKind` declarations);
  a kind it does not serve is ``UnsupportedNodeClass``;
* ``ValidationSucceeded``: Karpenter's runtime validation of the pool (the checks the
  CRD cannot make), False with ``NodePoolValidationFailed`` and the errors; among them a
  limit the CRD's pattern admits but no quantity parser reads (``cpu: 1e1.5``), said in
  Kubernetes' own words, so such a pool is reported rather than silently dropped;
* ``Ready``: True when both are, else the reason and message of the one that is not
  (the False one first).

A pool whose state changes gets a Kubernetes Event too, so ``kubectl describe nodepool``
tells the story. Writes happen only when a condition changes.

A pool that asks for what the API admits but karpy does not do (a static pool's
``spec.replicas`` while the ``StaticCapacity`` gate is off) gets ``karpy.sh/Implemented`` False
with reason ``NotImplemented``, saying what karpy does instead, and a Warning Event. The
condition is karpy's own, outside ``Ready``, and is removed once the pool no longer asks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.conditions import READY, ConditionTypes, ConditionUpdate, RootExplanation
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import NODEPOOLS
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result
from karpy.state import kinds
from karpy.state.cluster import is_nodepool
from karpy.state.keys import NodePoolName

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from karpy.apis.nodeclass import NodeClassKind
    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodePoolReadiness"]

log = get_logger("nodepool.readiness")

NODE_CLASS_READY: Final = "NodeClassReady"
VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"
IMPLEMENTED: Final = "karpy.sh/Implemented"
NOT_IMPLEMENTED: Final = "NotImplemented"
# A pool's Ready carries the reason and message of the dependent holding it back, so
# `kubectl get nodepools` and the pool's Event say "NodeClassNotFound", not a summary.
NODEPOOL_CONDITIONS: Final = ConditionTypes(
    dependents=(NODE_CLASS_READY, VALIDATION_SUCCEEDED), explanation=RootExplanation.DEPENDENT
)


class NodePoolReadiness:
    """See the module docstring. ``node_classes`` are the cloud provider's NodeClass kinds
    (`CloudProvider.node_classes`)."""

    name = "nodepool.readiness"

    def __init__(
        self, state: ClusterState, client: KubeClient, recorder: EventRecorder, *,
        node_classes: Sequence[NodeClassKind[Any]], clock: Clock, static_capacity: bool = False,
    ) -> None:  # fmt: skip
        self.state = state
        self.static_capacity = static_capacity
        self.client = client
        self.recorder = recorder
        self.node_classes = tuple(node_classes)
        self.clock = clock
        self.watches = frozenset({kinds.NODEPOOL, *(k.kind for k in self.node_classes)})

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodePoolName]:
        if is_nodepool(change):
            return (NodePoolName(change.key),)
        return [
            NodePoolName(pool.name)
            for pool in self.state.snapshot().nodepools.values()
            if (ref := pool.spec.template.spec.node_class_ref).name == change.key
            and ref.kind == change.kind
        ]

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodePoolName]:
        return map(NodePoolName, snapshot.nodepools)

    def node_class_ready(self, pool: NodePool, snapshot: StateSnapshot) -> ConditionUpdate:
        ref = pool.spec.template.spec.node_class_ref
        kind = next((k for k in self.node_classes if k.serves(ref)), None)
        if kind is None:
            served = ", ".join(f"{k.group}/{k.kind}" for k in self.node_classes) or "none"
            return ConditionUpdate.false(NODE_CLASS_READY, "UnsupportedNodeClass",
                f"nodeClassRef {ref.group}/{ref.kind} is not supported (karpy serves "
                f"{served})")  # fmt: skip
        node_class = snapshot.node_class(kind, ref.name)
        named = f'{ref.kind} "{ref.name}"'
        if node_class is None:
            return ConditionUpdate.false(NODE_CLASS_READY, "NodeClassNotFound",
                                         f"{named} not found")  # fmt: skip
        if node_class.metadata.deletion_timestamp is not None:
            return ConditionUpdate.false(NODE_CLASS_READY, "NodeClassTerminating",
                                         f"{named} is terminating")  # fmt: skip
        ready = kind.ready(node_class)
        if ready is None:
            return ConditionUpdate.unknown(NODE_CLASS_READY, "AwaitingReconciliation",
                                           f"{named} not reconciled")  # fmt: skip
        if not ready.is_true:
            detail = f": {ready.message}" if ready.message else ""
            return ConditionUpdate(NODE_CLASS_READY, ready.status, "NodeClassNotReady",
                                   f"{named} not ready{detail}")  # fmt: skip
        return ConditionUpdate.true(NODE_CLASS_READY)

    async def reconcile(self, key: NodePoolName) -> Result:
        snapshot = self.state.snapshot()
        pool = snapshot.nodepools.get(key)
        if pool is None or pool.metadata.deletion_timestamp is not None:
            return DONE
        errors = pool.validate_runtime()
        valid = ConditionUpdate.true(VALIDATION_SUCCEEDED) if not errors else (
            ConditionUpdate.false(VALIDATION_SUCCEEDED, "NodePoolValidationFailed",
                                  "; ".join(e.render() for e in errors)))  # fmt: skip
        before = NODEPOOL_CONDITIONS.of(pool.status.conditions, generation=pool.metadata.generation)
        after = before.apply(self.node_class_ready(pool, snapshot), valid, now=self.clock.now())
        missing = unimplemented(pool, static_capacity=self.static_capacity)
        if missing:
            message = "; ".join(missing)
            after = after.apply(ConditionUpdate.false(IMPLEMENTED, NOT_IMPLEMENTED, message),
                                now=self.clock.now())  # fmt: skip
        else:
            after = after.clear(IMPLEMENTED)
        if after.conditions == before.conditions:
            return DONE
        patch = {"metadata": {"resourceVersion": pool.metadata.resource_version},
                 "status": {"conditions": [c.to_dict() for c in after.conditions]}}  # fmt: skip
        await self.client.patch_status(NODEPOOLS, pool.name, patch)
        was_ready, ready = before.get(READY), after.get(READY)
        if ready is not None and (was_ready is None or was_ready.status != ready.status):
            log.info("nodepool readiness changed", **obj_ref("NodePool", pool.name),
                     ready=ready.status.value, reason=ready.reason,
                     detail=ready.message or None)  # fmt: skip
            if not ready.is_true:
                self.recorder.publish(Event(
                    _ref(pool), "Warning", ready.reason, f"NodePool is not ready: {ready.message}",
                ))  # fmt: skip
        was, now = before.get(IMPLEMENTED), after.get(IMPLEMENTED)
        if now is not None and (was is None or was.message != now.message):
            log.warning("nodepool asks for what karpy does not implement yet",
                        **obj_ref("NodePool", pool.name), detail=now.message)  # fmt: skip
            self.recorder.publish(Event(_ref(pool), "Warning", NOT_IMPLEMENTED, now.message))
        return DONE


def unimplemented(pool: NodePool, *, static_capacity: bool = False) -> list[str]:
    """What ``pool`` asks for that karpy does not do (yet, or with the gates it runs
    with), each with what it does instead. ``static_capacity``: the StaticCapacity gate."""
    found = []
    if pool.is_static and not static_capacity:
        found.append("spec.replicas (a static NodePool) is ignored: the StaticCapacity gate "
                     "is off, so no nodes are provisioned or kept for this pool")  # fmt: skip
    return found


def _ref(pool: NodePool) -> ObjectRef:
    return ObjectRef("NodePool", pool.name, "", pool.metadata.uid, "karpenter.sh/v1")
