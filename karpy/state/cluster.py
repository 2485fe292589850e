"""`ClusterState`: the informers' sink and the store every controller reads.

Informers call `apply` with projected records (`karpy.state.records`); `ClusterState`
files them by kind and keeps the indexes controllers ask for: pods by node, pending
(unschedulable) pods, nodes and NodeClaims by provider ID, NodeClaims by NodePool, and the
NodeClaim<->Node pairing (by provider ID, as Karpenter's StateNode pairs them), and which
NodeClaims a disruption decision made wait for each replacement. All of it
is persistent maps, so `snapshot` is O(1) and an update costs O(changed objects) (see
`karpy.state.snapshot`). Everything runs on the event loop thread; there are no locks.

`generation` counts changes. `subscribe` registers a callback that receives every batch
of `StateChange`s right after it is applied (the provisioning batcher listens for pending
pods this way); callbacks must be quick and must not raise.

An object an informer could not read arrives as an `UnreadableObject` placeholder. It is
filed apart (``snapshot.unreadable``), never among the records, so no reader of
``snapshot.nodes`` meets one; but it is *known*: code that would act because an object
is absent (delete a Lease whose Node is gone, a NodeClaim whose Node is gone) asks
`StateSnapshot.is_unreadable` first. A readable version of it replaces the placeholder.

`synced` is True once every informer has listed its kind and the NodeClaims and Nodes
agree: every NodeClaim whose provider ID names a known Node is paired with it (the indexes
keep that at every `apply`). Until then provisioning and disruption must not act (they
could launch for pods already placed, or remove a node whose pods they have not seen).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeGuard, TypeVar

import attrs
import immutables

from karpy.apis.labels import LABEL_NODEPOOL
from karpy.base.clock import SYSTEM_CLOCK
from karpy.kube.unreadable import UnreadableObject
from karpy.log import get_logger
from karpy.state import kinds
from karpy.state.kinds import Kind
from karpy.state.snapshot import EMPTY, StateSnapshot

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.state.records import NodeInfo, NodeLease, PodInfo

__all__ = ["ClusterState", "StateChange", "is_node", "is_node_lease", "is_nodeclaim",
           "is_nodepool", "is_pod"]  # fmt: skip

R = TypeVar("R")

log = get_logger("state")

Map = immutables.Map


@attrs.frozen(slots=True)
class StateChange(Generic[R]):
    """One object's change: ``old`` None for an addition, ``new`` None for a deletion.
    ``kind`` is a `Kind`, or a provider's NodeClass kind; the records are that kind's
    projection (`karpy.state.watched`). `is_pod` and its siblings narrow a change to its
    kind's record type."""

    kind: str
    key: str
    old: R | None
    new: R | None


def is_pod(change: StateChange[Any]) -> TypeGuard[StateChange[PodInfo]]:
    return change.kind == Kind.POD


def is_node(change: StateChange[Any]) -> TypeGuard[StateChange[NodeInfo]]:
    return change.kind == Kind.NODE


def is_nodeclaim(change: StateChange[Any]) -> TypeGuard[StateChange[NodeClaim]]:
    return change.kind == Kind.NODECLAIM


def is_nodepool(change: StateChange[Any]) -> TypeGuard[StateChange[NodePool]]:
    return change.kind == Kind.NODEPOOL


def is_node_lease(change: StateChange[Any]) -> TypeGuard[StateChange[NodeLease]]:
    return change.kind == Kind.NODE_LEASE


def _put(outer: Map[str, Map[str, Any]], group: str, key: str, value: Any) -> Map[str, Any]:
    return outer.set(group, outer.get(group, EMPTY).set(key, value))


def _drop(outer: Map[str, Map[str, Any]], group: str, key: str) -> Map[str, Any]:
    inner = outer.get(group)
    if inner is None or key not in inner:
        return outer
    inner = inner.delete(key)
    return outer.set(group, inner) if inner else outer.delete(group)


class ClusterState:
    """See the module docstring. ``watched`` are the kinds whose informers must have
    listed before `synced` can be True."""

    def __init__(self, watched: Iterable[str] = kinds.CORE_KINDS, *, clock: Clock = SYSTEM_CLOCK):
        self.watched = frozenset(watched)
        self.clock = clock
        self.generation = 0
        self._objects: dict[str, Map[str, Any]] = dict.fromkeys(kinds.ALL_KINDS, EMPTY)
        self._unreadable: dict[str, Map[str, UnreadableObject]] = {}
        self._pods_by_node: Map[str, Map[str, PodInfo]] = EMPTY
        self._pending: Map[str, PodInfo] = EMPTY
        self._named: Map[str, PodInfo] = EMPTY  # unbound pods with a nominatedNodeName
        self._node_by_provider: Map[str, str] = EMPTY
        self._claims_by_pool: Map[str, Map[str, NodeClaim]] = EMPTY
        self._claim_by_provider: Map[str, str] = EMPTY
        self._claims_of_provider: Map[str, Map[str, bool]] = EMPTY
        self._node_of_claim: Map[str, str] = EMPTY
        self._claim_of_node: Map[str, str] = EMPTY
        self._awaiting: Map[str, Map[str, bool]] = EMPTY  # replacement -> claims waiting
        self._synced_kinds: set[str] = set()
        self._subscribers: list[Callable[[Sequence[StateChange[Any]]], None]] = []
        self._snapshot: StateSnapshot | None = None
        self._synced_at: tuple[int, bool] | None = None  # (generation, answer) cache
        self._unsynced_since: float | None = clock.monotonic()

    # --- InformerSink ---------------------------------------------------------------------

    def apply(self, kind: str, upserts: Sequence[tuple[str, Any]], deletes: Sequence[str]) -> None:
        objects = self._objects.setdefault(kind, EMPTY)
        unreadable_before = unreadable = self._unreadable.get(kind, EMPTY)
        changes: list[StateChange[Any]] = []
        with objects.mutate() as mutable:
            for key in deletes:
                old = mutable.pop(key, None)
                if old is not None:
                    changes.append(StateChange(kind, key, old, None))
                if key in unreadable:
                    unreadable = unreadable.delete(key)
            for key, record in upserts:
                old = mutable.get(key)
                if record is None or isinstance(record, UnreadableObject):
                    if record is not None:
                        unreadable = unreadable.set(key, record)
                    if old is not None:
                        del mutable[key]
                        changes.append(StateChange(kind, key, old, None))
                    continue
                if key in unreadable:
                    unreadable = unreadable.delete(key)
                mutable[key] = record
                changes.append(StateChange(kind, key, old, record))
            self._objects[kind] = mutable.finish()
        if unreadable is not unreadable_before:
            self._unreadable[kind] = unreadable
            if not changes:
                self.generation += 1
        if not changes:
            return
        index = _INDEXERS.get(kind)
        if index is not None:
            for change in changes:
                index(self, change)
        self.generation += 1
        for callback in list(self._subscribers):
            try:
                callback(changes)
            except Exception as exc:
                log.error("state subscriber failed", kind=kind, exc_info=exc)

    def set_synced(self, kind: str) -> None:
        if kind not in self._synced_kinds:
            self._synced_kinds.add(kind)
            self.generation += 1

    # --- indexes --------------------------------------------------------------------------

    def _index_pod(self, change: StateChange[Any]) -> None:
        old: PodInfo | None = change.old
        new: PodInfo | None = change.new
        key = change.key
        if old is not None:
            if old.pod.node_name and (new is None or new.pod.node_name != old.pod.node_name):
                self._pods_by_node = _drop(self._pods_by_node, old.pod.node_name, key)
            if old.provisionable and (new is None or not new.provisionable):
                self._pending = self._pending.delete(key)
            if old.named and (new is None or not new.named):
                self._named = self._named.delete(key)
        if new is not None:
            if new.pod.node_name:
                self._pods_by_node = _put(self._pods_by_node, new.pod.node_name, key, new)
            if new.provisionable:
                self._pending = self._pending.set(key, new)
            if new.named:
                self._named = self._named.set(key, new)

    def _index_node(self, change: StateChange[Any]) -> None:
        old: NodeInfo | None = change.old
        new: NodeInfo | None = change.new
        name = change.key
        old_pid = old.provider_id if old is not None else ""
        new_pid = new.provider_id if new is not None else ""
        if old_pid and old_pid != new_pid and self._node_by_provider.get(old_pid) == name:
            self._node_by_provider = self._node_by_provider.delete(old_pid)
            self._repair(old_pid)
        self._unpair_node(name)
        if new_pid:
            self._node_by_provider = self._node_by_provider.set(new_pid, name)
            self._repair(new_pid)

    def _index_nodeclaim(self, change: StateChange[Any]) -> None:
        old: NodeClaim | None = change.old
        new: NodeClaim | None = change.new
        name = change.key
        old_pool = old.metadata.labels.get(LABEL_NODEPOOL, "") if old is not None else ""
        new_pool = new.metadata.labels.get(LABEL_NODEPOOL, "") if new is not None else ""
        if old is not None and old_pool != new_pool:
            self._claims_by_pool = _drop(self._claims_by_pool, old_pool, name)
        if new is not None:
            self._claims_by_pool = _put(self._claims_by_pool, new_pool, name, new)
        old_wait = old.awaited_replacements if old is not None else ()
        new_wait = new.awaited_replacements if new is not None else ()
        if old_wait != new_wait:
            for replacement in set(old_wait) - set(new_wait):
                self._awaiting = _drop(self._awaiting, replacement, name)
            for replacement in set(new_wait) - set(old_wait):
                self._awaiting = _put(self._awaiting, replacement, name, True)
        old_pid = (old.status.provider_id or "") if old is not None else ""
        new_pid = (new.status.provider_id or "") if new is not None else ""
        if old_pid and old_pid != new_pid:
            self._claims_of_provider = _drop(self._claims_of_provider, old_pid, name)
            self._unpair_claim(name)
            self._repair(old_pid)
        if new_pid and old_pid != new_pid:
            self._claims_of_provider = _put(self._claims_of_provider, new_pid, name, True)
            self._repair(new_pid)

    def _repair(self, provider_id: str) -> None:
        """Re-derive who pairs with whom for ``provider_id``: its Node (if any) with one of
        the NodeClaims naming it (the first by name, should there be several)."""
        claims = self._claims_of_provider.get(provider_id, EMPTY)
        chosen = min(claims) if claims else None
        for claim in claims:
            self._unpair_claim(claim)
        if chosen is None:
            self._claim_by_provider = self._claim_by_provider.delete(provider_id) if (
                provider_id in self._claim_by_provider) else self._claim_by_provider  # fmt: skip
            return
        self._claim_by_provider = self._claim_by_provider.set(provider_id, chosen)
        node = self._node_by_provider.get(provider_id)
        if node is not None:
            self._unpair_node(node)
            self._node_of_claim = self._node_of_claim.set(chosen, node)
            self._claim_of_node = self._claim_of_node.set(node, chosen)

    def _unpair_claim(self, claim: str) -> None:
        node = self._node_of_claim.get(claim)
        if node is not None:
            self._node_of_claim = self._node_of_claim.delete(claim)
            if self._claim_of_node.get(node) == claim:
                self._claim_of_node = self._claim_of_node.delete(node)

    def _unpair_node(self, node: str) -> None:
        claim = self._claim_of_node.get(node)
        if claim is not None:
            self._claim_of_node = self._claim_of_node.delete(node)
            if self._node_of_claim.get(claim) == node:
                self._node_of_claim = self._node_of_claim.delete(claim)

    # --- reading ----------------------------------------------------------------------------

    def snapshot(self) -> StateSnapshot:
        """The state now, immutable; O(1) (the same object while nothing changes)."""
        if self._snapshot is None or self._snapshot.generation != self.generation:
            self._snapshot = StateSnapshot(
                generation=self.generation,
                objects=dict(self._objects),
                pods_by_node=self._pods_by_node,
                pending=self._pending,
                named=self._named,
                node_by_provider_id=self._node_by_provider,
                claims_by_nodepool=self._claims_by_pool,
                claim_by_provider_id=self._claim_by_provider,
                node_of_claim=self._node_of_claim,
                claim_of_node=self._claim_of_node,
                awaiting=self._awaiting,
                unreadable=dict(self._unreadable),
            )
        return self._snapshot

    def subscribe(
        self, callback: Callable[[Sequence[StateChange[Any]]], None]
    ) -> Callable[[], None]:
        """Call ``callback`` with each applied batch of changes; returns the unsubscriber."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def synced(self) -> bool:
        """Every watched kind listed. (NodeClaims are paired with the Nodes they name at
        every `apply`: the pairing of a provider ID is re-derived whenever a Node or a
        NodeClaim naming it changes, so `unpaired` is empty by construction and is not
        walked here; at 10,000 NodeClaims that walk, on every change, was a fifth of the
        event loop's time.)"""
        cached = self._synced_at
        if cached is not None and cached[0] == self.generation:
            return cached[1]
        answer = self.watched <= self._synced_kinds
        self._synced_at = (self.generation, answer)
        if answer:
            self._unsynced_since = None
        elif self._unsynced_since is None:
            self._unsynced_since = self.clock.monotonic()
        return answer

    def unpaired(self) -> list[str]:
        """NodeClaims whose provider ID names a known Node that is paired with no
        NodeClaim: always empty (see `synced`); tests and diagnostics check it. (Two
        NodeClaims naming one instance cannot both be paired; the Node pairs with the one
        seen last, as Karpenter keys its nodes by provider ID.)"""
        out = []
        for name, claim in self._objects[kinds.NODECLAIM].items():
            pid = claim.status.provider_id
            node = self._node_by_provider.get(pid) if pid else None
            if node is not None and node not in self._claim_of_node:
                out.append(name)
        return out

    def unsynced_seconds(self) -> float:
        """How long state has been unsynced (0 while synced)."""
        if self.synced() or self._unsynced_since is None:
            return 0.0
        return self.clock.monotonic() - self._unsynced_since

    def kind_synced(self, *kinds_: str) -> bool:
        """Have the informers of all ``kinds_`` listed at least once?"""
        return all(kind in self._synced_kinds for kind in kinds_)

    def missing_kinds(self) -> list[str]:
        return sorted(self.watched - self._synced_kinds)

    def counts(self) -> dict[str, int]:
        return {kind: len(objects) for kind, objects in self._objects.items() if objects}


_INDEXERS: dict[str, Callable[[ClusterState, StateChange[Any]], None]] = {
    kinds.POD: ClusterState._index_pod,
    kinds.NODE: ClusterState._index_node,
    kinds.NODECLAIM: ClusterState._index_nodeclaim,
}
