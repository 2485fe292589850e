"""One pass of the kube-scheduler stand-in: where do the pending pods go?

The rules are karpy's own (`karpy.scheduling.solver.Scheduler`, with no NodePools, so only
existing capacity is tried), which is the point: the sandbox's scheduler places pods
exactly where karpy expects them to fit — resources, node selectors and affinity, taints
(only ``NoSchedule``/``NoExecute``; ``PreferNoSchedule`` is a preference upstream),
topology spread, pod (anti-)affinity, host ports, volumes. The capacity is every Ready,
schedulable Node that is not being deleted, as unmanaged `ClusterNode`s; bound pods and
the DaemonSet pods still to come take their room. Among nodes that fit, the first in
name order wins (karpy's order), not kube-scheduler's least-allocated scoring.

A pass runs off the event loop (``asyncio.to_thread``) on immutable inputs, and is made
incremental so that 8,000 nodes joining one by one do not each cost a pass over 40,000
pods against 8,000 nodes:

1. **Full solve** — pods never tried (fresh), pods without the ``Unschedulable``
   condition, and pods whose fit depends on other pods or volumes (spread, affinity,
   claims) are placed against all schedulable nodes.
2. **Incremental solve** — every other pending pod already failed against every node at
   some earlier pass, so it is tried only against the *dirty* nodes (joined, changed or
   freed since), and only as many pods of each group of identical pods as could fit
   there (`offers`): a deployment of 4,000 pods offers a hundred to three new nodes, not
   4,000. When room may be left over, the pass reports `PassResult.saturated` and the
   dirty nodes are tried again.

Records are projected from stored dicts and cached: a Node once per version
(``node_from_dict``); a pod once per group of identical pods (namespace, labels,
annotations, owners and spec but the node — a Deployment's pods are one group), every
other pod of the group, and every later version of a pod, as a copy of that record with
its own name, uid, node and status.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from karpy.apis.labels import AWS_WELL_KNOWN_LABELS, LABEL_HOSTNAME
from karpy.base.quantity import QuantityError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.offers import offer
from karpy.sandbox.cluster.unschedulable import NodeCensus, explain
from karpy.scheduling.context import build_context
from karpy.scheduling.daemonsets import daemonset_pod, daemonset_pods
from karpy.scheduling.nodes import cluster_nodes, node_from_dict
from karpy.scheduling.pods import PodFormatError, pod_from_dict
from karpy.scheduling.solver import ClusterSnapshot, Scheduler
from karpy.scheduling.volumelimits import attach_limits_from_dict
from karpy.scheduling.volumes import (
    VolumeCatalog,
    pv_from_dict,
    pvc_from_dict,
    storage_class_from_dict,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from karpy.sandbox.apiserver.store import Entry, Key
    from karpy.sandbox.cluster.schedulingstate import PassInput
    from karpy.scheduling.nodes import Node
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.results import Results

log = logging.getLogger("karpy.sandbox.cluster")

# Labels pods may select on besides Karpenter's: the provider's, and the hostname (which
# karpy refuses in NodePool requirements but kube-scheduler honours on existing nodes).
PROVIDER_LABELS: Final = AWS_WELL_KNOWN_LABELS | {LABEL_HOSTNAME}
IGNORED: Final = "ignored by karpenter: "
_PARSE_ERRORS = (PodFormatError, QuantityError, ValueError, TypeError, KeyError, AttributeError)


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
    saturated: bool = False  # some group filled all it offered: try the dirty nodes again
    retry: tuple[Key, ...] = ()  # pods the solver's time budget left out
    full: int = 0  # pods solved against every node
    incremental: int = 0  # pods solved against the dirty nodes
    seconds: float = 0.0


class _PodRecord:
    __slots__ = ("entry", "group", "pod", "problem")

    def __init__(self, entry: Entry, pod: Pod | None, problem: str) -> None:
        self.entry = entry
        self.pod = pod
        self.problem = problem
        self.group = -1


@attrs.define
class _Outcome:
    """What the solves of a pass decided, pooled."""

    placements: list[tuple[Pod, str]] = attrs.Factory(list)
    failed: dict[int, tuple[_PodRecord, str]] = attrs.Factory(dict)  # by id(pod)
    deferred: list[Key] = attrs.Factory(list)

    def collect(self, results: Results, records: Sequence[_PodRecord]) -> None:
        by_id = {id(r.pod): r for r in records}
        for existing in results.existing_nodes:
            self.placements.extend((pod, existing.name) for pod in existing.pods)
        for item in results.unschedulable:
            self.failed[id(item.pod)] = (by_id[id(item.pod)], item.render())
        self.deferred.extend((p.namespace, p.name) for p in results.deferred)


def _key(entry: Entry) -> Key:
    meta = entry.obj["metadata"]
    return (meta["namespace"], meta["name"])


def _like(prototype: Pod, obj: facts.Obj) -> Pod:
    """A pod of ``prototype``'s group: its own identity, node and status."""
    meta = obj["metadata"]
    return attrs.evolve(
        prototype,
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid") or ""),
        creation_timestamp=str(meta.get("creationTimestamp") or ""),
        node_name=facts.node_name(obj),
        phase=facts.pod_phase(obj),
        terminating=facts.is_deleting(obj),
        unschedulable_condition=any(
            c.get("type") == "PodScheduled" and c.get("reason") == "Unschedulable"
            for c in facts.status(obj).get("conditions") or ()
        ),
        nominated_node_name=str(facts.status(obj).get("nominatedNodeName") or ""),
    )


def _parsed(parse: Callable[[Any], Any], entries: Iterable[Entry]) -> list[Any]:
    """Each entry parsed; unusable objects are logged and left out of the pass."""
    out = []
    for entry in entries:
        try:
            out.append(parse(entry.obj))
        except _PARSE_ERRORS as exc:
            log.warning("scheduler: ignoring %s: %s", entry.obj["metadata"].get("name"), exc)
    return out


class Planner:
    """Turns a pass's inputs into bindings and messages; owns the projection caches."""

    def __init__(self) -> None:
        self.context = build_context([], [], provider_labels=PROVIDER_LABELS)
        self._pods: dict[Key, _PodRecord] = {}
        self._nodes: dict[str, tuple[Entry, Node]] = {}
        self._groups: dict[bytes, int] = {}
        self._prototypes: dict[int, Pod] = {}

    # -- projections -------------------------------------------------------------------

    def record(self, entry: Entry) -> _PodRecord:
        """The pod's record: parsed once per group of identical pods, then copied.

        Pods of one ReplicaSet or DaemonSet differ only in name, uid, creation time, node
        and status; their group (namespace, labels, annotations, owners and spec but the
        node) is also what makes them interchangeable when pods are offered."""
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
                if record.pod is not None:
                    self._prototypes[group] = record.pod
            else:
                record = _PodRecord(entry, _like(prototype, obj), "")
            record.group = group
        self._pods[key] = record
        return record

    def _parse(self, entry: Entry) -> _PodRecord:
        try:
            return _PodRecord(entry, pod_from_dict(entry.obj), "")
        except _PARSE_ERRORS as exc:
            return _PodRecord(entry, None, f"invalid pod: {exc}")

    def _group(self, shape: bytes) -> int:
        # A digest keeps the table small when every pod is unique (StatefulSets).
        return self._groups.setdefault(
            hashlib.blake2b(shape, digest_size=16).digest(), len(self._groups)
        )

    def node(self, entry: Entry) -> Node:
        name = entry.obj["metadata"]["name"]
        cached = self._nodes.get(name)
        if cached is not None and cached[0] is entry:
            return cached[1]
        node = node_from_dict(entry.obj)
        if any(t.effect == "PreferNoSchedule" for t in node.taints):
            node = attrs.evolve(
                node, taints=tuple(t for t in node.taints if t.effect != "PreferNoSchedule")
            )
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
        nodes = [(e, self.node(e)) for e in inputs.nodes]
        schedulable = [n for e, n in nodes if facts.node_is_schedulable(e.obj)]
        dirty = [n for n in schedulable if n.name in inputs.dirty]
        full, retry, broken = self._sort_pending(inputs)
        if not full and not broken and not (retry and dirty):
            return PassResult(seconds=time.perf_counter() - started)  # nothing can change
        bound = [r.pod for e in inputs.bound if (r := self.record(e)).pod is not None]
        base = self._snapshot(nodes, bound, around)
        outcome = _Outcome()
        if full:
            capacity = tuple(cluster_nodes(schedulable, []))
            outcome.collect(self._solve(attrs.evolve(base, capacity=capacity), full), full)
        offered: list[_PodRecord] = []
        saturated = False
        if retry and dirty:
            offered, saturated = self._incremental(base, bound, dirty, retry, outcome)
        return PassResult(
            placements=tuple(
                Placement(p.namespace, p.name, p.uid, node) for p, node in outcome.placements
            ),
            failures=self._failures(nodes, bound, outcome, broken),
            saturated=saturated,
            retry=tuple(outcome.deferred),
            full=len(full),
            incremental=len(offered),
            seconds=time.perf_counter() - started,
        )

    def _sort_pending(
        self, inputs: PassInput
    ) -> tuple[list[_PodRecord], list[_PodRecord], list[_PodRecord]]:
        """Pending pods for the full solve, for the incremental one, and unparseable ones."""
        full: list[_PodRecord] = []
        retry: list[_PodRecord] = []
        broken: list[_PodRecord] = []
        for entry in inputs.pending:
            record = self.record(entry)
            pod = record.pod
            if pod is None:
                broken.append(record)
            elif (
                inputs.everything_fresh
                or _key(entry) in inputs.fresh
                or not pod.unschedulable_condition
                or _constrained(pod)
            ):
                full.append(record)
            else:
                retry.append(record)
        return full, retry, broken

    def _incremental(
        self,
        base: ClusterSnapshot,
        bound: list[Pod],
        dirty: list[Node],
        retry: list[_PodRecord],
        outcome: _Outcome,
    ) -> tuple[list[_PodRecord], bool]:
        """Failed pods against the dirty nodes: the pods offered, and whether room may be
        left for more."""
        names = {n.name for n in dirty}
        placed = [attrs.evolve(p, node_name=node) for p, node in outcome.placements]
        # Pods on the dirty nodes take room; anti-affinity anywhere can keep pods out.
        near = [p for p in (*bound, *placed) if p.node_name in names or p.required_anti_affinity]
        groups: dict[int, list[Pod]] = {}
        by_id: dict[int, _PodRecord] = {}
        for record in retry:
            assert record.pod is not None
            groups.setdefault(record.group, []).append(record.pod)
            by_id[id(record.pod)] = record
        for members in groups.values():
            members.sort(key=lambda p: (p.creation_timestamp, p.name))
        chosen = offer(groups, dirty, near)
        offered = [by_id[id(pod)] for pod in chosen.pods]
        if not offered:
            return offered, False
        before = len(outcome.placements)
        capacity = tuple(cluster_nodes(dirty, []))
        snapshot = attrs.evolve(base, capacity=capacity, bound_pods=tuple(near))
        outcome.collect(self._solve(snapshot, offered), offered)
        groups_placed = (by_id[id(p)].group for p, _ in outcome.placements[before:])
        return offered, chosen.more_may_fit(groups_placed)

    def _solve(self, snapshot: ClusterSnapshot, records: Sequence[_PodRecord]) -> Results:
        pods = [r.pod for r in records if r.pod is not None]
        return Scheduler(self.context, snapshot).solve(pods)

    def _snapshot(
        self, nodes: list[tuple[Entry, Node]], bound: list[Pod], around: Surroundings
    ) -> ClusterSnapshot:
        usable = [e.obj for e in around.daemonsets if _parsed(daemonset_pod, [e])]
        daemon_pods = daemonset_pods(usable, [p for p in bound if p.is_daemonset_pod])
        namespaces = {
            str(e.obj["metadata"]["name"]): {
                **facts.labels(e.obj),
                "kubernetes.io/metadata.name": str(e.obj["metadata"]["name"]),
            }
            for e in around.namespaces
        }
        volumes = VolumeCatalog.build(
            _parsed(pvc_from_dict, around.claims),
            _parsed(pv_from_dict, around.volumes),
            _parsed(storage_class_from_dict, around.classes),
            dict(_parsed(attach_limits_from_dict, around.csinodes)),
        )
        return ClusterSnapshot(
            nodes=tuple(n for _, n in nodes),
            bound_pods=tuple(bound),
            daemonset_pods=tuple(daemon_pods),
            namespaces=namespaces,
            volumes=volumes,
        )

    def _failures(
        self,
        nodes: list[tuple[Entry, Node]],
        bound: list[Pod],
        outcome: _Outcome,
        broken: list[_PodRecord],
    ) -> tuple[Failure, ...]:
        """Messages for the pods that do not carry ``Unschedulable`` yet."""
        todo = [
            (r, why)
            for r, why in outcome.failed.values()
            if not facts.marked_unschedulable(r.entry.obj)
        ]
        todo += [(r, r.problem) for r in broken if not facts.marked_unschedulable(r.entry.obj)]
        if not todo:
            return ()
        used: dict[str, dict[str, int]] = {}
        active = ((p, p.node_name) for p in bound if not p.is_terminal)
        for pod, node in [*active, *outcome.placements]:
            node_used = used.setdefault(node, {})
            for resource, value in pod.requests.items():
                node_used[resource] = node_used.get(resource, 0) + value
        census = NodeCensus.take(nodes, used)
        by_group: dict[int, str] = {}
        out = []
        for record, why in todo:
            obj = record.entry.obj
            if record.pod is None or why.startswith(IGNORED):
                problem = why.removeprefix(IGNORED)
                message = (
                    f"0/{census.total} nodes are available: the sandbox scheduler cannot place "
                    f"this pod: {problem}."
                )
            else:
                group = record.group
                if group not in by_group:
                    by_group[group] = explain(record.pod, census)
                message = by_group[group]
            meta = obj["metadata"]
            out.append(Failure(meta["namespace"], meta["name"], str(meta.get("uid", "")), message))
        return tuple(out)


def _constrained(pod: Pod) -> bool:
    """Its fit can change with pods or volumes anywhere: always tried against all nodes."""
    return bool(
        pod.topology_spread
        or pod.required_affinity
        or pod.preferred_affinity
        or pod.required_anti_affinity
        or pod.preferred_anti_affinity
        or pod.volumes
    )
