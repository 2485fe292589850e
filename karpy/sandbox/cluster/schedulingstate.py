"""What the kube-scheduler stand-in remembers between passes, and what wakes it.

A store hook keeps four things current: the pods waiting to be scheduled, the bound pods
(their requests fill nodes), the Nodes, and two sets that make passes incremental:

- **fresh pods**: pending pods not tried since they appeared or their spec or labels
  changed. A pod that failed once is only tried again where something changed.
- **dirty nodes**: schedulable nodes that may have room or fit now that they did not
  have at the last pass: a node that became Ready, schedulable or untainted, whose labels
  or allocatable changed, that lost a pod, or that lost a nomination (a pending pod
  nominated to it was bound elsewhere, deleted, or nominated elsewhere: the room it held
  is free).

Everything else that can make a pod fit (a pod's own constraints on other pods, volumes,
DaemonSet changes) is handled by retrying such pods on every pass (see `placement`), or,
for DaemonSet changes, by marking every pending pod fresh. The scheduler's own writes —
an ``Unschedulable`` condition, a binding — change neither spec nor room, so they never
wake it: a pod that fits nowhere costs one pass and one write.

`snapshot` hands a pass immutable inputs (stored entries are never mutated) and the
marks it consumed; `settle` clears those marks unless they were renewed meanwhile, so an
event that arrives during a pass is never lost.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import attrs

from karpy.sandbox.cluster import facts

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change, Entry, Key

PODS = ("", "pods")
NODES = ("", "nodes")
DAEMONSETS = ("apps", "daemonsets")
# Changes to these may make a constrained pod (volumes, namespace selectors) fit.
CONTEXT = {
    ("", "namespaces"),
    ("", "persistentvolumeclaims"),
    ("", "persistentvolumes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csinodes"),
}


@attrs.frozen(slots=True)
class PassInput:
    """One pass's view of the cluster (entries are immutable; the tuples are copies)."""

    nodes: tuple[Entry, ...]
    pending: tuple[Entry, ...]
    bound: tuple[Entry, ...]
    fresh: frozenset[Key]
    dirty: frozenset[str]
    everything_fresh: bool


@attrs.frozen(slots=True)
class Marks:
    """The fresh and dirty marks a pass consumed, with the stamps they had."""

    fresh: dict[Key, int]
    dirty: dict[str, int]


def constrained(pod: facts.Obj) -> bool:
    """A pod whose fit can change with other pods or volumes anywhere in the cluster."""
    spec = facts.spec(pod)
    affinity = spec.get("affinity") or {}
    return bool(
        spec.get("topologySpreadConstraints")
        or affinity.get("podAffinity")
        or affinity.get("podAntiAffinity")
        or any(
            v.get("persistentVolumeClaim") or v.get("ephemeral") for v in spec.get("volumes") or ()
        )
    )


class SchedulingState:
    def __init__(self) -> None:
        self.pending: dict[Key, Entry] = {}
        self.bound: dict[Key, Entry] = {}
        self.nodes: dict[str, Entry] = {}
        self.fresh: dict[Key, int] = {}
        self.dirty: dict[str, int] = {}
        self.constrained: set[Key] = set()
        self.everything_fresh = False
        self.stamp = 0
        self.wake = asyncio.Event()

    # -- events ------------------------------------------------------------------------

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key == PODS:
            self._pod(change)
        elif kind.key == NODES:
            self._node(change)
        elif kind.key == DAEMONSETS:
            if change.prev is None or change.type == "DELETED" or _changed(change, "spec"):
                self.everything_fresh = True
                self.wake.set()
        elif kind.storage_key in CONTEXT and self.constrained:
            self.wake.set()

    def _pod(self, change: Change) -> None:
        key = change.key
        obj = change.entry.obj
        if change.type != "DELETED" and facts.awaits_scheduling(obj):
            prev = self.pending.get(key)
            self.pending[key] = change.entry
            if prev is not None:
                self._nomination_ends(prev.obj, facts.nominated_node(obj))
            if prev is None or _changed(change, "spec") or _changed(change, "labels"):
                self.fresh[key] = self.stamp
                if constrained(obj):
                    self.constrained.add(key)
                else:
                    self.constrained.discard(key)
                self.wake.set()
            return
        left = self.pending.pop(key, None)
        if left is not None:
            self.fresh.pop(key, None)
            self.constrained.discard(key)
            bound_to = facts.node_name(obj) if change.type != "DELETED" else ""
            self._nomination_ends(left.obj, bound_to)
        if change.type != "DELETED" and facts.node_name(obj) and not facts.pod_is_terminal(obj):
            if key not in self.bound and self.constrained:
                self.wake.set()  # a new neighbour can satisfy or break (anti-)affinity
            self.bound[key] = change.entry
            return
        gone = self.bound.pop(key, None)
        if gone is not None:
            self._freed(facts.node_name(gone.obj))

    def _nomination_ends(self, before: facts.Obj, now: str) -> None:
        """A pending pod's nomination no longer holds room where it did: its nominated
        node may take other pods now. ``now`` is where the pod is nominated or bound
        next; the same node means its room stays taken. The pod itself is not requeued
        (upstream ignores status-only updates of an unschedulable pod)."""
        nominated = facts.nominated_node(before)
        if nominated and nominated != now:
            self._freed(nominated)

    def _freed(self, node: str) -> None:
        entry = self.nodes.get(node)
        if entry is not None and facts.node_is_schedulable(entry.obj):
            self.dirty[node] = self.stamp
            self.wake.set()
        elif self.constrained:
            self.wake.set()

    def _node(self, change: Change) -> None:
        name = change.key[1]
        if change.type == "DELETED":
            self.nodes.pop(name, None)
            self.dirty.pop(name, None)
            if self.constrained:
                self.wake.set()
            return
        node = change.entry.obj
        self.nodes[name] = change.entry
        if not facts.node_is_schedulable(node):
            self.dirty.pop(name, None)
            return
        prev = change.prev.obj if change.prev is not None else None
        if prev is None or not facts.node_is_schedulable(prev) or _node_changed(prev, node):
            self.dirty[name] = self.stamp
            self.wake.set()

    # -- passes ------------------------------------------------------------------------

    def snapshot(self) -> tuple[PassInput, Marks]:
        self.stamp += 1
        marks = Marks(fresh=dict(self.fresh), dirty=dict(self.dirty))
        inputs = PassInput(
            nodes=tuple(self.nodes.values()),
            pending=tuple(self.pending.values()),
            bound=tuple(self.bound.values()),
            fresh=frozenset(marks.fresh),
            dirty=frozenset(marks.dirty),
            everything_fresh=self.everything_fresh,
        )
        self.everything_fresh = False
        return inputs, marks

    def settle(self, marks: Marks, *, keep_dirty: bool, retry: tuple[Key, ...] = ()) -> None:
        """Clear the marks a pass consumed, except those renewed since (and the nodes of a
        pass that ran out of offered pods, and pods it did not get to)."""
        for key, stamp in marks.fresh.items():
            if self.fresh.get(key) == stamp:
                del self.fresh[key]
        if keep_dirty:
            self.wake.set()
        else:
            for name, stamp in marks.dirty.items():
                if self.dirty.get(name) == stamp:
                    del self.dirty[name]
        for key in retry:
            if key in self.pending:
                self.fresh[key] = self.stamp
                self.wake.set()


def _changed(change: Change, part: str) -> bool:
    if change.prev is None:
        return True
    old, new = change.prev.obj, change.entry.obj
    if part == "labels":
        return facts.labels(old) != facts.labels(new)
    return old.get(part) != new.get(part)


def _node_changed(old: facts.Obj, new: facts.Obj) -> bool:
    """Changes that can give a node room or fit: labels, taints, allocatable."""
    return (
        facts.labels(old) != facts.labels(new)
        or facts.spec(old).get("taints") != facts.spec(new).get("taints")
        or facts.status(old).get("allocatable") != facts.status(new).get("allocatable")
    )
