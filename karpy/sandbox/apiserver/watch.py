"""Watch streams: initial events, replay from history, selector transitions, bookmarks.

A `Watcher` is registered on its resource's state in the same synchronous step that
computes its initial events (synthetic ADDED for ``resourceVersion`` unset or "0", or
the history replay for ``resourceVersion=N``), so no write can fall between the two.
After that every committed `Change` is offered to it synchronously; the HTTP handler
drains the queue and writes one JSON line per event.

Events are filtered as kube-apiserver's cacher does: an object that starts matching the
watch's selectors arrives as ADDED, one that stops matching as DELETED (carrying the
previous object at the new resourceVersion), and changes invisible to the selector are
not sent at all.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.kinds import Obj, View

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.selectors import FieldSelector, LabelSelector
    from karpy.sandbox.apiserver.store import Change, Entry, ResourceState, Store

Encoder = Callable[[str, Obj, "bytes | None"], bytes]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
MAX_PENDING = 200_000  # queued events a slow watcher may have before it is closed


def _default_encoder(view: View) -> Encoder:
    def encode(event_type: str, obj: Obj, raw: bytes | None) -> bytes:
        body = view.encode(obj, raw)
        return b'{"type":"' + event_type.encode() + b'","object":' + body + b"}\n"

    return encode


class Watcher:
    def __init__(
        self,
        store: Store,
        state: ResourceState,
        view: View,
        *,
        namespace: str | None,
        label_selector: LabelSelector,
        field_selector: FieldSelector,
        field_getter: Callable[[Obj, str], str | None],
        encoder: Encoder | None = None,
    ) -> None:
        self.store = store
        self.state = state
        self.view = view
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self._field_getter = field_getter
        self.encode = encoder or _default_encoder(view)
        self.pending: deque[bytes] = deque()
        self.wake = asyncio.Event()
        self.closed = False
        self.abrupt = False

    # ------------------------------------------------------------------ filtering

    def matches(self, entry: Entry) -> bool:
        obj = entry.obj
        meta = obj["metadata"]
        if self.namespace is not None and meta.get("namespace", "") != self.namespace:
            return False
        if not self.label_selector.empty and not self.label_selector.matches(meta.get("labels")):
            return False
        if not self.field_selector.empty:
            external = self.view.external(obj)
            return self.field_selector.matches(lambda f: self._field_getter(external, f))
        return True

    def event_for(self, change: Change) -> bytes | None:
        now = change.type != "DELETED" and self.matches(change.entry)
        before = change.prev is not None and self.matches(change.prev)
        if now and before:
            return self.encode("MODIFIED", change.entry.obj, change.entry.raw)
        if now:
            return self.encode("ADDED", change.entry.obj, change.entry.raw)
        if before:
            if change.type == "DELETED":
                return self.encode("DELETED", change.entry.obj, change.entry.raw)
            assert change.prev is not None
            prev = change.prev.obj
            last = {**prev, "metadata": {**prev["metadata"], "resourceVersion": str(change.rv)}}
            return self.encode("DELETED", last, None)
        return None

    # ------------------------------------------------------------------ queue

    def offer(self, change: Change) -> None:
        if self.closed:
            return
        line = self.event_for(change)
        if line is not None:
            self.pending.append(line)
            self.wake.set()
            if len(self.pending) > MAX_PENDING:
                # kube-apiserver ends a watch whose client cannot keep up rather than
                # buffer without bound; the client re-lists or resumes.
                self.close(abrupt=False)

    def push(self, line: bytes) -> None:
        self.pending.append(line)
        self.wake.set()

    def bookmark(self, annotations: dict[str, str] | None = None) -> bytes:
        meta: dict[str, Any] = {"resourceVersion": str(self.store.rv)}
        if annotations:
            meta["annotations"] = annotations
        obj = {"kind": self.view.kind.kind, "apiVersion": self.view.api_version, "metadata": meta}
        return b'{"type":"BOOKMARK","object":' + orjson.dumps(obj) + b"}\n"

    def close(self, *, abrupt: bool) -> None:
        self.closed = True
        self.abrupt = abrupt
        self.state.watchers.discard(self)
        self.wake.set()

    def drain(self) -> list[bytes]:
        lines = list(self.pending)
        self.pending.clear()
        self.wake.clear()
        return lines


def expired_event(requested: int, floor: int) -> bytes:
    err = errors.expired(f"too old resource version: {requested} ({floor})")
    status = err.status
    return b'{"type":"ERROR","object":' + orjson.dumps(status) + b"}\n"


def start_watch(
    watcher: Watcher,
    resource_version: str | None,
    send_initial_events: bool,
) -> bytes | None:
    """Register `watcher` and queue its first events; returns an ERROR line instead when
    the requested version has left the watch window."""
    store, state = watcher.store, watcher.state
    initial: list[Entry] | None = None
    if send_initial_events or not resource_version or resource_version == "0":
        keys = store.keys_in(state, watcher.namespace)
        initial = [state.objects[k] for k in keys]
    else:
        requested = int(resource_version)
        if requested < state.watch_floor:
            return expired_event(requested, state.watch_floor)
        replay: list[Change] = []
        for change in reversed(state.changes):
            if change.rv <= requested:
                break
            replay.append(change)
        for change in reversed(replay):
            line = watcher.event_for(change)
            if line is not None:
                watcher.pending.append(line)
    if initial is not None:
        for entry in initial:
            if watcher.matches(entry):
                watcher.pending.append(watcher.encode("ADDED", entry.obj, entry.raw))
        if send_initial_events:
            watcher.pending.append(watcher.bookmark({INITIAL_EVENTS_END: "true"}))
    state.watchers.add(watcher)
    if watcher.pending:
        watcher.wake.set()
    return None
