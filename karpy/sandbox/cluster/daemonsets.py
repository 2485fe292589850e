"""kube-controller-manager's DaemonSet controller, in process.

One pod per node the DaemonSet's pod fits: its node selector and required node affinity
match the node, and it tolerates the node's ``NoSchedule`` and ``NoExecute`` taints —
with the tolerations upstream adds to every daemon pod (``not-ready`` and
``unreachable`` for NoExecute; ``disk-pressure``, ``memory-pressure``, ``pid-pressure``
and ``unschedulable`` for NoSchedule; ``network-unavailable`` for host-network pods),
which are also written into the pods. Resources are not checked, as upstream leaves that
to the kubelet. A pod stays on a node as long as selector and affinity match and it
tolerates the ``NoExecute`` taints (a new NoSchedule taint does not evict it); otherwise
it is deleted, as are extra, failed and outdated pods (a changed template replaces pods
node by node, at once rather than by ``maxUnavailable``).

Pods are created already bound (``spec.nodeName``), not through the scheduler with a
``metadata.name`` node affinity as upstream does since 1.12: karpy's scheduler sets
matchFields pods aside, and the effect — one pod pinned to each node — is the same.

The work is keyed per (DaemonSet, node): a node event costs one check per DaemonSet, not a
pass over 8,000 nodes; a DaemonSet change queues every node once, and the fit rules and
template hash are worked out once per DaemonSet generation. The status counts
(``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberMisscheduled``,
``numberReady``, ``numberAvailable``, ``numberUnavailable``, ``updatedNumberScheduled``,
``observedGeneration``) need every node, so they are recomputed at most every
``status_delay`` seconds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.nodematch import node_accepts
from karpy.sandbox.cluster.podtemplate import REVISION_HASH_LABEL, pod_from_template, template_hash
from karpy.sandbox.cluster.workqueue import WorkQueue
from karpy.scheduling.taints import Toleration, first_untolerated, taint_from_dict

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change, Entry, Key
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.ownership import Ownership

DAEMONSETS = ("apps", "daemonsets")
NODES = ("", "nodes")
PODS = ("", "pods")
GENERATION_LABEL: Final = "pod-template-generation"
DEFAULT_TOLERATIONS: Final = (
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
)
HOST_NETWORK_TOLERATION: Final = ("node.kubernetes.io/network-unavailable", "NoSchedule")

# Work keys: a whole DaemonSet, one (DaemonSet, node) pair, or a DaemonSet's status.
DaemonSetKey = tuple[str, str, str, str]  # (what, namespace, name, node or "")


def daemon_tolerations(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's tolerations plus the ones upstream adds to every daemon pod."""
    tolerations = [dict(t) for t in pod_spec.get("tolerations") or () if isinstance(t, dict)]
    defaults = list(DEFAULT_TOLERATIONS)
    if pod_spec.get("hostNetwork"):
        defaults.append(HOST_NETWORK_TOLERATION)
    for key, effect in defaults:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return tolerations


class DaemonFit:
    """Where a DaemonSet's pod should run, for one template (tolerations parsed once)."""

    def __init__(self, pod_spec: dict[str, Any]) -> None:
        self.pod_spec = pod_spec
        self.tolerations = [Toleration.from_dict(t) for t in daemon_tolerations(pod_spec)]

    def placement(self, node: facts.Obj) -> tuple[bool, bool]:
        """(should run, may keep running) on ``node``."""
        meta = facts.meta(node)
        if not node_accepts(self.pod_spec, facts.labels(node), str(meta.get("name", ""))):
            return False, False
        taints = [taint_from_dict(t) for t in facts.spec(node).get("taints") or ()]
        hard = [t for t in taints if t.effect in ("NoSchedule", "NoExecute")]
        evicting = [t for t in hard if t.effect == "NoExecute"]
        keep = first_untolerated(evicting, self.tolerations) is None
        run = keep and first_untolerated(hard, self.tolerations) is None
        return run and not facts.is_deleting(node), keep


class DaemonSetController:
    def __init__(
        self, access: ClusterAccess, ownership: Ownership, *, status_delay: float = 0.3
    ) -> None:
        self.access = access
        self.ownership = ownership
        self.status_delay = status_delay
        self.queue: WorkQueue[DaemonSetKey] = WorkQueue("daemonset-controller", self.sync)
        # DaemonSet uid -> node name -> keys of its pods there
        self._pods: dict[str, dict[str, set[Key]]] = {}
        # DaemonSet uid -> (generation, fit rules, template hash)
        self._templates: dict[str, tuple[int, DaemonFit, str]] = {}

    # -- events ------------------------------------------------------------------------

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key == DAEMONSETS:
            if change.type == "DELETED":
                self._templates.pop(facts.uid(change.entry.obj), None)
            elif not _status_only(change):
                self.queue.add(("daemonset", *change.key, ""))
        elif kind.key == NODES:
            if change.prev is None or change.type == "DELETED" or _node_changed(change):
                for entry in self.access.entries(self.access.daemonsets):
                    meta = entry.obj["metadata"]
                    self.queue.add(("node", meta["namespace"], meta["name"], change.key[1]))
        elif kind.key == PODS:
            if change.prev is not None:
                self._index(change.key, change.prev.obj, add=False)
            if change.type != "DELETED":
                self._index(change.key, change.entry.obj, add=True)
            pod = change.entry.obj
            owner = facts.controlled_by(pod, "DaemonSet")
            ref = self.ownership.ref_of(owner) if owner else None
            if ref is None or ref[0] != DAEMONSETS:
                return
            node = facts.node_name(pod)
            if node and (change.prev is None or change.type == "DELETED" or _placed(change)):
                self.queue.add(("node", ref[1], ref[2], node))
            else:
                self.queue.add_after(("status", ref[1], ref[2], ""), self.status_delay)

    def _index(self, key: Key, pod: facts.Obj, *, add: bool) -> None:
        owner = facts.controlled_by(pod, "DaemonSet")
        if owner is None:
            return
        by_node = self._pods.setdefault(owner, {})
        node = facts.node_name(pod)
        if add:
            by_node.setdefault(node, set()).add(key)
            return
        members = by_node.get(node)
        if members is not None:
            members.discard(key)
            if not members:
                del by_node[node]
        if not by_node:
            del self._pods[owner]

    def resync(self) -> None:
        for entry in self.access.entries(self.access.daemonsets):
            meta = entry.obj["metadata"]
            self.queue.add(("daemonset", meta["namespace"], meta["name"], ""))

    # -- reconcile ---------------------------------------------------------------------

    def sync(self, key: DaemonSetKey) -> float | None:
        what, namespace, name, node = key
        entry = self.access.entry(self.access.daemonsets, namespace, name)
        if entry is None:
            return None
        if what == "status":
            self._write_status(entry)
            return None
        if facts.is_deleting(entry.obj):
            pass  # the garbage collector removes its pods
        elif what == "daemonset":
            for other in self.access.entries(self.access.nodes):
                self.queue.add(("node", namespace, name, other.obj["metadata"]["name"]))
        else:
            self._sync_node(entry.obj, node, *self._template_of(entry.obj))
        self.queue.add_after(("status", namespace, name, ""), self.status_delay)
        return None

    def _template_of(self, daemonset: facts.Obj) -> tuple[DaemonFit, str]:
        """The fit rules and template hash of the DaemonSet's current generation."""
        uid = facts.uid(daemonset)
        generation = int(facts.meta(daemonset).get("generation") or 0)
        cached = self._templates.get(uid)
        if cached is None or cached[0] != generation:
            template = facts.spec(daemonset).get("template") or {}
            cached = (generation, DaemonFit(template.get("spec") or {}), template_hash(template))
            self._templates[uid] = cached
        return cached[1], cached[2]

    def pods_on(self, daemonset: facts.Obj, node: str) -> list[Entry]:
        keys = self._pods.get(facts.uid(daemonset), {}).get(node, ())
        pods = self.access.state(self.access.pods).objects
        return [pods[k] for k in sorted(keys) if k in pods]

    def _sync_node(self, daemonset: facts.Obj, node_name: str, fit: DaemonFit, digest: str) -> None:
        node = self.access.entry(self.access.nodes, "", node_name)
        run, keep = fit.placement(node.obj) if node is not None else (False, False)
        live: list[Entry] = []
        for pod in self.pods_on(daemonset, node_name):
            obj = pod.obj
            if facts.is_deleting(obj):
                continue
            outdated = facts.labels(obj).get(REVISION_HASH_LABEL) != digest
            if facts.pod_is_terminal(obj) or outdated or not keep:
                self._delete(pod)
            else:
                live.append(pod)
        for extra in sorted(live, key=lambda e: e.obj["metadata"]["creationTimestamp"])[1:]:
            self._delete(extra)
        if run and not live:
            template = facts.spec(daemonset).get("template") or {}
            self._create(daemonset, template, digest, node_name)

    def _create(
        self, daemonset: facts.Obj, template: dict[str, Any], digest: str, node: str
    ) -> None:
        generation = str(facts.meta(daemonset).get("generation") or 1)
        pod = pod_from_template(
            daemonset,
            template,
            extra_labels={REVISION_HASH_LABEL: digest, GENERATION_LABEL: generation},
        )
        pod["spec"]["nodeName"] = node
        pod["spec"]["tolerations"] = daemon_tolerations(pod["spec"])
        self.access.create(self.access.pods, pod)

    def _delete(self, pod: Entry) -> None:
        try:
            self.access.delete(self.access.pods, pod)
        except APIError as err:
            if err.code != 404:
                raise

    def _write_status(self, entry: Entry) -> None:
        daemonset = entry.obj
        fit, digest = self._template_of(daemonset)
        desired = current = misscheduled = ready = updated = 0
        for node in self.access.entries(self.access.nodes):
            run, _ = fit.placement(node.obj)
            live = [
                p.obj
                for p in self.pods_on(daemonset, node.obj["metadata"]["name"])
                if facts.pod_is_active(p.obj)
            ]
            if run:
                desired += 1
                if live:
                    current += 1
                    ready += any(facts.pod_is_ready(p) for p in live)
                    updated += any(facts.labels(p).get(REVISION_HASH_LABEL) == digest for p in live)
            elif live:
                misscheduled += 1
        counts = {
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": desired,
            "numberReady": ready,
            "observedGeneration": int(facts.meta(daemonset).get("generation") or 0),
            "updatedNumberScheduled": updated,
            "numberAvailable": ready,
            "numberUnavailable": desired - ready,
        }
        required = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                    "numberReady")  # fmt: skip
        status = {k: v for k, v in counts.items() if v or k in required}
        self.access.write_status(self.access.daemonsets, entry, status)


def _status_only(change: Change) -> bool:
    if change.prev is None:
        return False
    old, new = change.prev.obj, change.entry.obj
    return old.get("spec") == new.get("spec") and facts.is_deleting(old) == facts.is_deleting(new)


def _placed(change: Change) -> bool:
    """A daemon pod change the per-node sync must see: it finished, is going, or moved."""
    assert change.prev is not None
    old, new = change.prev.obj, change.entry.obj
    return (
        facts.pod_is_active(old) != facts.pod_is_active(new)
        or facts.node_name(old) != facts.node_name(new)
        or facts.labels(old) != facts.labels(new)
    )


def _node_changed(change: Change) -> bool:
    """A node change that can change where daemons run (labels, taints, deletion)."""
    assert change.prev is not None
    old, new = change.prev.obj, change.entry.obj
    return (
        facts.labels(old) != facts.labels(new)
        or facts.spec(old).get("taints") != facts.spec(new).get("taints")
        or facts.is_deleting(old) != facts.is_deleting(new)
    )
