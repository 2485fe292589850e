"""The emulator's storage: objects, one global resourceVersion, change history, watchers.

Objects live in per-resource dicts keyed by ``(namespace, name)``; a stored object is an
`Entry` that is never mutated after it is stored, so list responses, watch events and
history can share it and its JSON encoding (computed once, lazily, with orjson).

Every write takes the next value of one global counter as its resourceVersion (etcd's
revision) and appends a `Change` to its resource's history. The history serves three
purposes, each with its own horizon:

- watch resumption: the last ``history_size`` changes per resource form the watch
  cache's window; a watch from an older version gets a 410 ``Expired`` ERROR event with
  kube-apiserver's ``too old resource version: N (M)`` message;
- consistent paginated and ``resourceVersionMatch=Exact`` lists: a list at an older
  version is rebuilt by rolling back the changes made since, back to the compaction
  floor (etcd compaction, which runs every ``compaction_interval`` here as upstream's
  every five minutes, or on demand from tests);
- selector transitions on watches: a change carries the previous object so a watcher
  whose selector stops matching receives DELETED, and one that starts matching ADDED.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import attrs
import orjson

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.kinds import Kind, Obj, Registry

Key = tuple[str, str]  # (namespace or "", name)


class Watcher(Protocol):
    """An open watch as the store sees it (`karpy.sandbox.apiserver.watch.Watcher`): it is
    offered every change of its resource and closed when its history is compacted away."""

    def offer(self, change: Change) -> None: ...

    def close(self, *, abrupt: bool) -> None: ...


class Entry:
    """A stored object and its cached encodings; treat `obj` as immutable."""

    __slots__ = ("_item", "_raw", "obj")

    def __init__(self, obj: Obj) -> None:
        self.obj = obj
        self._raw: bytes | None = None
        self._item: bytes | None = None

    @property
    def raw(self) -> bytes:
        if self._raw is None:
            self._raw = orjson.dumps(self.obj)
        return self._raw

    @property
    def item(self) -> bytes:
        """The encoding inside a typed list: built-in lists omit items' kind/apiVersion."""
        if self._item is None:
            self._item = orjson.dumps(
                {k: v for k, v in self.obj.items() if k not in ("kind", "apiVersion")}
            )
        return self._item

    @property
    def rv(self) -> int:
        return int(self.obj["metadata"]["resourceVersion"])


@attrs.frozen(slots=True)
class Change:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    key: Key
    entry: Entry  # the object after the change; for DELETED its last state at `rv`
    prev: Entry | None


class ResourceState:
    """One resource's objects, history and open watches."""

    def __init__(self, kind: Kind, base_rv: int) -> None:
        self.kind = kind
        self.objects: dict[Key, Entry] = {}
        self._sorted: list[Key] | None = []
        self.changes: deque[Change] = deque()
        self.list_floor = base_rv  # oldest version a list can be served at
        self.watch_floor = base_rv  # a watch from below this is too old
        self.watchers: set[Watcher] = set()
        self.by_namespace: dict[str, set[Key]] = {}
        self.indexes: dict[str, dict[str | None, set[Key]]] = {f: {} for f in kind.indexed_fields}

    def sorted_keys(self) -> list[Key]:
        if self._sorted is None:
            self._sorted = sorted(self.objects)
        return self._sorted

    def put(self, key: Key, entry: Entry) -> None:
        old = self.objects.get(key)
        if old is None:
            self._sorted = None
            self.by_namespace.setdefault(key[0], set()).add(key)
        self._unindex(key, old)
        self.objects[key] = entry
        for name, index in self.indexes.items():
            index.setdefault(self.kind.field_labels[name](entry.obj), set()).add(key)

    def remove(self, key: Key) -> None:
        old = self.objects.pop(key, None)
        if old is not None:
            self._sorted = None
            self._unindex(key, old)
            members = self.by_namespace.get(key[0])
            if members is not None:
                members.discard(key)
                if not members:
                    del self.by_namespace[key[0]]

    def _unindex(self, key: Key, old: Entry | None) -> None:
        if old is None:
            return
        for name, index in self.indexes.items():
            value = self.kind.field_labels[name](old.obj)
            members = index.get(value)
            if members is not None:
                members.discard(key)
                if not members:
                    del index[value]

    def indexed(self, field: str, value: str) -> set[Key] | None:
        """Keys whose `field` equals `value`, or None when `field` has no index."""
        index = self.indexes.get(field)
        if index is None:
            return None
        return index.get(value or None, set())


ChangeHook = Callable[[Kind, Change], None]


class Snapshot:
    """Keys in order and how to read each as of the snapshot's version."""

    __slots__ = ("keys", "objects", "overlay")

    def __init__(
        self, keys: list[Key], overlay: dict[Key, Entry | None], objects: dict[Key, Entry]
    ) -> None:
        self.keys = keys
        self.overlay = overlay
        self.objects = objects

    def start_index(self, after: Key | None) -> int:
        return 0 if after is None else bisect.bisect_right(self.keys, after)

    def entry(self, key: Key) -> Entry | None:
        if self.overlay and key in self.overlay:
            return self.overlay[key]
        return self.objects.get(key)

    def count_from(self, index: int) -> int:
        if not self.overlay:
            return len(self.keys) - index
        return sum(1 for k in self.keys[index:] if self.entry(k) is not None)


class Store:
    def __init__(
        self,
        registry: Registry,
        history_size: int = 10_000,
        max_changes: int = 500_000,
    ) -> None:
        self.registry = registry
        self.history_size = history_size
        self.max_changes = max_changes
        self.rv = 0
        self._states: dict[tuple[str, str], ResourceState] = {}
        self.hooks: list[ChangeHook] = []
        # Every served resource's watch window starts now (a CRD's when it is
        # registered), so a resourceVersion from any list is a valid place to resume.
        for kind in registry.all():
            self.state(kind)

    # ------------------------------------------------------------------ states

    def state(self, kind: Kind) -> ResourceState:
        key = kind.storage_key
        state = self._states.get(key)
        if state is None:
            storage_kind = self.registry.get(*key) or kind
            state = ResourceState(storage_kind, self.rv)
            self._states[key] = state
        return state

    def drop_state(self, key: tuple[str, str]) -> None:
        state = self._states.pop(key, None)
        if state is not None:
            for watcher in list(state.watchers):
                watcher.close(abrupt=False)

    def states(self) -> list[ResourceState]:
        return list(self._states.values())

    def get_entry(self, kind: Kind, namespace: str, name: str) -> Entry | None:
        return self.state(kind).objects.get((namespace, name))

    # ------------------------------------------------------------------ writes

    def commit(
        self, kind: Kind, kind_type: str, key: Key, obj: Obj | None, prev: Entry | None
    ) -> Entry:
        """Store `obj` (None: delete `key`) at the next resourceVersion and tell watchers."""
        state = self.state(kind)
        self.rv += 1
        rv = self.rv
        if obj is None:
            assert prev is not None
            last = {**prev.obj, "metadata": {**prev.obj["metadata"], "resourceVersion": str(rv)}}
            entry = Entry(last)
            state.remove(key)
        else:
            obj["metadata"]["resourceVersion"] = str(rv)
            entry = Entry(obj)
            state.put(key, entry)
        change = Change(rv, kind_type, key, entry, prev)
        self._record(state, change)
        for watcher in list(state.watchers):
            watcher.offer(change)
        for hook in list(self.hooks):
            hook(state.kind, change)
        return entry

    def _record(self, state: ResourceState, change: Change) -> None:
        changes = state.changes
        changes.append(change)
        if len(changes) > self.history_size:
            state.watch_floor = max(state.watch_floor, changes[-self.history_size].rv - 1)
        if len(changes) > self.max_changes:
            dropped = changes.popleft()
            state.list_floor = max(state.list_floor, dropped.rv)

    def compact(self, to_rv: int | None = None, *, keep_watch_window: bool = False) -> int:
        """Forget history up to `to_rv` (default: everything), as etcd compaction does.

        With ``keep_watch_window`` (periodic compaction) the watch cache's window is
        kept, as kube-apiserver's watch cache survives etcd compaction; otherwise
        (tests forcing 410s) watches from before `to_rv` expire too.
        """
        target = self.rv if to_rv is None else min(to_rv, self.rv)
        for state in self._states.values():
            changes = state.changes
            keep = self.history_size if keep_watch_window else 0
            while changes and changes[0].rv <= target and len(changes) > keep:
                changes.popleft()
            state.list_floor = max(state.list_floor, target)
            if not keep_watch_window:
                state.watch_floor = max(state.watch_floor, target)
        return target

    # ------------------------------------------------------------------ reads

    def keys_in(self, state: ResourceState, namespace: str | None) -> list[Key]:
        keys = state.sorted_keys()
        if namespace is None:
            return keys
        lo = bisect.bisect_left(keys, (namespace, ""))
        hi = bisect.bisect_left(keys, (namespace + "\x00", ""))
        return keys[lo:hi]

    def snapshot(
        self,
        state: ResourceState,
        at_rv: int | None,
        namespace: str | None,
        candidates: set[Key] | None = None,
    ) -> Snapshot:
        """The resource's keys in order as of `at_rv` (None: now), optionally only
        `candidates` (from an index) and the objects that existed then."""
        overlay: dict[Key, Entry | None] = {}
        if at_rv is not None and at_rv < self.rv:
            if at_rv < state.list_floor:
                raise errors.expired("The resourceVersion for the provided list is too old.")
            for change in reversed(state.changes):
                if change.rv <= at_rv:
                    break
                overlay[change.key] = None if change.type == "ADDED" else change.prev
        if candidates is not None:
            keys = {k for k in candidates if namespace is None or k[0] == namespace}
            keys.update(k for k in overlay if namespace is None or k[0] == namespace)
            ordered = sorted(keys)
        elif overlay:
            keys = set(self.keys_in(state, namespace))
            keys.update(k for k in overlay if namespace is None or k[0] == namespace)
            ordered = sorted(keys)
        else:
            ordered = self.keys_in(state, namespace)
        return Snapshot(ordered, overlay, state.objects)

    def all_objects(self, kind: Kind, namespace: str | None = None) -> list[Entry]:
        state = self.state(kind)
        return [state.objects[k] for k in self.keys_in(state, namespace)]

    def namespaced_keys(self, kind: Kind, namespace: str) -> list[Key]:
        return sorted(self.state(kind).by_namespace.get(namespace, ()))

    def watchers(self) -> Iterator[Watcher]:
        for state in self._states.values():
            yield from list(state.watchers)

    def describe(self) -> dict[str, Any]:
        return {
            "resourceVersion": self.rv,
            "resources": {
                f"{s.kind.qualified}": {
                    "objects": len(s.objects),
                    "changes": len(s.changes),
                    "watchers": len(s.watchers),
                    "watchFloor": s.watch_floor,
                    "listFloor": s.list_floor,
                }
                for s in self._states.values()
            },
        }
