"""kube-controller-manager's Deployment controller, in process (Recreate-like rollouts).

A Deployment runs its pods through ReplicaSets named ``<deployment>-<pod-template-hash>``:
the ReplicaSet whose template equals the Deployment's (ignoring the hash label) is the
current one and gets ``spec.replicas``; every other ReplicaSet it controls is scaled to
zero. So a template change creates a new ReplicaSet and empties the old ones at once —
like the ``Recreate`` strategy without its wait for old pods to end, and unlike a real
``RollingUpdate`` (no surge or unavailability budget is honoured: karpy only needs the
pods to exist and be replaced, not a gentle rollout). Old, empty ReplicaSets beyond
``revisionHistoryLimit`` are deleted, oldest revision first; a hash collision bumps
``status.collisionCount`` and tries the next name, as upstream.

The status is summed from the ReplicaSets (``replicas``, ``updatedReplicas``,
``readyReplicas``, ``availableReplicas``, ``unavailableReplicas``,
``observedGeneration``) with upstream's ``Available`` and ``Progressing`` conditions, so
``kubectl get deploy`` shows READY, UP-TO-DATE and AVAILABLE as on a real cluster;
conditions keep their timestamps while they hold, so a resync writes nothing.
Scaling through ``/scale`` (``kubectl scale``) changes ``spec.replicas`` and flows
through here like any other change. ``paused`` is not honoured.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver.errors import APIError
from karpy.sandbox.cluster import facts
from karpy.sandbox.cluster.podtemplate import (
    TEMPLATE_HASH_LABEL,
    template_hash,
    with_labels,
    without_hash_label,
)
from karpy.sandbox.cluster.workqueue import WorkQueue

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind
    from karpy.sandbox.apiserver.store import Change, Entry, Key
    from karpy.sandbox.cluster.access import ClusterAccess
    from karpy.sandbox.cluster.ownership import Ownership

DEPLOYMENTS = ("apps", "deployments")
REPLICASETS = ("apps", "replicasets")
REVISION = "deployment.kubernetes.io/revision"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"


def scaled(value: Any, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``."""
    if isinstance(value, int):
        return value
    text = str(value or "0")
    if text.endswith("%"):
        exact = int(text[:-1]) * total / 100
        return math.ceil(exact) if round_up else math.floor(exact)
    return int(text)


def max_unavailable(deployment: facts.Obj, replicas: int) -> int:
    strategy = facts.spec(deployment).get("strategy") or {}
    if strategy.get("type") != "RollingUpdate":
        return 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = scaled(rolling.get("maxSurge", "25%"), replicas, round_up=True)
    unavailable = scaled(rolling.get("maxUnavailable", "25%"), replicas, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1  # upstream's fencepost: a rollout must be able to move
    return min(unavailable, replicas)


def revision(rs: facts.Obj) -> int:
    annotations = facts.meta(rs).get("annotations") or {}
    try:
        return int(annotations.get(REVISION, "0"))
    except ValueError:
        return 0


class DeploymentController:
    def __init__(self, access: ClusterAccess, ownership: Ownership) -> None:
        self.access = access
        self.ownership = ownership
        self.queue: WorkQueue[Key] = WorkQueue("deployment-controller", self.sync, debounce=0.02)

    # -- events ------------------------------------------------------------------------

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key == DEPLOYMENTS:
            if change.type != "DELETED" and not _status_only(change):
                self.queue.add(change.key)
        elif kind.key == REPLICASETS:
            owner = facts.controlled_by(change.entry.obj, "Deployment")
            ref = self.ownership.ref_of(owner) if owner else None
            if ref is not None and ref[0] == DEPLOYMENTS:
                self.queue.add((ref[1], ref[2]))

    def resync(self) -> None:
        for entry in self.access.entries(self.access.deployments):
            meta = entry.obj["metadata"]
            self.queue.add((meta["namespace"], meta["name"]))

    # -- reconcile ---------------------------------------------------------------------

    def replicasets_of(self, deployment: facts.Obj) -> list[Entry]:
        """The ReplicaSets the Deployment controls, oldest first."""
        uid = facts.uid(deployment)
        state = self.access.state(self.access.replicasets)
        found = []
        for _, namespace, name in self.ownership.dependents(uid, REPLICASETS):
            entry = state.objects.get((namespace, name))
            if entry is not None and facts.controlled_by(entry.obj, "Deployment") == uid:
                found.append(entry)
        return sorted(
            found,
            key=lambda e: (
                e.obj["metadata"].get("creationTimestamp", ""),
                e.obj["metadata"]["name"],
            ),
        )

    def sync(self, key: Key) -> float | None:
        entry = self.access.entry(self.access.deployments, *key)
        if entry is None:
            return None
        deployment = entry.obj
        owned = self.replicasets_of(deployment)
        template = facts.spec(deployment).get("template") or {}
        current = next(
            (rs for rs in owned if without_hash_label(facts.spec(rs.obj).get("template") or {})
             == template),
            None,
        )  # fmt: skip
        if not facts.is_deleting(deployment):
            if current is None:
                created = self._create_replicaset(entry, owned)
                if created is None:
                    return 0.0  # collision: the status now carries a new collisionCount
                owned = self.replicasets_of(deployment)
                current = next((rs for rs in owned if rs.obj["metadata"]["name"] == created), None)
            want = int(facts.spec(deployment).get("replicas", 1))
            for rs in owned:
                replicas = want if rs is current else 0
                if int(facts.spec(rs.obj).get("replicas", 1)) != replicas:
                    self.access.merge_patch(
                        self.access.replicasets, rs, {"spec": {"replicas": replicas}}
                    )
            self._prune_history(deployment, owned, current)
            owned = self.replicasets_of(deployment)
            current = next(
                (rs for rs in owned if current is not None
                 and rs.obj["metadata"]["name"] == current.obj["metadata"]["name"]),
                None,
            )  # fmt: skip
        fresh = self.access.entry(self.access.deployments, *key)
        if fresh is not None:
            status = self.status(fresh.obj, owned, current)
            self.access.write_status(self.access.deployments, fresh, status)
        return None

    def _create_replicaset(self, entry: Entry, owned: list[Entry]) -> str | None:
        """Create the ReplicaSet for the current template; its name, or None after a
        hash collision (``collisionCount`` bumped)."""
        deployment = entry.obj
        spec = facts.spec(deployment)
        template = spec.get("template") or {}
        collisions = int(facts.status(deployment).get("collisionCount") or 0)
        digest = template_hash(template, collisions)
        meta = facts.meta(deployment)
        name = f"{meta['name']}-{digest}"
        want = int(spec.get("replicas", 1))
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = scaled(rolling.get("maxSurge", 0), want, round_up=True)
        selector = dict(spec.get("selector") or {})
        selector["matchLabels"] = {
            **(selector.get("matchLabels") or {}),
            TEMPLATE_HASH_LABEL: digest,
        }
        next_revision = max((revision(rs.obj) for rs in owned), default=0) + 1
        replicaset = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": {**(template.get("metadata", {}).get("labels") or {}),
                           TEMPLATE_HASH_LABEL: digest},
                "annotations": {
                    REVISION: str(next_revision),
                    DESIRED_REPLICAS: str(want),
                    MAX_REPLICAS: str(want + surge),
                },
                "ownerReferences": [facts.owner_reference(deployment)],
            },
            "spec": {
                "replicas": want,
                "minReadySeconds": int(spec.get("minReadySeconds") or 0),
                "selector": selector,
                "template": with_labels(template, {TEMPLATE_HASH_LABEL: digest}),
            },
        }  # fmt: skip
        try:
            self.access.create(self.access.replicasets, replicaset)
        except APIError as err:
            if err.code != 409:
                raise
            taken = self.access.entry(self.access.replicasets, meta["namespace"], name)
            if taken is not None and facts.controlled_by(taken.obj, "Deployment") == facts.uid(
                deployment
            ):
                return name  # ours after all (created by an earlier sync)
            status = {**facts.status(deployment), "collisionCount": collisions + 1}
            self.access.write_status(self.access.deployments, entry, status)
            return None
        return name

    def _prune_history(
        self, deployment: facts.Obj, owned: list[Entry], current: Entry | None
    ) -> None:
        limit = int(facts.spec(deployment).get("revisionHistoryLimit", 10))
        old = [
            rs
            for rs in owned
            if rs is not current
            and int(facts.spec(rs.obj).get("replicas", 1)) == 0
            and not facts.status(rs.obj).get("replicas")
            and not facts.is_deleting(rs.obj)
        ]
        old.sort(key=lambda rs: revision(rs.obj))
        for rs in old[: max(len(old) - limit, 0)]:
            self.access.delete(self.access.replicasets, rs, propagation_policy="Background")

    def status(
        self, deployment: facts.Obj, owned: list[Entry], current: Entry | None
    ) -> dict[str, Any]:
        want = int(facts.spec(deployment).get("replicas", 1))

        def total(field: str) -> int:
            return sum(int(facts.status(rs.obj).get(field) or 0) for rs in owned)

        replicas, available = total("replicas"), total("availableReplicas")
        updated = int(facts.status(current.obj).get("replicas") or 0) if current else 0
        previous = facts.status(deployment)
        counts = {
            "observedGeneration": int(facts.meta(deployment).get("generation") or 0),
            "replicas": replicas,
            "updatedReplicas": updated,
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(want - available, 0),
            "collisionCount": int(previous.get("collisionCount") or 0),
        }
        status: dict[str, Any] = {k: v for k, v in counts.items() if v}
        name = current.obj["metadata"]["name"] if current is not None else ""
        if available >= want - max_unavailable(deployment, want):
            available_condition = (
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        else:
            available_condition = (
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        if current is not None and updated == want == replicas == available:
            progressing = (
                "True",
                "NewReplicaSetAvailable",
                f'ReplicaSet "{name}" has successfully progressed.',
            )
        else:
            progressing = ("True", "ReplicaSetUpdated", f'ReplicaSet "{name}" is progressing.')
        status["conditions"] = [
            _condition(previous, "Available", available_condition, now=self.access.now()),
            _condition(previous, "Progressing", progressing, now=self.access.now()),
        ]  # fmt: skip
        return status


def _condition(
    status: dict[str, Any], kind: str, says: tuple[str, str, str], *, now: str
) -> dict[str, Any]:
    """A deployment condition saying ``(status, reason, message)``; the previous one,
    unchanged, if it says the same already."""
    value, reason, message = says
    for cond in status.get("conditions") or ():
        if cond.get("type") == kind:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) == (
                value,
                reason,
                message,
            ):
                return dict(cond)
            since = cond.get("lastTransitionTime") if cond.get("status") == value else None
            break
    else:
        since = None
    return {
        "type": kind,
        "status": value,
        "lastUpdateTime": now,
        "lastTransitionTime": since or now,
        "reason": reason,
        "message": message,
    }


def _status_only(change: Change) -> bool:
    if change.prev is None:
        return False
    old, new = change.prev.obj, change.entry.obj
    return old.get("spec") == new.get("spec") and facts.is_deleting(old) == facts.is_deleting(new)
