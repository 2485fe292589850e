"""`NodeTermination`: what happens to a Node that is being deleted and carries
karpy's ``karpenter.sh/termination`` finalizer (Karpenter's ``node.termination``).

Registration puts the finalizer on every Node karpy manages, so deleting such a Node
(``kubectl delete node``, or the NodeClaim lifecycle when a NodeClaim is deleted) only
marks it; this controller does the work and removes the finalizer last:

1. delete the Node's NodeClaim if nobody has yet (a user deleted the Node directly), so
   the NodeClaim lifecycle also winds down;
2. if the Node is not Ready and the cloud says its instance is gone, drop the finalizer
   at once: there is nothing left to drain (a Ready node means a kubelet still runs);
3. taint it ``karpenter.sh/disrupted:NoSchedule`` so nothing new schedules there (and
   label it ``node.kubernetes.io/exclude-from-external-load-balancers``, as Karpenter
   does, so load balancers stop sending it traffic);
4. drain it (`karpy.lifecycle.termination.drain`): ``Drained=Unknown`` (reason
   ``Draining``) on the NodeClaim and a ``FailedDraining`` event on the Node while pods
   remain, looked at again every second; once empty, and at least 5 s after draining
   began (pods bound by a scheduler that had not yet seen the taint get caught, and pods
   whose informer lags the Node's), ``Drained=True``. A Node without a NodeClaim has no
   condition to hold the start, so its deletionTimestamp stands in;
5. volumes: ``VolumesDetached=True``. Karpenter waits here for the node's
   VolumeAttachments to go (so a pod's volume can attach elsewhere before the instance
   dies); karpy does not watch VolumeAttachments yet, so it does not wait — a gap;
6. ask the cloud to terminate the instance (``InstanceTerminating=True``) and ask again
   every 5 s until it answers that the instance is gone (`NodeClaimNotFound`);
7. remove the finalizer (other finalizers are kept), log ``deleted node``, count
   ``karpenter_nodes_terminated_total`` and observe the termination and lifetime
   durations.

Every step reads the state and writes only to the API (taints, conditions, finalizers),
so a controller killed at any point resumes at the same step. NodeClaim conditions of a
pass are written together at its end through `karpy.lifecycle.conditions.patch_status`
(optimistic lock: a 409 means another writer got there first, and the pass is simply
repeated). Keys are node names; a Node, a pod on a terminating Node, or the Node's
NodeClaim changing queues the Node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.conditions import ConditionUpdate, find_condition
from karpy.apis.core import format_time
from karpy.apis.labels import FINALIZER_TERMINATION, LABEL_NODEPOOL, LABEL_ZONE, TAINT_DISRUPTED
from karpy.apis.nodeclaim import NodeClaim
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.errors import NodeClaimNotFound
from karpy.kube.client import Preconditions
from karpy.kube.errors import Conflict, NotFound
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import NODECLAIMS, NODES
from karpy.lifecycle.conditions import (
    DISRUPTION_REASON,
    DRAINED,
    INSTANCE_TERMINATING,
    NODECLAIM_CONDITIONS,
    VOLUMES_DETACHED,
    patch_status,
)
from karpy.lifecycle.termination.deadline import termination_deadline
from karpy.lifecycle.termination.drain import drain
from karpy.lifecycle.termination.eviction import Evictor
from karpy.lifecycle.termination.pods import DISRUPTED_TAINT
from karpy.log import get_logger
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import is_node, is_nodeclaim, is_pod
from karpy.state.keys import NodeName

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from datetime import datetime

    from structlog.typing import FilteringBoundLogger

    from karpy.apis.conditions import Condition
    from karpy.apis.core import Taint
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.observability.metrics import Metrics
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import NodeInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = ["LABEL_EXCLUDE_BALANCERS", "MIN_DRAIN_TIME", "NodeTermination"]

log = get_logger("node.termination")

MIN_DRAIN_TIME: Final = 5.0  # seconds between Drained=Unknown and Drained=True
DRAIN_POLL: Final = 1.0  # seconds between looks at a node that is not drained
INSTANCE_POLL: Final = 5.0  # seconds between asks to terminate the instance
CONFLICT_RETRY: Final = 1.0
LABEL_EXCLUDE_BALANCERS: Final = "node.kubernetes.io/exclude-from-external-load-balancers"
FORCEFUL_TERMINATION: Final = "Forceful Termination"


def terminating(node: NodeInfo) -> bool:
    """Being deleted, and ours to finish."""
    return node.deletion_timestamp is not None and FINALIZER_TERMINATION in node.finalizers


@attrs.define(slots=True)
class _Pass:
    """The NodeClaim conditions one reconcile sets, written together at its end."""

    claim: NodeClaim | None
    now: datetime
    conditions: tuple[Condition, ...] = ()

    def condition(self, type_: str) -> Condition | None:
        return find_condition(self.conditions, type_)

    def set(self, update: ConditionUpdate) -> None:
        if self.claim is not None:
            generation = self.claim.metadata.generation
            current = NODECLAIM_CONDITIONS.of(self.conditions, generation=generation)
            self.conditions = current.apply(update, now=self.now).conditions

    @property
    def changed(self) -> bool:
        return self.claim is not None and self.conditions != self.claim.status.conditions


class NodeTermination:
    """The reconciler (see the module docstring). Of ``metrics`` it uses Karpenter's
    (``metrics.karpenter``); ``evictor`` is made from the rest unless given."""

    name = "node.termination"
    watches = frozenset({kinds.NODE, kinds.POD, kinds.NODECLAIM})

    def __init__(  # noqa: PLR0917
        self,
        state: ClusterState,
        client: KubeClient,
        provider: CloudProvider,
        recorder: EventRecorder,
        metrics: Metrics | None = None,
        clock: Clock = SYSTEM_CLOCK,
        *,
        evictor: Evictor | None = None,
    ) -> None:
        self.state = state
        self.client = client
        self.provider = provider
        self.recorder = recorder
        self.metrics: KarpenterMetrics | None = metrics.karpenter if metrics is not None else None
        self.clock = clock
        self.evictor = evictor or Evictor(client, recorder, metrics=self.metrics, clock=clock)

    # --- which nodes -------------------------------------------------------------------

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeName]:
        if is_node(change):
            node = change.new
            return (NodeName(change.key),) if node is not None and terminating(node) else ()
        snapshot = self.state.snapshot()
        names: set[str] = set()
        if is_pod(change):
            names.update(p.pod.node_name for p in (change.old, change.new) if p is not None)
        elif is_nodeclaim(change):
            names.add(snapshot.node_of_claim.get(change.key, ""))
            names.update(c.status.node_name for c in (change.old, change.new) if c is not None)
        return [NodeName(n) for n in names if n and _is_terminating(snapshot, n)]

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeName]:
        return [NodeName(name) for name, node in snapshot.nodes.items() if terminating(node)]

    # --- the steps -----------------------------------------------------------------------

    async def reconcile(self, key: NodeName) -> Result:
        if not self.state.kind_synced(kinds.NODE, kinds.POD, kinds.NODECLAIM):
            return requeue_after(DRAIN_POLL)  # an unlisted pod would be left behind
        snapshot = self.state.snapshot()
        node = snapshot.nodes.get(key)
        if node is None or not terminating(node):
            return DONE
        claim = snapshot.claim_for_node(key)
        blog = log.bind(Node={"name": key})
        if claim is not None:
            blog = blog.bind(NodeClaim={"name": claim.name})
        if claim is not None and claim.metadata.deletion_timestamp is None:
            claim = await self._delete_nodeclaim(claim, blog)
        if not node.ready and await self._instance_gone(node):
            await self._remove_finalizer(node, node.resource_version, blog)
            return DONE
        deadline = termination_deadline(claim) if claim is not None else None
        if deadline is not None:
            self._node_event(node, "Warning", "TerminationGracePeriodExpiring",
                             f"All pods will be deleted by {format_time(deadline)}")  # fmt: skip
        resource_version = await self._taint(node, blog)
        if resource_version is None:
            return DONE  # the Node is gone
        run = _Pass(claim, self.clock.now(), claim.status.conditions if claim else ())
        result = await self._await_drain(run, node, snapshot, deadline)
        if result is None:
            # The VolumeAttachment gap (module docstring): nothing is awaited here yet.
            run.set(ConditionUpdate.true(VOLUMES_DETACHED))
            result = await self._await_instance_termination(run)
        if not await self._write_conditions(run, node, blog):
            return requeue_after(CONFLICT_RETRY)
        if result is not None:
            return result
        await self._remove_finalizer(node, resource_version, blog)
        return DONE

    async def _delete_nodeclaim(self, claim: NodeClaim, blog: FilteringBoundLogger) -> NodeClaim:
        """Delete ``claim``; the NodeClaim as the API answered when it is still there
        (finalizers pending), so this pass's status write carries its new
        resourceVersion; else ``claim`` as it was (its instance is still terminated)."""
        only_this = Preconditions(uid=claim.metadata.uid)
        try:
            answer = await self.client.delete(NODECLAIMS, claim.name, preconditions=only_this)
        except (NotFound, Conflict):
            return claim
        blog.info("deleted nodeclaim of terminating node")
        if isinstance(answer, dict) and answer.get("kind") == "NodeClaim":
            return NodeClaim.from_dict(answer)
        return claim

    async def _instance_gone(self, node: NodeInfo) -> bool:
        try:
            await self.provider.get(node.provider_id)
        except NodeClaimNotFound:
            return True
        return False

    async def _taint(self, node: NodeInfo, blog: FilteringBoundLogger) -> str | None:
        """Make sure the Node has the disrupted taint and the load-balancer exclusion
        label; the resourceVersion to write the Node with next (None: it is gone).

        The taint list is sent whole (``spec.taints`` has no merge key) with the
        resourceVersion it was read at, and is read fresh first: cluster state keeps
        taints without ``timeAdded``, which writing back would erase."""
        if _is_tainted(node.spec_taints, node.node.labels):
            return node.resource_version
        fresh = await self.client.try_get(NODES, node.name)
        if fresh is None:
            return None
        meta = fresh.get("metadata") or {}
        taints: list[dict[str, Any]] = list((fresh.get("spec") or {}).get("taints") or ())
        present = any(_matches_disrupted(t) for t in taints)
        if present and (meta.get("labels") or {}).get(LABEL_EXCLUDE_BALANCERS) == "karpenter":
            return str(meta.get("resourceVersion", ""))
        if not present:  # a taint of the same key and another effect gives way
            taints = [t for t in taints if t.get("key") != TAINT_DISRUPTED]
            taints.append(DISRUPTED_TAINT.to_dict())
        patch = {"metadata": {"resourceVersion": meta.get("resourceVersion"),
                              "labels": {LABEL_EXCLUDE_BALANCERS: "karpenter"}},
                 "spec": {"taints": taints}}  # fmt: skip
        written = await self.client.patch(NODES, node.name, patch)
        if not present:
            blog.info("tainted node", taint={"key": TAINT_DISRUPTED, "effect": "NoSchedule"})
        return str((written.get("metadata") or {}).get("resourceVersion", ""))

    async def _await_drain(
        self, run: _Pass, node: NodeInfo, snapshot: StateSnapshot, deadline: datetime | None
    ) -> Result | None:
        if run.condition(DRAINED) is None:
            run.set(ConditionUpdate.unknown(DRAINED, "Draining", "Draining"))
        status = await drain(
            snapshot.pods_on(node.name), deadline=deadline, now=run.now,
            reason=_disruption_reason(run.claim), evictor=self.evictor, recorder=self.recorder,
        )  # fmt: skip
        if not status.drained:
            self._node_event(node, "Warning", "FailedDraining",
                             f"Failed to drain node, {status.message()}")  # fmt: skip
            return requeue_after(DRAIN_POLL)
        if run.claim is None:
            # No condition to remember when draining began: the deletion time stands in.
            deleted = node.deletion_timestamp
            if deleted is not None and (run.now - deleted).total_seconds() < MIN_DRAIN_TIME:
                return requeue_after(DRAIN_POLL)
        else:
            drained = run.condition(DRAINED)
            began = drained.last_transition_time if drained is not None else None
            if (
                drained is not None
                and drained.status == "Unknown"
                and (began is None or (run.now - began).total_seconds() < MIN_DRAIN_TIME)
            ):
                return requeue_after(DRAIN_POLL)
            run.set(ConditionUpdate.true(DRAINED))
        return None

    async def _await_instance_termination(self, run: _Pass) -> Result | None:
        if run.claim is None:
            return None
        try:
            await self.provider.delete(run.claim)
        except NodeClaimNotFound:
            run.set(ConditionUpdate.true(INSTANCE_TERMINATING))
            return None
        run.set(ConditionUpdate.true(INSTANCE_TERMINATING))
        return requeue_after(INSTANCE_POLL)

    async def _write_conditions(
        self, run: _Pass, node: NodeInfo, blog: FilteringBoundLogger
    ) -> bool:
        """Write the pass's conditions; False when the NodeClaim changed meanwhile."""
        claim = run.claim
        if claim is None or not run.changed:
            return True
        try:
            await patch_status(self.client, claim, conditions=run.conditions)
        except NotFound:
            return True
        except Conflict:
            blog.debug("nodeclaim changed since it was read; retrying")
            return False
        before = claim.status.condition(DRAINED)
        after = run.condition(DRAINED)
        if (after is not None and after.is_true and (before is None or not before.is_true)
                and self.metrics is not None):  # fmt: skip
            self.metrics.nodes_drained.labels(node.node.labels.get(LABEL_NODEPOOL, "")).inc()
        return True

    async def _remove_finalizer(
        self, node: NodeInfo, resource_version: str, blog: FilteringBoundLogger
    ) -> None:
        remaining = [f for f in node.finalizers if f != FINALIZER_TERMINATION]
        patch = {"metadata": {"finalizers": remaining or None,
                              "resourceVersion": resource_version}}  # fmt: skip
        try:
            await self.client.patch(NODES, node.name, patch)
        except NotFound:
            return
        now = self.clock.now()
        labels = node.node.labels
        pool = labels.get(LABEL_NODEPOOL, "")
        if self.metrics is not None:
            self.metrics.nodes_terminated.labels(pool, labels.get(LABEL_ZONE, "")).inc()
            if node.deletion_timestamp is not None:
                self.metrics.nodes_termination_duration.labels(pool).observe(
                    max(0.0, (now - node.deletion_timestamp).total_seconds())
                )
            if node.creation_timestamp is not None:
                self.metrics.nodes_lifetime.labels(pool).observe(
                    max(0.0, (now - node.creation_timestamp).total_seconds())
                )
        blog.info("deleted node")

    def _node_event(self, node: NodeInfo, type_: str, reason: str, message: str) -> None:
        ref = ObjectRef("Node", node.name, uid=node.uid, api_version="v1")
        self.recorder.publish(Event(ref, type_, reason, message))


def _is_terminating(snapshot: StateSnapshot, name: str) -> bool:
    node = snapshot.nodes.get(name)
    return node is not None and terminating(node)


def _matches_disrupted(taint: dict[str, Any]) -> bool:
    return taint.get("key") == TAINT_DISRUPTED and taint.get("effect") == "NoSchedule"


def _is_tainted(taints: Iterable[Taint], labels: Mapping[str, str]) -> bool:
    has_taint = any(t.matches(DISRUPTED_TAINT) for t in taints)
    return has_taint and labels.get(LABEL_EXCLUDE_BALANCERS) == "karpenter"


def _disruption_reason(claim: NodeClaim | None) -> str:
    """The reason pods leave, for events and ``karpenter_pods_drained_total``: the
    NodeClaim's ``DisruptionReason`` (Empty, Underutilized, Drifted, ...) when disruption
    chose it, else ``Forceful Termination``."""
    condition = claim.status.condition(DISRUPTION_REASON) if claim is not None else None
    if condition is not None and condition.is_true:
        return condition.reason
    return FORCEFUL_TERMINATION
