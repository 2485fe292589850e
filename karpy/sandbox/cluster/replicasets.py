"""kube-controller-manager's ReplicaSet controller, in process.

A ReplicaSet keeps ``spec.replicas`` *active* pods (neither finished nor being deleted)
that it controls: it creates the missing ones from its template (``<rs>-`` plus five
random characters, a controller reference, the template's labels) and deletes the extra
ones in upstream's order — unassigned pods first, then pending, then not ready, then the
lowest ``controller.kubernetes.io/pod-deletion-cost``, then those sharing a node with
more pods of the same Deployment, then the most recently ready, then the most restarted,
then the newest (times on upstream's logarithmic scale) — so a scale-down takes the pods
that cost least to lose. A pod that disappears (evicted, deleted, garbage
collected) is replaced on the next sync, and a pod being deleted gracefully no longer
counts, so its replacement starts while it terminates, as upstream.

The status (``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``,
``availableReplicas`` honouring ``minReadySeconds``, ``observedGeneration``) is written
only when it changes. A sync counts the ReplicaSet's pods, so only pod changes that move
those counts enqueue it: a pod added, deleted or stopping being active at once; a pod
turning Ready (or relabelled) after ``status_delay``, so thousands of pods starting cost
a recount per ReplicaSet per delay, not one per pod; binding and scheduling conditions
not at all. Creation is bounded per sync (``burst``, half of upstream's 500) and the
rest follows on the next turn, so a 4,000-replica ReplicaSet does not hold the event
loop. Not modelled: adopting matching pods that have no controller, and the
``ReplicaFailure`` condition.
"""

from __future__ import annotations

import functools
import math
import re
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.apiserver.tables import parse_time
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.podtemplate import pod_from_template
from karpy.sandbox.cluster.workqueue import WorkQueue

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change, Entry, Key
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.ownership import Ownership

REPLICASETS = ("apps", "replicasets")
PODS = ("", "pods")
DEFAULT_BURST = 250
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_INT = re.compile(r"[+-]?[0-9]+")


def deletion_cost(pod: facts.Obj) -> int:
    """``controller.kubernetes.io/pod-deletion-cost`` as upstream reads it: a base-10
    int32, anything else 0 (``GetDeletionCostFromPodAnnotations``'s error is ignored)."""
    text = (facts.meta(pod).get("annotations") or {}).get(DELETION_COST, "")
    if not _INT.fullmatch(text):
        return 0
    value = int(text)
    return value if -(2**31) <= value < 2**31 else 0


def _ready_time(pod: facts.Obj) -> float:
    """When the pod became Ready (0: not ready or unknown, upstream's zero time)."""
    if not facts.pod_is_ready(pod):
        return 0.0
    cond = facts.condition(pod, "Ready") or {}
    return parse_time(str(cond.get("lastTransitionTime") or "")) or 0.0


def _log_rank(then: float, now: float) -> int:
    elapsed = (now - then) * 1e9  # nanoseconds, as Go's time.Duration
    return int(math.log2(elapsed)) if elapsed > 0 else -1


def _earlier_by_time(t1: float, t2: float, uid1: str, uid2: str, now: float) -> bool | None:
    """Step 6/8 of ``Less`` for two different times (None when equal): the more recent
    first, compared on a logarithmic scale (``LogarithmicScaleDown``, on since 1.22),
    ties broken by UID; a zero time comes first."""
    if t1 == t2:
        return None
    if not now or not t1 or not t2:
        return (not t1) if (not t1 or not t2) else t1 > t2
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    return uid1 < uid2 if diff == 0 else diff < 0


def _max_restarts(pod: facts.Obj) -> int:
    return max((int(s.get("restartCount") or 0)
                for s in facts.status(pod).get("containerStatuses") or ()
                if isinstance(s, dict)), default=0)  # fmt: skip


def _less(a: facts.Obj, b: facts.Obj, rank_a: int, rank_b: int, now: float) -> bool:
    """``ActivePodsWithRanks.Less``: should ``a`` be deleted before ``b``?"""
    node_a, node_b = facts.node_name(a) or "", facts.node_name(b) or ""
    if node_a != node_b and (not node_a or not node_b):
        return not node_a  # 1. unassigned first
    phase_a = _PHASE_RANK.get(facts.pod_phase(a), 0)  # upstream's map: others count as 0
    phase_b = _PHASE_RANK.get(facts.pod_phase(b), 0)
    if phase_a != phase_b:
        return phase_a < phase_b  # 2. Pending < Unknown < Running
    ready_a, ready_b = facts.pod_is_ready(a), facts.pod_is_ready(b)
    if ready_a != ready_b:
        return not ready_a  # 3. not ready first
    cost_a, cost_b = deletion_cost(a), deletion_cost(b)
    if cost_a != cost_b:
        return cost_a < cost_b  # 4. lower pod-deletion-cost first
    if rank_a != rank_b:
        return rank_a > rank_b  # 5. doubled up first
    uid_a, uid_b = facts.uid(a) or "", facts.uid(b) or ""
    if ready_a and ready_b:  # 6. ready for less time first
        verdict = _earlier_by_time(_ready_time(a), _ready_time(b), uid_a, uid_b, now)
        if verdict is not None:
            return verdict
    if _max_restarts(a) != _max_restarts(b):
        return _max_restarts(a) > _max_restarts(b)  # 7. more restarts first
    created_a = parse_time(str(facts.meta(a).get("creationTimestamp") or "")) or 0.0
    created_b = parse_time(str(facts.meta(b).get("creationTimestamp") or "")) or 0.0
    verdict = _earlier_by_time(created_a, created_b, uid_a, uid_b, now)  # 8. newer first
    return bool(verdict)


def _controller_uid(obj: facts.Obj) -> str | None:
    ref = facts.controller_ref(obj)
    return str(ref.get("uid") or "") or None if ref is not None else None


def pods_to_delete(
    pods: list[Entry], count: int, related: Iterable[Entry] | None = None, now: float = 0.0
) -> list[Entry]:
    """The ``count`` pods a scale-down removes, in upstream's order (``getPodsToDelete``):
    ``ActivePodsWithRanks`` where a pod's rank is how many active ``related`` pods (those
    of every ReplicaSet of the same owner; default ``pods``) share its node, and times are
    compared on a logarithmic scale from ``now`` (0: plainly). Go's sort is not stable;
    here equal pods keep name order."""
    on_node: dict[str, int] = {}
    for entry in pods if related is None else related:
        if facts.pod_is_active(entry.obj):
            node = facts.node_name(entry.obj) or ""
            on_node[node] = on_node.get(node, 0) + 1
    ranks = {id(e): on_node.get(facts.node_name(e.obj) or "", 0) for e in pods}

    def compare(x: Entry, y: Entry) -> int:
        if _less(x.obj, y.obj, ranks[id(x)], ranks[id(y)], now):
            return -1
        if _less(y.obj, x.obj, ranks[id(y)], ranks[id(x)], now):
            return 1
        name_x, name_y = str(x.obj["metadata"]["name"]), str(y.obj["metadata"]["name"])
        return (name_x > name_y) - (name_x < name_y)

    return sorted(pods, key=functools.cmp_to_key(compare))[:count]


class ReplicaSetController:
    def __init__(
        self,
        access: ClusterAccess,
        ownership: Ownership,
        *,
        burst: int = DEFAULT_BURST,
        status_delay: float = 0.2,
    ) -> None:
        self.access = access
        self.ownership = ownership
        self.burst = burst
        self.status_delay = status_delay
        self.queue: WorkQueue[Key] = WorkQueue("replicaset-controller", self.sync, debounce=0.02)

    # -- events ------------------------------------------------------------------------

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key == REPLICASETS:
            if change.type != "DELETED" and not _status_only(change):
                self.queue.add(change.key)
        elif kind.key == PODS:
            pod = change.entry.obj
            if change.prev is None or change.type == "DELETED":
                self._enqueue_owner(pod)
                return
            old = change.prev.obj
            if facts.controlled_by(old, "ReplicaSet") != facts.controlled_by(pod, "ReplicaSet"):
                self._enqueue_owner(old)
                self._enqueue_owner(pod)
            elif facts.pod_is_active(old) != facts.pod_is_active(pod):
                self._enqueue_owner(pod)
            elif facts.pod_is_ready(old) != facts.pod_is_ready(pod) or facts.labels(
                old
            ) != facts.labels(pod):
                # Only the status counts change: batch those (a rollout of 4,000 pods
                # would otherwise re-count the ReplicaSet per pod).
                self._enqueue_owner(pod, delay=self.status_delay)

    def _enqueue_owner(self, pod: facts.Obj, *, delay: float = 0.0) -> None:
        owner = facts.controlled_by(pod, "ReplicaSet")
        if owner is None:
            return
        ref = self.ownership.ref_of(owner)
        if ref is not None and ref[0] == REPLICASETS:
            self.queue.add_after((ref[1], ref[2]), delay)

    def resync(self) -> None:
        for entry in self.access.entries(self.access.replicasets):
            meta = entry.obj["metadata"]
            self.queue.add((meta["namespace"], meta["name"]))

    # -- reconcile ---------------------------------------------------------------------

    def pods_of(self, rs: facts.Obj) -> list[Entry]:
        uid = facts.uid(rs)
        pods = self.access.state(self.access.pods)
        found = []
        for _, namespace, name in self.ownership.dependents(uid, PODS):
            entry = pods.objects.get((namespace, name))
            if entry is not None and facts.controlled_by(entry.obj, "ReplicaSet") == uid:
                found.append(entry)
        return found

    def related_pods(self, rs: facts.Obj) -> list[Entry]:
        """The pods of every ReplicaSet with ``rs``'s controller (a Deployment's old and
        new ones), or of ``rs`` alone without one (upstream's ``getIndirectlyRelatedPods``)."""
        owner = _controller_uid(rs)
        if owner is None:
            return self.pods_of(rs)
        namespace = facts.meta(rs).get("namespace")
        found: list[Entry] = []
        for entry in self.access.entries(self.access.replicasets):
            other = entry.obj
            if facts.meta(other).get("namespace") == namespace and _controller_uid(other) == owner:
                found += self.pods_of(other)
        return found

    def sync(self, key: Key) -> float | None:
        entry = self.access.entry(self.access.replicasets, *key)
        if entry is None:
            return None
        rs = entry.obj
        active = [p for p in self.pods_of(rs) if facts.pod_is_active(p.obj)]
        again: float | None = None
        if not facts.is_deleting(rs):
            want = int(facts.spec(rs).get("replicas", 1))
            if len(active) < want:
                missing = want - len(active)
                self._create(rs, min(missing, self.burst))
                if missing > self.burst:
                    again = 0.0
                active = [p for p in self.pods_of(rs) if facts.pod_is_active(p.obj)]
            elif len(active) > want:
                doomed = pods_to_delete(active, len(active) - want,
                                        self.related_pods(rs), self.access.clock())  # fmt: skip
                for pod in doomed:
                    self._delete(pod)
                active = [p for p in self.pods_of(rs) if facts.pod_is_active(p.obj)]
        status, wait = self.status(rs, active)
        current = self.access.entry(self.access.replicasets, *key)
        if current is not None:
            self.access.write_status(self.access.replicasets, current, status)
        if wait is not None:
            again = wait if again is None else min(again, wait)
        return again

    def _create(self, rs: facts.Obj, count: int) -> None:
        template = facts.spec(rs).get("template") or {}
        for _ in range(count):
            self.access.create(self.access.pods, pod_from_template(rs, template))

    def _delete(self, pod: Entry) -> None:
        try:
            self.access.delete(self.access.pods, pod)
        except APIError as err:
            if err.code != 404:
                raise

    def status(self, rs: facts.Obj, active: list[Entry]) -> tuple[dict[str, Any], float | None]:
        """The status ``rs`` should show, and when it may change by time alone."""
        labels = (facts.spec(rs).get("template") or {}).get("metadata", {}).get("labels") or {}
        min_ready = int(facts.spec(rs).get("minReadySeconds") or 0)
        now = self.access.clock()
        labelled = ready = available = 0
        wait: float | None = None
        for pod in active:
            obj = pod.obj
            if all(facts.labels(obj).get(k) == v for k, v in labels.items()):
                labelled += 1
            if not facts.pod_is_ready(obj):
                continue
            ready += 1
            since = facts.condition(obj, "Ready") or {}
            left = (parse_time(str(since.get("lastTransitionTime") or "")) or 0.0) + min_ready - now
            if min_ready <= 0 or left <= 0:
                available += 1
            else:
                wait = left if wait is None else min(wait, left)
        status: dict[str, Any] = {"replicas": len(active)}
        optional = {
            "fullyLabeledReplicas": labelled,
            "readyReplicas": ready,
            "availableReplicas": available,
            "observedGeneration": int(facts.meta(rs).get("generation") or 0),
        }
        status.update({k: v for k, v in optional.items() if v})
        previous = facts.status(rs)
        if previous.get("conditions"):
            status["conditions"] = previous["conditions"]
        return status, wait


def _status_only(change: Change) -> bool:
    """A write that touched only status (ours, mostly): nothing for the controller to do."""
    if change.prev is None:
        return False
    old, new = change.prev.obj, change.entry.obj
    return (
        old.get("spec") == new.get("spec")
        and facts.is_deleting(old) == facts.is_deleting(new)
        and facts.labels(old) == facts.labels(new)
    )
