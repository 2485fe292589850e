"""One pass of the kube-scheduler stand-in: where do the pending pods go?

The stand-in judges karpy's plans, so it places pods by kube-scheduler's rules, never by
karpy's: each pod goes through `scheduleone.Cycle` (filter, score, select, assume, as
``pkg/scheduler/schedule_one.go``), one at a time in queue order (higher
``spec.priority`` first, then older first, as the PrioritySort queue), each seeing the
pods placed before it. The capacity is every Ready, schedulable Node that is not being
deleted; bound pods take their room, DaemonSet pods still to come take theirs
(upstream they would preempt lower-priority pods; the sandbox's DaemonSet controller
binds them directly, so their room is kept free instead), and pending pods nominated to
a node (``status.nominatedNodeName``) hold theirs there against pods of lower or equal
priority until the pass places them (`nominated`).

A pass runs off the event loop (``asyncio.to_thread``) on immutable inputs, and is made
incremental so that 8,000 nodes joining one by one do not each cost a pass over 40,000
pods against 8,000 nodes:

1. **Full** — pods never tried (fresh), pods without the ``Unschedulable`` condition,
   and pods whose fit depends on other pods or volumes (spread, affinity, claims) are
   scheduled against all schedulable nodes.
2. **Incremental** — every other pending pod already failed against every node at some
   earlier pass and its fit depends on the node alone, so it is tried only against the
   *dirty* nodes (joined, changed or freed since).

Pods of one group (same namespace, labels, annotations, owners and spec but the node —
a Deployment's pods) nominated to the same node or to none are alike: once one fits
nowhere in a pass, the rest is not tried again in that pass (they would fail for the
same reasons; a later pass retries them). Records are parsed once per group and per node version.
"""

from __future__ import annotations

import hashlib
import logging
import random
import time
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from karpy.base.quantity import QuantityError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.kubepod import (
    NodeSpec,
    PodInfo,
    first_untolerated,
    like,
    node_spec,
    pod_info,
)
from karpy.sandbox.cluster.kubevolumes import VolumeView
from karpy.sandbox.cluster.nodematch import node_accepts
from karpy.sandbox.cluster.nominated import Reservations
from karpy.sandbox.cluster.scheduleone import HARD_EFFECTS, Cycle, Scoring
from karpy.sandbox.cluster.unschedulable import NoFit, excluded

if TYPE_CHECKING:
    from collections import Counter

    from karpy.sandbox.apiserver.store import Entry, Key
    from karpy.sandbox.cluster.schedulingstate import PassInput

log = logging.getLogger("karpy.sandbox.cluster")

_PARSE_ERRORS = (QuantityError, ValueError, TypeError, KeyError, AttributeError)


@attrs.frozen(slots=True)
class Surroundings:
    """The other objects a pass reads: DaemonSets, namespaces, volumes."""

    daemonsets: tuple[Entry, ...] = ()
    namespaces: tuple[Entry, ...] = ()
    claims: tuple[Entry, ...] = ()
    volumes: tuple[Entry, ...] = ()
    classes: tuple[Entry, ...] = ()
    csinodes: tuple[Entry, ...] = ()


@attrs.frozen(slots=True)
class Placement:
    namespace: str
    name: str
    uid: str
    node: str


@attrs.frozen(slots=True)
class Failure:
    """A pod that fits nowhere and does not say so yet: its condition's message."""

    namespace: str
    name: str
    uid: str
    message: str


@attrs.frozen(slots=True)
class PassResult:
    placements: tuple[Placement, ...] = ()
    failures: tuple[Failure, ...] = ()
    saturated: bool = False  # kept for the loop's contract: passes now run to completion
    retry: tuple[Key, ...] = ()
    full: int = 0  # pods scheduled against every node
    incremental: int = 0  # pods tried against the dirty nodes (a failed group tries once)
    seconds: float = 0.0


class _PodRecord:
    __slots__ = ("entry", "group", "info", "problem")

    def __init__(self, entry: Entry, info: PodInfo | None, problem: str) -> None:
        self.entry = entry
        self.info = info
        self.problem = problem
        self.group = -1


def _key(entry: Entry) -> Key:
    meta = entry.obj["metadata"]
    return (meta["namespace"], meta["name"])


def _queue_order(record: _PodRecord) -> tuple[int, str, str]:
    obj = record.entry.obj
    priority = facts.spec(obj).get("priority") or 0
    meta = facts.meta(obj)
    return (-int(priority), str(meta.get("creationTimestamp") or ""), str(meta.get("name", "")))


class Planner:
    """Turns a pass's inputs into bindings and messages; owns the parse caches."""

    def __init__(self, *, scoring: Scoring = "LeastAllocated", seed: int = 0) -> None:
        self.scoring: Scoring = scoring
        self.rng = random.Random(seed)
        self._pods: dict[Key, _PodRecord] = {}
        self._nodes: dict[str, tuple[Entry, NodeSpec]] = {}
        self._groups: dict[bytes, int] = {}
        self._prototypes: dict[int, PodInfo] = {}

    # -- parsing -----------------------------------------------------------------------

    def record(self, entry: Entry) -> _PodRecord:
        """The pod's record: parsed once per group of identical pods, then copied."""
        key = _key(entry)
        cached = self._pods.get(key)
        if cached is not None and cached.entry is entry:
            return cached
        obj = entry.obj
        spec = obj.get("spec") or {}
        if any("ephemeral" in v for v in spec.get("volumes") or ()):
            # Ephemeral claims are named after the pod: no two such pods are alike.
            record = self._parse(entry)
            record.group = self._group(orjson.dumps(key))
        else:
            meta = obj["metadata"]
            shape = orjson.dumps(
                [meta.get("namespace"), meta.get("labels"), meta.get("annotations"),
                 meta.get("ownerReferences"), {k: v for k, v in spec.items() if k != "nodeName"}],
                option=orjson.OPT_SORT_KEYS,
            )  # fmt: skip
            group = self._group(shape)
            prototype = self._prototypes.get(group)
            if prototype is None:
                record = self._parse(entry)
                if record.info is not None:
                    self._prototypes[group] = record.info
            else:
                record = _PodRecord(entry, like(prototype, obj), "")
            record.group = group
        self._pods[key] = record
        return record

    def _parse(self, entry: Entry) -> _PodRecord:
        try:
            return _PodRecord(entry, pod_info(entry.obj), "")
        except _PARSE_ERRORS as exc:
            return _PodRecord(entry, None, f"invalid pod: {exc}")

    def _group(self, shape: bytes) -> int:
        # A digest keeps the table small when every pod is unique (StatefulSets).
        return self._groups.setdefault(
            hashlib.blake2b(shape, digest_size=16).digest(), len(self._groups)
        )

    def node(self, entry: Entry) -> NodeSpec:
        name = entry.obj["metadata"]["name"]
        cached = self._nodes.get(name)
        if cached is not None and cached[0] is entry:
            return cached[1]
        node = node_spec(entry.obj)
        self._nodes[name] = (entry, node)
        return node

    def _forget(self, inputs: PassInput) -> None:
        """Drop cached records of objects that are gone (amortised: when twice as big)."""
        live_pods = len(inputs.pending) + len(inputs.bound)
        if len(self._pods) > 2 * live_pods + 1000:
            keep = {_key(e) for e in (*inputs.pending, *inputs.bound)}
            self._pods = {k: v for k, v in self._pods.items() if k in keep}
        if len(self._nodes) > 2 * len(inputs.nodes) + 100:
            names = {e.obj["metadata"]["name"] for e in inputs.nodes}
            self._nodes = {k: v for k, v in self._nodes.items() if k in names}
        if len(self._groups) > 100_000:
            self._groups.clear()
            self._prototypes.clear()
            self._pods.clear()

    # -- a pass ------------------------------------------------------------------------

    def plan(self, inputs: PassInput, around: Surroundings) -> PassResult:
        started = time.perf_counter()
        self._forget(inputs)
        nodes = [self.node(e) for e in inputs.nodes]
        dirty = sorted(n.name for n in nodes if n.schedulable and n.name in inputs.dirty)
        full, retry, broken = self._sort_pending(inputs)
        if not full and not broken and not (retry and dirty):
            return PassResult(seconds=time.perf_counter() - started)  # nothing can change
        nominated = Reservations(
            r.info for r in (*full, *retry) if r.info is not None and r.info.nominated
        )
        bound = [
            r.info
            for e in inputs.bound
            if (r := self.record(e)).info is not None and not facts.pod_is_terminal(e.obj)
        ]
        cycle = Cycle(
            nodes,
            bound,
            reserved=_daemonset_room(nodes, bound, around.daemonsets),
            nominated=nominated,
            namespace_labels=_namespace_labels(around.namespaces),
            volumes=VolumeView.build(around.claims, around.volumes, around.classes),
            scoring=self.scoring,
            rng=self.rng,
        )
        placements: list[Placement] = []
        failed: list[tuple[_PodRecord, NoFit]] = []
        self._run(cycle, full, None, placements, failed)
        tried = 0
        if retry and dirty:
            among = [cycle.states[name] for name in dirty]
            tried = self._run(cycle, retry, among, placements, failed, among_names=frozenset(dirty))
        return PassResult(
            placements=tuple(placements),
            failures=self._failures(inputs, failed, broken),
            full=len(full),
            incremental=tried,
            seconds=time.perf_counter() - started,
        )

    @staticmethod
    def _run(
        cycle: Cycle,
        records: list[_PodRecord],
        among: Any,
        placements: list[Placement],
        failed: list[tuple[_PodRecord, NoFit]],
        *,
        among_names: frozenset[str] = frozenset(),
    ) -> int:
        """Schedule ``records`` in queue order; how many went through a cycle.

        A group's pods are alike only if nominated to the same node (or none): a pod sees
        the room its own nomination holds, its siblings do not, so a pod nominated
        elsewhere may fit where its group failed."""
        hopeless: dict[tuple[int, str], NoFit] = {}
        tried = 0
        for record in sorted(records, key=_queue_order):
            info = record.info
            assert info is not None
            alike = (record.group, info.nominated)
            known = hopeless.get(alike)
            outcome: str | NoFit
            if known is None:
                tried += 1
                outcome = cycle.schedule(info, among, among_names)
            else:
                outcome = known
            if isinstance(outcome, str):
                placements.append(Placement(info.namespace, info.name, info.uid, outcome))
            else:
                hopeless[alike] = outcome
                failed.append((record, outcome))
        return tried

    def _sort_pending(
        self, inputs: PassInput
    ) -> tuple[list[_PodRecord], list[_PodRecord], list[_PodRecord]]:
        """Pending pods for the full pass, for the incremental one, and unparseable ones."""
        full: list[_PodRecord] = []
        retry: list[_PodRecord] = []
        broken: list[_PodRecord] = []
        for entry in inputs.pending:
            record = self.record(entry)
            info = record.info
            if info is None:
                broken.append(record)
            elif (
                inputs.everything_fresh
                or _key(entry) in inputs.fresh
                or not facts.marked_unschedulable(entry.obj)
                or info.constrained
            ):
                full.append(record)
            else:
                retry.append(record)
        return full, retry, broken

    @staticmethod
    def _failures(
        inputs: PassInput,
        failed: list[tuple[_PodRecord, NoFit]],
        broken: list[_PodRecord],
    ) -> tuple[Failure, ...]:
        """Messages for the pods that do not carry ``Unschedulable`` yet."""
        todo = [(r, fit) for r, fit in failed if not facts.marked_unschedulable(r.entry.obj)]
        todo += [
            (r, NoFit(prefilter=f"the sandbox scheduler cannot place this pod: {r.problem}"))
            for r in broken
            if not facts.marked_unschedulable(r.entry.obj)
        ]
        if not todo:
            return ()
        total = len(inputs.nodes)
        outside: Counter[str] = excluded(inputs.nodes)
        out = []
        for record, fit in todo:
            meta = record.entry.obj["metadata"]
            message = fit.render(total, outside)
            out.append(Failure(meta["namespace"], meta["name"], str(meta.get("uid", "")), message))
        return tuple(out)


def _namespace_labels(namespaces: tuple[Entry, ...]) -> dict[str, dict[str, str]]:
    return {
        str(e.obj["metadata"]["name"]): {
            **facts.labels(e.obj),
            "kubernetes.io/metadata.name": str(e.obj["metadata"]["name"]),
        }
        for e in namespaces
    }


def _daemonset_room(
    nodes: list[NodeSpec], bound: list[PodInfo], daemonsets: tuple[Entry, ...]
) -> dict[str, list[PodInfo]]:
    """The DaemonSet pods each schedulable node will get but has not yet."""
    if not daemonsets:
        return {}
    running = {(p.node_name, p.controller_uid) for p in bound if p.controller_uid}
    out: dict[str, list[PodInfo]] = {}
    for entry in daemonsets:
        obj = entry.obj
        template = facts.spec(obj).get("template") or {}
        meta = facts.meta(obj)
        try:
            pod = pod_info({
                "metadata": {**(template.get("metadata") or {}),
                             "namespace": meta.get("namespace"), "name": meta.get("name")},
                "spec": template.get("spec") or {},
            })  # fmt: skip
        except _PARSE_ERRORS as exc:
            log.warning("scheduler: ignoring daemonset %s: %s", meta.get("name"), exc)
            continue
        uid = facts.uid(obj)
        spec = template.get("spec") or {}
        for node in nodes:
            if not node.schedulable or (node.name, uid) in running:
                continue
            if not node_accepts(spec, node.labels, node.name):
                continue
            if first_untolerated(node.taints, pod.tolerations, HARD_EFFECTS) is not None:
                continue
            out.setdefault(node.name, []).append(pod)
    return out
