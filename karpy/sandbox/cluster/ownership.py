"""Who owns whom: every object's uid and its dependents, kept current by a store hook.

Three stand-ins ask ownership questions at scale: a ReplicaSet's pods, a Deployment's
ReplicaSets, a DaemonSet's pods, and — for the garbage collector — "which objects named
this uid as an owner?" and "does this uid still exist?". Scanning 40,000 pods for each
would make every sync O(pods). Instead one hook sees every write to every kind (the
emulator calls it inside each commit) and keeps two maps: uid → object reference, and
owner uid → the references of its dependents. Upstream's garbage collector keeps the same
graph, fed by informers on every resource.

A reference is ``(storage key, namespace, name)``; the storage key is the kind's
``(group, plural)``, from which a writer gets the kind back through the registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.sandbox.cluster import facts

if TYPE_CHECKING:
    from collections.abc import Iterator

    from karpy.sandbox.apiserver.kinds import Kind, Obj
    from karpy.sandbox.apiserver.store import Change, Store

Ref = tuple[tuple[str, str], str, str]  # ((group, plural), namespace, name)


class Ownership:
    def __init__(self) -> None:
        self.by_uid: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}

    def scan(self, store: Store) -> None:
        """Index what is stored already (the hook sees only later writes)."""
        for state in store.states():
            for key, entry in state.objects.items():
                self._add((state.kind.storage_key, *key), entry.obj)

    def on_change(self, kind: Kind, change: Change) -> None:
        ref: Ref = (kind.storage_key, *change.key)
        if change.prev is not None:
            if change.type == "MODIFIED" and _same_identity(change.prev.obj, change.entry.obj):
                return  # most writes: status, labels, spec — not who owns whom
            self._remove(ref, change.prev.obj)
        if change.type != "DELETED":
            self._add(ref, change.entry.obj)

    def exists(self, uid: str) -> bool:
        return uid in self.by_uid

    def ref_of(self, uid: str) -> Ref | None:
        return self.by_uid.get(uid)

    def dependents(self, uid: str, resource: tuple[str, str] | None = None) -> Iterator[Ref]:
        """References of the objects that name ``uid`` as an owner (of one resource)."""
        for ref in list(self._dependents.get(uid, ())):
            if resource is None or ref[0] == resource:
                yield ref

    def _add(self, ref: Ref, obj: Obj) -> None:
        uid = facts.uid(obj)
        if uid:
            self.by_uid[uid] = ref
        for owner in facts.owner_uids(obj):
            self._dependents.setdefault(owner, set()).add(ref)

    def _remove(self, ref: Ref, obj: Obj) -> None:
        uid = facts.uid(obj)
        if uid and self.by_uid.get(uid) == ref:
            del self.by_uid[uid]
        for owner in facts.owner_uids(obj):
            members = self._dependents.get(owner)
            if members is not None:
                members.discard(ref)
                if not members:
                    del self._dependents[owner]


def _same_identity(old: Obj, new: Obj) -> bool:
    old_meta, new_meta = old["metadata"], new["metadata"]
    return bool(
        old_meta.get("uid") == new_meta.get("uid")
        and old_meta.get("ownerReferences") == new_meta.get("ownerReferences")
    )
