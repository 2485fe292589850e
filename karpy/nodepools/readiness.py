"""NodePool readiness: can this pool be provisioned from, and if not, why not?

A round only uses NodePools whose ``Ready`` condition is True, so this controller is what
turns "my pods stay pending" into a reason on the object a user looks at:

* ``NodeClassReady``: the NodeClass its ``nodeClassRef`` names exists, is not being
  deleted and is Ready (False with ``NodeClassNotFound``, ``NodeClassTerminating`` or
  ``NodeClassNotReady``, naming the class; karpy serves ``EC2NodeClass`` only, so another
  kind is ``UnsupportedNodeClass``);
* ``ValidationSucceeded``: Karpenter's runtime validation of the pool (the checks the
  CRD cannot make), False with ``NodePoolValidationFailed`` and the errors; among them a
  limit the CRD's pattern admits but no quantity parser reads (``cpu: 1e1.5``), said in
  Kubernetes' own words, so such a pool is reported rather than silently dropped;
* ``Ready``: True when both are.

A pool whose state changes gets a Kubernetes Event too, so ``kubectl describe nodepool``
tells the story. Writes happen only when a condition changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.core import Condition
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import NODEPOOLS
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result
from karpy.state import kinds

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["NodePoolReadiness"]

log = get_logger("nodepool.readiness")

SUPPORTED: Final = (("karpenter.k8s.aws", "EC2NodeClass"),)


def _set(
    conditions: tuple[Condition, ...], new: Condition, now_conditions: list[Condition]
) -> None:
    old = next((c for c in conditions if c.type == new.type), None)
    if old is not None and old.status == new.status:
        new = Condition(new.type, new.status, new.reason, new.message,
                        old.last_transition_time, new.observed_generation)  # fmt: skip
    now_conditions.append(new)


class NodePoolReadiness:
    name = "nodepool.readiness"
    watches = frozenset({kinds.NODEPOOL, kinds.EC2NODECLASS})

    def __init__(
        self, state: ClusterState, client: KubeClient, recorder: EventRecorder, *, clock: Clock
    ) -> None:
        self.state = state
        self.client = client
        self.recorder = recorder
        self.clock = clock

    def keys_for(self, change: StateChange) -> Iterable[str]:
        if change.kind == kinds.NODEPOOL:
            return (change.key,)
        return [
            pool.name
            for pool in self.state.snapshot().nodepools.values()
            if pool.spec.template.spec.node_class_ref.name == change.key
        ]

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[str]:
        return snapshot.nodepools.keys()

    def node_class_ready(self, pool: NodePool, snapshot: StateSnapshot) -> tuple[str, str, str]:
        ref = pool.spec.template.spec.node_class_ref
        if (ref.group, ref.kind) not in SUPPORTED:
            return ("False", "UnsupportedNodeClass",
                    f"nodeClassRef {ref.group}/{ref.kind} is not supported (karpy serves "
                    "karpenter.k8s.aws/EC2NodeClass)")  # fmt: skip
        node_class = snapshot.ec2nodeclasses.get(ref.name)
        if node_class is None:
            return "False", "NodeClassNotFound", f'EC2NodeClass "{ref.name}" not found'
        if node_class.metadata.deletion_timestamp is not None:
            return "False", "NodeClassTerminating", f'EC2NodeClass "{ref.name}" is terminating'
        ready = node_class.status.condition("Ready")
        if ready is None:
            return "Unknown", "AwaitingReconciliation", f'EC2NodeClass "{ref.name}" not reconciled'
        if ready.status != "True":
            detail = f": {ready.message}" if ready.message else ""
            return ready.status, "NodeClassNotReady", f'EC2NodeClass "{ref.name}" not ready{detail}'
        return "True", "NodeClassReady", ""

    async def reconcile(self, key: str) -> Result:
        snapshot = self.state.snapshot()
        pool = snapshot.nodepools.get(key)
        if pool is None or pool.metadata.deletion_timestamp is not None:
            return DONE
        generation = pool.metadata.generation
        class_status, class_reason, class_message = self.node_class_ready(pool, snapshot)
        errors = pool.validate_runtime()
        valid = ("True", "ValidationSucceeded", "") if not errors else (
            "False", "NodePoolValidationFailed", "; ".join(e.render() for e in errors))  # fmt: skip
        ready_status = "True" if class_status == "True" and valid[0] == "True" else (
            "False" if "False" in (class_status, valid[0]) else "Unknown")  # fmt: skip
        ready_message = class_message or valid[2]
        now = self.clock.now()
        wanted = [
            Condition("NodeClassReady", class_status, class_reason, class_message, now, generation),
            Condition("ValidationSucceeded", valid[0], valid[1], valid[2], now, generation),
            Condition("Ready", ready_status, "Ready" if ready_status == "True" else
                      (class_reason if class_status != "True" else valid[1]), ready_message,
                      now, generation),
        ]  # fmt: skip
        current = {c.type: c for c in pool.status.conditions}
        if all(
            (c.type in current)
            and (current[c.type].status, current[c.type].reason, current[c.type].message,
                 current[c.type].observed_generation) == (c.status, c.reason, c.message, generation)
            for c in wanted
        ):  # fmt: skip
            return DONE
        merged: list[Condition] = []
        for condition in wanted:
            _set(pool.status.conditions, condition, merged)
        merged += [c for c in pool.status.conditions if c.type not in {w.type for w in wanted}]
        patch = {"metadata": {"resourceVersion": pool.metadata.resource_version},
                 "status": {"conditions": [c.to_dict() for c in merged]}}  # fmt: skip
        await self.client.patch_status(NODEPOOLS, pool.name, patch)
        was_ready = current.get("Ready")
        if was_ready is None or was_ready.status != ready_status:
            log.info("nodepool readiness changed", **obj_ref("NodePool", pool.name),
                     ready=ready_status, reason=wanted[2].reason,
                     detail=ready_message or None)  # fmt: skip
            if ready_status != "True":
                self.recorder.publish(Event(
                    ObjectRef("NodePool", pool.name, "", pool.metadata.uid, "karpenter.sh/v1"),
                    "Warning", wanted[2].reason, f"NodePool is not ready: {ready_message}",
                ))  # fmt: skip
        return DONE
