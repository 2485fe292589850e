"""`NodeClaimDisruptionConditions`: what disruption needs to know about each NodeClaim,
written on the NodeClaim (Karpenter's ``nodeclaim.podevents`` and ``nodeclaim.disruption``
controllers in one).

* ``status.lastPodEventTime``: when a pod last bound to the node, left it or finished on
  it. Writes are at least 10 s apart per NodeClaim (a Deployment rolling onto a node is
  one event, not a hundred).
* ``Consolidatable``: True once ``consolidateAfter`` has passed since the last pod event
  (or since initialization, when no pod ever came); absent before, while uninitialized,
  and when the NodePool never consolidates (``consolidateAfter: Never``). The
  reconcile is requeued for the moment it turns True, so no event is needed for that.
* ``Drifted``: True, with the reason, when the NodeClaim no longer matches what its
  NodePool would create now: the template hash changed (``NodePoolDrifted``, only when
  both hashes are of the same version), the NodePool's requirements no longer admit the
  node's labels (``RequirementsDrifted``), or the cloud provider says so (``is_drifted``,
  e.g. a new AMI). Removed when none holds; only launched NodeClaims are judged. A change
  of the node class a NodeClaim refers to (its spec, or its status resolving a new AMI or
  subnet) re-judges it at once, as does the periodic recheck.

Emptiness is not a condition: it is computed on the fly from the pods on the node, so a
missed pod event can delay consolidation, never strand an empty node.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.conditions import ConditionUpdate
from karpy.apis.core import format_time
from karpy.apis.labels import (
    ANNOTATION_NODEPOOL_HASH,
    ANNOTATION_NODEPOOL_HASH_VERSION,
    LABEL_NODEPOOL,
)
from karpy.kube.errors import NotFound
from karpy.lifecycle.conditions import INITIALIZED, LAUNCHED, conditions_of, is_true, patch_status
from karpy.log import get_logger, obj_ref
from karpy.reconcile import DONE, Result, requeue_after
from karpy.state import kinds
from karpy.state.cluster import is_node, is_nodeclaim, is_nodepool
from karpy.state.keys import NodeClaimName

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from karpy.apis.conditions import ConditionSet
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.kube.client import KubeClient
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.records import NodeInfo, PodInfo
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "CONSOLIDATABLE",
    "DRIFTED",
    "NodeClaimDisruptionConditions",
    "drift_reason",
    "under_consolidate_after",
]

log = get_logger("disruption")

CONSOLIDATABLE: Final = "Consolidatable"
DRIFTED: Final = "Drifted"
NODEPOOL_DRIFTED: Final = "NodePoolDrifted"
REQUIREMENTS_DRIFTED: Final = "RequirementsDrifted"
POD_EVENT_DEDUPE: Final = timedelta(seconds=10)
DRIFT_RECHECK: Final = 300.0  # seconds: the cloud provider's drift is polled this often


class NodeClaimDisruptionConditions:
    name = "nodeclaim.disruption"

    def __init__(
        self, state: ClusterState, client: KubeClient, provider: CloudProvider, *, clock: Clock
    ) -> None:
        self.state = state
        self.client = client
        self.provider = provider
        self.clock = clock
        self._pod_events: dict[str, datetime] = {}  # NodeClaim -> latest unwritten event
        # The provider's NodeClass kinds: a change to one re-judges the drift of the
        # NodeClaims referring to it (state names them by their Kubernetes kind, which is
        # also what nodeClassRef.kind says).
        self.node_class_kinds = frozenset(k.kind for k in provider.node_classes)
        self.watches = frozenset({kinds.NODECLAIM, kinds.NODEPOOL, kinds.POD, kinds.NODE,
                                  *self.node_class_kinds})  # fmt: skip

    # --- what concerns which NodeClaim -----------------------------------------------------

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClaimName]:
        if is_nodeclaim(change):
            return (NodeClaimName(change.key),) if change.new is not None else ()
        snapshot = self.state.snapshot()
        if is_nodepool(change):
            if _status_only(change.old, change.new):
                return ()  # the counter writes status every 2 s in a scale-up: nothing here
            return [NodeClaimName(c.name) for c in snapshot.nodeclaims_of(change.key)]
        if is_node(change):
            claim = snapshot.claim_for_node(change.key)
            return (NodeClaimName(claim.name),) if claim is not None else ()
        if change.kind in self.node_class_kinds:  # a resolved or edited class may drift its nodes
            return [NodeClaimName(c.name) for c in snapshot.nodeclaims.values()
                    if c.spec.node_class_ref.kind == change.kind
                    and c.spec.node_class_ref.name == change.key]  # fmt: skip
        claim_name = _pod_event_claim(snapshot, change)
        return (NodeClaimName(claim_name),) if claim_name is not None else ()

    def pod_events_observed(self, changes: Sequence[StateChange[Any]]) -> None:
        """Note when each NodeClaim's node last had a pod event (a bind, a removal, a pod
        going terminal: Karpenter's podevents), for ``lastPodEventTime``; subscribed to
        cluster state by the wiring, beside this controller's own subscription."""
        snapshot = None
        for change in changes:
            if change.kind != kinds.POD:
                continue
            snapshot = snapshot or self.state.snapshot()
            claim = _pod_event_claim(snapshot, change)
            if claim is not None:
                self._pod_events[claim] = self.clock.now()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClaimName]:
        return map(NodeClaimName, snapshot.nodeclaims)

    # --- one NodeClaim ------------------------------------------------------------------------

    async def reconcile(self, key: NodeClaimName) -> Result:
        snapshot = self.state.snapshot()
        claim = snapshot.nodeclaims.get(key)
        if claim is None:
            self._pod_events.pop(key, None)
            return DONE
        if claim.metadata.deletion_timestamp is not None:
            return DONE
        now = self.clock.now()
        fields: dict[str, Any] = {}
        last_event = claim.status.last_pod_event_time
        seen = self._pod_events.get(key)
        held_back: float | None = None
        if seen is not None and last_event is not None and seen <= last_event:
            self._pod_events.pop(key, None)  # already written
            seen = None
        if seen is not None:
            if last_event is None or now - last_event >= POD_EVENT_DEDUPE:
                fields["lastPodEventTime"] = format_time(seen)
                last_event = seen
            else:  # written less than 10 s ago: write this one when that has passed
                held_back = (last_event + POD_EVENT_DEDUPE - now).total_seconds()
        pool = snapshot.nodepools.get(claim.metadata.labels.get(LABEL_NODEPOOL, ""))
        conditions = conditions_of(claim)
        wake: list[float] = []
        consolidatable, after = _consolidatable(claim, pool, last_event, now)
        conditions = _put(conditions, CONSOLIDATABLE, consolidatable, now)
        if after is not None:
            wake.append(after)
        drift = await self._drift(claim, pool, snapshot.node_for_claim(key))
        conditions = _put(conditions, DRIFTED, drift, now)
        if is_true(claim, LAUNCHED):
            wake.append(DRIFT_RECHECK)
        if fields or conditions.conditions != claim.status.conditions:
            try:
                await patch_status(self.client, claim, conditions=conditions.conditions,
                                   fields=fields)  # fmt: skip
            except NotFound:
                return DONE
            if "lastPodEventTime" in fields and self._pod_events.get(key) == seen:
                del self._pod_events[key]
            if drift is not None and not is_true(claim, DRIFTED):
                log.info("nodeclaim drifted", **obj_ref("NodeClaim", key), reason=drift.reason)
        if held_back is not None:
            wake.append(max(held_back, 0.1))
        return requeue_after(min(wake)) if wake else DONE

    async def _drift(
        self, claim: NodeClaim, pool: NodePool | None, node: NodeInfo | None
    ) -> ConditionUpdate | None:
        if pool is None or not is_true(claim, LAUNCHED):
            return None
        reason = drift_reason(claim, pool, node)
        if reason is None:
            cloud = await self.provider.is_drifted(claim)
            if cloud:
                reason = (cloud, f"the cloud provider reports {cloud}")
        if reason is None:
            return None
        return ConditionUpdate.true(DRIFTED, *reason)


def _put(
    conditions: ConditionSet, type_: str, wanted: ConditionUpdate | None, now: datetime
) -> ConditionSet:
    """``conditions`` with ``wanted`` set, or without ``type_`` when None."""
    if wanted is None:
        return conditions.clear(type_)
    return conditions.apply(wanted, now=now)


def _consolidatable(
    claim: NodeClaim, pool: NodePool | None, last_event: datetime | None, now: datetime
) -> tuple[ConditionUpdate | None, float | None]:
    """The Consolidatable condition, and in how many seconds it turns True (if it will)."""
    if pool is None:
        return None, None
    after = pool.spec.disruption.consolidate_after
    if after is None:  # Never
        return None, None
    initialized = claim.status.condition(INITIALIZED)
    if initialized is None or not initialized.is_true:
        return None, None
    since = last_event or initialized.last_transition_time
    if since is None:
        return ConditionUpdate.true(CONSOLIDATABLE), None
    due = since + after
    if now >= due:
        return ConditionUpdate.true(CONSOLIDATABLE), None
    left = (due - now).total_seconds()
    message = (
        f"consolidateAfter {pool.spec.disruption.consolidate_after_text or after} not yet elapsed"
    )
    return ConditionUpdate.false(CONSOLIDATABLE, "ConsolidateAfterNotElapsed", message), left


def under_consolidate_after(claim: NodeClaim, pool: NodePool | None, now: datetime) -> bool:
    """Is the node within its pool's ``consolidateAfter`` of its last pod event (or of
    initializing)? Karpenter's ``IsUnderConsolidateAfter``: such a node is not a
    destination for the pods a consolidation moves. No pool, ``Never`` or ``0s``, or a
    node not initialized yet: no."""
    if pool is None:
        return False
    after = pool.spec.disruption.consolidate_after
    if after is None or after.total_seconds() <= 0:
        return False
    initialized = claim.status.condition(INITIALIZED)
    if initialized is None or not initialized.is_true:
        return False
    since = claim.status.last_pod_event_time or initialized.last_transition_time
    return since is not None and now - since < after


def drift_reason(claim: NodeClaim, pool: NodePool, node: NodeInfo | None) -> tuple[str, str] | None:
    """Why ``claim`` no longer matches ``pool`` (Karpenter's static drift checks), or None."""
    annotations = claim.metadata.annotations
    pool_annotations = pool.metadata.annotations
    claim_hash = annotations.get(ANNOTATION_NODEPOOL_HASH)
    same_version = annotations.get(ANNOTATION_NODEPOOL_HASH_VERSION) == pool_annotations.get(
        ANNOTATION_NODEPOOL_HASH_VERSION
    )
    pool_hash = pool_annotations.get(ANNOTATION_NODEPOOL_HASH)
    if claim_hash and pool_hash and same_version and claim_hash != pool_hash:
        return NODEPOOL_DRIFTED, "the NodePool's template changed since the node was created"
    labels = dict(claim.metadata.labels)
    if node is not None:
        labels.update(node.node.labels)
    for requirement in pool.spec.template.spec.requirements:
        value = labels.get(requirement.key)
        if not _admits(requirement.operator, tuple(requirement.values), value):
            shown = f"{requirement.key}={value}" if value is not None else f"no {requirement.key}"
            return (
                REQUIREMENTS_DRIFTED,
                f"the NodePool requires {requirement.key} {requirement.operator} "
                f"{list(requirement.values)}, the node has {shown}",
            )
    return None


def _admits(operator: str, values: tuple[str, ...], value: str | None) -> bool:
    """Does a label ``value`` (None: absent) satisfy a NodePool requirement? Keys the
    node does not carry are not judged (only labels it has can drift)."""
    if value is None:
        return operator != "Exists"
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "DoesNotExist":
        return False
    if operator in ("Gt", "Lt", "Gte", "Lte"):
        try:
            have, bound = int(value), int(values[0])
        except (ValueError, IndexError):
            return False
        return {"Gt": have > bound, "Lt": have < bound, "Gte": have >= bound,
                "Lte": have <= bound}[operator]  # fmt: skip
    return True


def _pod_event_claim(snapshot: StateSnapshot, change: StateChange[Any]) -> str | None:
    """The NodeClaim whose node a pod change is a pod event on, if any."""
    node = _pod_event_node(change.old, change.new)
    if node is None:
        return None
    claim = snapshot.claim_for_node(node)
    return claim.name if claim is not None else None


def _pod_event_node(old: PodInfo | None, new: PodInfo | None) -> str | None:
    """The node a pod change is a *pod event* on: a bind, a removal, or a pod going
    terminal (Karpenter's podevents)."""
    if new is None:
        return old.pod.node_name or None if old is not None else None
    node = new.pod.node_name
    if not node:
        return None
    if old is None or old.pod.node_name != node:
        return node
    if new.pod.is_terminal and not old.pod.is_terminal:
        return node
    return None


def _status_only(old: NodePool | None, new: NodePool | None) -> bool:
    """Does a NodePool change touch its status alone? Its NodeClaims' conditions read
    its spec and annotations (drift hash, consolidateAfter), never its status."""
    if old is None or new is None:
        return False
    return attrs.evolve(old, status=new.status) == new
