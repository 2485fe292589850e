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
   freed since), and only as many pods of each group of identical pods as could possibly
   fit there (per node, the fewest of free/requested over the group's resources): a
   deployment of 4,000 pods offers a hundred to three new nodes, not 4,000. When a group
   fills every pod it offered, the pass reports `PassResult.saturated` and the dirty nodes
   are tried again.

Records are projected from stored dicts once per object version (``pod_from_dict``,
``node_from_dict``) and cached; a binding or status change re-projects a pod by copying
its cached record with the new node and phase instead of parsing it again.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final

import attrs
import orjson

from karpy.apis.labels import AWS_WELL_KNOWN_LABELS, LABEL_HOSTNAME
from karpy.base.quantity import QuantityError
from karpy.sandbox.cluster import facts
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
    from collections.abc import Callable, Iterable, Mapping, Sequence

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


def _key(entry: Entry) -> Key:
    meta = entry.obj["metadata"]
    return (meta["namespace"], meta["name"])


def _same_but_placement(old: facts.Obj, new: facts.Obj) -> bool:
    """Equal except for what binding and the kubelet change (node, status)."""
    old_meta, new_meta = old["metadata"], new["metadata"]
    for field in ("uid", "labels", "annotations", "ownerReferences"):
        if old_meta.get(field) != new_meta.get(field):
            return False
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    if old_spec.keys() - {"nodeName"} != new_spec.keys() - {"nodeName"}:
        return False
    return all(v == new_spec.get(k) for k, v in old_spec.items() if k != "nodeName")


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

    # -- projections -------------------------------------------------------------------

    def record(self, entry: Entry) -> _PodRecord:
        key = _key(entry)
        cached = self._pods.get(key)
        if cached is not None and cached.entry is entry:
            return cached
        if (
            cached is not None
            and cached.pod is not None
            and _same_but_placement(cached.entry.obj, entry.obj)
        ):
            obj = entry.obj
            pod = attrs.evolve(
                cached.pod,
                node_name=facts.node_name(obj),
                phase=facts.pod_phase(obj),
                terminating=facts.is_deleting(obj),
                unschedulable_condition=facts.marked_unschedulable(obj),
                nominated_node_name=str(facts.status(obj).get("nominatedNodeName") or ""),
            )
            record = _PodRecord(entry, pod, "")
            record.group = cached.group
            self._pods[key] = record
            return record
        try:
            record = _PodRecord(entry, pod_from_dict(entry.obj), "")
        except _PARSE_ERRORS as exc:
            record = _PodRecord(entry, None, f"invalid pod: {exc}")
        self._pods[key] = record
        return record

    def group_of(self, record: _PodRecord) -> int:
        """Pods with equal namespace, labels and spec are interchangeable to the solver."""
        if record.group < 0:
            obj = record.entry.obj
            shape = orjson.dumps(
                [obj["metadata"].get("namespace"), facts.labels(obj), obj.get("spec")],
                option=orjson.OPT_SORT_KEYS,
            )
            record.group = self._groups.setdefault(shape, len(self._groups))
        return record.group

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
            for record in self._pods.values():
                record.group = -1

    # -- a pass ------------------------------------------------------------------------

    def plan(self, inputs: PassInput, around: Surroundings) -> PassResult:
        started = time.perf_counter()
        self._forget(inputs)
        nodes = [(e, self.node(e)) for e in inputs.nodes]
        schedulable = [n for e, n in nodes if facts.node_is_schedulable(e.obj)]
        bound = [r.pod for e in inputs.bound if (r := self.record(e)).pod is not None]
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
        base = self._snapshot(nodes, bound, around)
        placements: list[tuple[Pod, str]] = []
        failed: dict[int, tuple[_PodRecord, str]] = {}
        deferred: list[Key] = []
        if full:
            capacity = tuple(cluster_nodes(schedulable, []))
            results = self._solve(attrs.evolve(base, capacity=capacity), full)
            self._collect(results, full, placements, failed, deferred)
        saturated = False
        offered: list[_PodRecord] = []
        dirty = [n for n in schedulable if n.name in inputs.dirty]
        if retry and dirty:
            names = {n.name for n in dirty}
            placed = [attrs.evolve(p, node_name=node) for p, node in placements]
            near = [
                p for p in (*bound, *placed) if p.node_name in names or p.required_anti_affinity
            ]
            offered, truncated = self._offer(retry, dirty, near)
            if offered:
                before = len(placements)
                snapshot = attrs.evolve(
                    base, capacity=tuple(cluster_nodes(dirty, [])), bound_pods=tuple(near)
                )
                results = self._solve(snapshot, offered)
                self._collect(results, offered, placements, failed, deferred)
                placed_groups: dict[int, int] = {}
                by_id = {id(r.pod): r for r in offered}
                for pod, _ in placements[before:]:
                    group = self.group_of(by_id[id(pod)])
                    placed_groups[group] = placed_groups.get(group, 0) + 1
                saturated = any(placed_groups.get(g, 0) >= n for g, n in truncated.items())
        failures = self._failures(nodes, bound, placements, failed, broken)
        return PassResult(
            placements=tuple(Placement(p.namespace, p.name, p.uid, node) for p, node in placements),
            failures=failures,
            saturated=saturated,
            retry=tuple(deferred),
            full=len(full),
            incremental=len(offered),
            seconds=time.perf_counter() - started,
        )

    def _solve(self, snapshot: ClusterSnapshot, records: Sequence[_PodRecord]) -> Results:
        pods = [r.pod for r in records if r.pod is not None]
        return Scheduler(self.context, snapshot).solve(pods)

    def _collect(
        self,
        results: Results,
        records: Sequence[_PodRecord],
        placements: list[tuple[Pod, str]],
        failed: dict[int, tuple[_PodRecord, str]],
        deferred: list[Key],
    ) -> None:
        by_id = {id(r.pod): r for r in records}
        for existing in results.existing_nodes:
            placements.extend((pod, existing.name) for pod in existing.pods)
        for item in results.unschedulable:
            failed[id(item.pod)] = (by_id[id(item.pod)], item.render())
        deferred.extend((p.namespace, p.name) for p in results.deferred)

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

    def _offer(
        self, retry: list[_PodRecord], dirty: list[Node], near: list[Pod]
    ) -> tuple[list[_PodRecord], dict[int, int]]:
        """Of each group of identical pods, as many as could fit on the dirty nodes; and
        the groups that offered fewer than they have (group -> pods offered)."""
        used: dict[str, dict[str, int]] = {}
        for pod in near:
            if pod.is_terminal:
                continue
            node_used = used.setdefault(pod.node_name, {})
            for resource, value in pod.requests.items():
                node_used[resource] = node_used.get(resource, 0) + value
        free = [
            {r: v - used.get(n.name, {}).get(r, 0) for r, v in n.allocatable.items()} for n in dirty
        ]
        groups: dict[int, list[_PodRecord]] = {}
        for record in retry:
            groups.setdefault(self.group_of(record), []).append(record)
        offered: list[_PodRecord] = []
        truncated: dict[int, int] = {}
        for group, members in groups.items():
            requests = {r: v for r, v in members[0].pod.requests.items() if v > 0}  # type: ignore[union-attr]
            room = sum(
                min((max(room.get(r, 0), 0) // v for r, v in requests.items()), default=0)
                for room in free
            )
            if room <= 0:
                continue
            if room < len(members):
                members.sort(key=lambda r: (r.pod.creation_timestamp, r.pod.name))  # type: ignore[union-attr]
                truncated[group] = room
            offered.extend(members[:room])
        return offered, truncated

    def _failures(
        self,
        nodes: list[tuple[Entry, Node]],
        bound: list[Pod],
        placements: list[tuple[Pod, str]],
        failed: Mapping[int, tuple[_PodRecord, str]],
        broken: list[_PodRecord],
    ) -> tuple[Failure, ...]:
        """Messages for the pods that do not carry ``Unschedulable`` yet."""
        todo = [
            (r, why) for r, why in failed.values() if not facts.marked_unschedulable(r.entry.obj)
        ]
        todo += [(r, r.problem) for r in broken if not facts.marked_unschedulable(r.entry.obj)]
        if not todo:
            return ()
        used: dict[str, dict[str, int]] = {}
        for pod, node in [*((p, p.node_name) for p in bound if not p.is_terminal), *placements]:
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
                group = self.group_of(record)
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
