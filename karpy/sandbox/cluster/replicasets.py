"""kube-controller-manager's ReplicaSet controller, in process.

A ReplicaSet keeps ``spec.replicas`` *active* pods (neither finished nor being deleted)
that it controls: it creates the missing ones from its template (``<rs>-`` plus five
random characters, a controller reference, the template's labels) and deletes the extra
ones in upstream's order — unassigned pods first, then pending, then not ready, then the
most recently ready, then the most restarted, then the newest — so a scale-down takes
the pods that cost least to lose. A pod that disappears (evicted, deleted, garbage
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

from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.apiserver.tables import parse_time
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.podtemplate import pod_from_template
from karpy.sandbox.cluster.workqueue import WorkQueue

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change, Entry, Key
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.ownership import Ownership

REPLICASETS = ("apps", "replicasets")
PODS = ("", "pods")
DEFAULT_BURST = 250
_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def deletion_rank(pod: facts.Obj) -> tuple[int, int, int, float, int, float]:
    """Sort key of ``ActivePodsWithRanks``: the pod to delete first sorts first."""
    ready = facts.pod_is_ready(pod)
    ready_since = 0.0
    if ready:
        cond = facts.condition(pod, "Ready") or {}
        ready_since = parse_time(str(cond.get("lastTransitionTime") or "")) or 0.0
    restarts = sum(
        int(s.get("restartCount") or 0)
        for s in facts.status(pod).get("containerStatuses") or ()
        if isinstance(s, dict)
    )
    created = parse_time(str(facts.meta(pod).get("creationTimestamp") or "")) or 0.0
    return (
        1 if facts.node_name(pod) else 0,
        _PHASE_RANK.get(facts.pod_phase(pod), 3),
        1 if ready else 0,
        -ready_since,
        -restarts,
        -created,
    )


def pods_to_delete(pods: list[Entry], count: int) -> list[Entry]:
    """The ``count`` pods a scale-down removes, in upstream's order."""
    ranked = sorted(pods, key=lambda e: (deletion_rank(e.obj), e.obj["metadata"]["name"]))
    return ranked[:count]


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
                for pod in pods_to_delete(active, len(active) - want):
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
