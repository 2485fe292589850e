"""``pods/eviction`` and the disruption controller's PodDisruptionBudget status.

The eviction handler follows kube-apiserver's ``EvictionREST.Create``: pods that are
Pending (so also unbound), terminal or already deleting are deleted without a budget
check; otherwise the PDBs in the pod's namespace whose (non-empty) selector matches the
pod are found — more than one is a 500, none deletes the pod, one is checked and
decremented (``disruptionsAllowed`` 0 → 429 with a ``DisruptionBudget`` cause). Before
deleting, the pod gets a ``DisruptionTarget`` condition, as upstream adds.

The emulator also plays the disruption controller: whenever a pod, PDB or workload in a
namespace changes, it recomputes each affected PDB's status (``expectedPods``,
``currentHealthy``, ``desiredHealthy``, ``disruptionsAllowed``, ``DisruptionAllowed``
condition) with upstream's formulas, so informers and kubectl see it, and evictions check
fresh numbers.
"""

from __future__ import annotations

import asyncio
import copy
import math
import time
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver import errors, metadata
from karpy.sandbox.apiserver.objects import DeleteOptions, ObjectAPI
from karpy.sandbox.apiserver.pods import is_ready
from karpy.sandbox.apiserver.selectors import SelectorError, label_selector_from_object
from karpy.sandbox.apiserver.tables import parse_time

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj, View
    from karpy.sandbox.apiserver.store import Change

DELETION_TIMEOUT_SECONDS = 120
TOO_MANY = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does "
    "not support."
)
_PDB = ("policy", "poddisruptionbudgets")
_WATCHED = {
    ("", "pods"),
    _PDB,
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
}


def _scaled(value: Any, total: int) -> int:
    """``intstr.GetScaledValueFromIntOrPercent`` rounding up."""
    if isinstance(value, int):
        return value
    text = str(value)
    if not text.endswith("%"):
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"invalid value for IntOrString: invalid value {text!r}") from None
    return math.ceil(int(text[:-1]) * total / 100)


class DisruptionController:
    def __init__(self, api: ObjectAPI, clock: Any = time.time) -> None:
        self.api = api
        self.clock = clock
        self._dirty: set[str] = set()
        self._scheduled = False

    def views(self) -> tuple[View, View]:
        pods = self.api.registry.view("", "v1", "pods")
        pdbs = self.api.registry.view("policy", "v1", "poddisruptionbudgets")
        assert pods is not None and pdbs is not None
        return pods, pdbs

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key not in _WATCHED:
            return
        if kind.key == _PDB and change.type != "DELETED" and change.prev is not None:
            old, new = change.prev.obj, change.entry.obj
            if old.get("spec") == new.get("spec") and old["metadata"].get("generation") == new[
                "metadata"
            ].get("generation"):
                return  # a status write, ours or someone's: nothing to recompute
        self._dirty.add(change.key[0])
        if not self._scheduled:
            self._scheduled = True
            try:
                asyncio.get_running_loop().call_soon(self.sync_dirty)
            except RuntimeError:
                self.sync_dirty()

    def sync_dirty(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        for namespace in sorted(dirty):
            self.sync_namespace(namespace)

    def sync_namespace(self, namespace: str) -> None:
        _, pdbs = self.views()
        for entry in self.api.store.all_objects(pdbs.kind, namespace):
            self.sync(entry.obj)

    def pods_for(self, pdb: Obj) -> list[Obj]:
        pods, _ = self.views()
        try:
            selector = label_selector_from_object(pdb.get("spec", {}).get("selector"))
        except SelectorError:
            return []
        ns = pdb["metadata"]["namespace"]
        return [
            e.obj
            for e in self.api.store.all_objects(pods.kind, ns)
            if selector.matches(e.obj["metadata"].get("labels"))
        ]

    def compute(self, pdb: Obj, pods: list[Obj]) -> dict[str, Any]:
        spec = pdb.get("spec") or {}
        now = self.clock()
        status = pdb.get("status") or {}
        expected, desired = 0, 0
        failure = ""
        try:
            if spec.get("maxUnavailable") is not None:
                expected = self._expected_scale(pods)
                desired = max(expected - _scaled(spec["maxUnavailable"], expected), 0)
            elif spec.get("minAvailable") is not None:
                min_available = spec["minAvailable"]
                if isinstance(min_available, int):
                    desired, expected = min_available, len(pods)
                else:
                    expected = self._expected_scale(pods)
                    desired = _scaled(min_available, expected)
        except ValueError as exc:
            failure = str(exc)
        disrupted = {}
        for pod in pods:
            name = pod["metadata"]["name"]
            when = (status.get("disruptedPods") or {}).get(name)
            stamp = _parse(when)
            if (
                pod["metadata"].get("deletionTimestamp") is None
                and stamp is not None
                and stamp + DELETION_TIMEOUT_SECONDS > now
            ):
                disrupted[name] = when
        healthy = 0
        for pod in pods:
            if (
                pod["metadata"].get("deletionTimestamp") is not None
                or pod["metadata"]["name"] in disrupted
            ):
                continue
            if is_ready(pod):
                healthy += 1
        allowed = healthy - desired
        if expected <= 0 or allowed <= 0 or failure:
            allowed = 0
        new: dict[str, Any] = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "disruptionsAllowed": allowed,
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
        }
        if disrupted:
            new["disruptedPods"] = disrupted
        reason = "SufficientPods" if allowed > 0 else "InsufficientPods"
        if failure:
            reason = "SyncFailed"
        new["conditions"] = self._condition(
            status, allowed > 0, reason, failure, new["observedGeneration"]
        )
        return new

    def _condition(
        self, status: dict[str, Any], allowed: bool, reason: str, message: str, generation: int
    ) -> list[dict[str, Any]]:
        value = "True" if allowed else "False"
        previous = next(
            (c for c in status.get("conditions") or [] if c.get("type") == "DisruptionAllowed"),
            None,
        )
        since = (
            previous["lastTransitionTime"]
            if previous and previous.get("status") == value
            else self.api.now()
        )
        return [
            {
                "type": "DisruptionAllowed",
                "status": value,
                "observedGeneration": generation,
                "lastTransitionTime": since,
                "reason": reason,
                "message": message,
            }
        ]

    def _expected_scale(self, pods: list[Obj]) -> int:
        """Sum of the owning controllers' replicas; a pod without one is an error."""
        scales: dict[str, int] = {}
        for pod in pods:
            owner = next(
                (r for r in pod["metadata"].get("ownerReferences") or [] if r.get("controller")),
                None,
            )
            if owner is None:
                raise ValueError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            if owner.get("uid") in scales:
                continue
            found = self._controller_scale(pod["metadata"]["namespace"], owner)
            if found is None:
                raise ValueError(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return sum(scales.values())

    def _controller_scale(self, namespace: str, owner: dict[str, Any]) -> tuple[str, int] | None:
        group = owner.get("apiVersion", "").rpartition("/")[0]
        for kind in self.api.registry.all():
            if kind.group != group or kind.kind != owner.get("kind") or kind.scale is None:
                continue
            entry = self.api.store.get_entry(kind, namespace, owner.get("name", ""))
            if entry is None or entry.obj["metadata"].get("uid") != owner.get("uid"):
                return None
            if kind.key == ("apps", "replicasets"):
                parent = next(
                    (
                        r
                        for r in entry.obj["metadata"].get("ownerReferences") or []
                        if r.get("controller") and r.get("kind") == "Deployment"
                    ),
                    None,
                )
                if parent is not None:
                    return self._controller_scale(namespace, parent)
            replicas = kind.scale.spec_replicas.first(entry.obj)
            return str(entry.obj["metadata"]["uid"]), int(
                replicas if isinstance(replicas, int) else 1
            )
        return None

    def sync(self, pdb: Obj) -> Obj:
        status = self.compute(pdb, self.pods_for(pdb))
        current = pdb.get("status") or {}
        if _same_status(current, status):
            return pdb
        _, pdbs = self.views()
        key = (pdb["metadata"]["namespace"], pdb["metadata"]["name"])
        return self.api.write_status(pdbs, key, status)


def _same_status(a: dict[str, Any], b: dict[str, Any]) -> bool:
    def without_conditions(status: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in status.items() if k != "conditions"}

    def conditions(status: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in c.items() if k != "lastTransitionTime"}
            for c in status.get("conditions") or []
        ]

    return without_conditions(a) == without_conditions(b) and conditions(a) == conditions(b)


def _parse(stamp: Any) -> float | None:
    return parse_time(stamp) if isinstance(stamp, str) else None


def evict(
    api: ObjectAPI, controller: DisruptionController, namespace: str, name: str, eviction: Any
) -> dict[str, Any]:
    """POST pods/<name>/eviction; returns the Success Status or raises `APIError`."""
    if not isinstance(eviction, dict):
        raise errors.bad_request("not a Eviction object")
    if (eviction.get("metadata") or {}).get("name", "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    options = DeleteOptions.from_body(eviction.get("deleteOptions"))
    pods, pdbs = controller.views()
    pod = api.get(pods, namespace, name)
    phase = (pod.get("status") or {}).get("phase")
    deleting = pod["metadata"].get("deletionTimestamp") is not None
    if phase in ("Succeeded", "Failed", "Pending") or deleting:
        if (
            options.resource_version is None
            and phase not in ("Succeeded", "Failed")
            and not deleting
        ):
            options = _with_rv(options, pod["metadata"]["resourceVersion"])
        _delete(api, pods, namespace, name, options)
        return errors.success_status(201)
    matching = []
    for entry in api.store.all_objects(pdbs.kind, namespace):
        try:
            selector = label_selector_from_object(entry.obj.get("spec", {}).get("selector"))
        except SelectorError:
            continue
        if selector.empty or not selector.matches(pod["metadata"].get("labels")):
            continue
        matching.append(entry.obj)
    if len(matching) > 1:
        raise errors.APIError(500, "", MULTIPLE)
    if matching:
        pdb = controller.sync(matching[0])
        status = pdb.get("status") or {}
        policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy")
        unhealthy_ok = not is_ready(pod) and (
            policy == "AlwaysAllow"
            or (
                status.get("currentHealthy", 0) >= status.get("desiredHealthy", 0)
                and status.get("desiredHealthy", 0) > 0
            )
        )
        if unhealthy_ok:
            if options.resource_version is None:
                options = _with_rv(options, pod["metadata"]["resourceVersion"])
        else:
            _check_and_decrement(api, pdbs, pdb, name, options.dry_run)
    _delete(api, pods, namespace, name, options)
    return errors.success_status(201)


def _with_rv(options: DeleteOptions, rv: str) -> DeleteOptions:
    return DeleteOptions(
        options.grace_period_seconds, options.uid, rv, options.propagation_policy, options.dry_run
    )


def _check_and_decrement(
    api: ObjectAPI, pdbs: View, pdb: Obj, pod_name: str, dry_run: bool
) -> None:
    status = copy.deepcopy(pdb.get("status") or {})
    name = pdb["metadata"]["name"]
    if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1):
        raise errors.too_many_requests(
            TOO_MANY,
            10,
            [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {name} is still being processed by the "
                    "server.",
                }
            ],
        )
    allowed = int(status.get("disruptionsAllowed", 0))
    if allowed < 0:
        raise errors.forbidden(
            "policy", "poddisruptionbudget", name, "pdb disruptions allowed is negative"
        )
    if allowed == 0:
        desired, healthy = status.get("desiredHealthy", 0), status.get("currentHealthy", 0)
        raise errors.too_many_requests(
            TOO_MANY,
            0,
            [
                {
                    "reason": "DisruptionBudget",
                    "message": f"The disruption budget {name} needs {desired} healthy pods "
                    f"and has {healthy} currently",
                }
            ],
        )
    status["disruptionsAllowed"] = allowed - 1
    if dry_run:
        return
    status.setdefault("disruptedPods", {})[pod_name] = api.now()
    if status["disruptionsAllowed"] == 0:
        for cond in status.get("conditions") or []:
            if cond.get("type") == "DisruptionAllowed" and cond.get("status") != "False":
                cond.update(status="False", reason="InsufficientPods", lastTransitionTime=api.now())
    api.write_status(pdbs, (pdb["metadata"]["namespace"], name), status)


def _delete(api: ObjectAPI, pods: View, namespace: str, name: str, options: DeleteOptions) -> None:
    if options.dry_run:
        api.delete(pods, namespace, name, options)
        return
    prev = api.entry(pods, namespace, name)
    pod = pods.external(prev.obj)
    if (
        options.resource_version is not None
        and options.resource_version != pod["metadata"]["resourceVersion"]
    ):
        api.delete(pods, namespace, name, options)  # raises the precondition conflict
    if pod["metadata"].get("deletionTimestamp") is None and (pod.get("status") or {}).get(
        "phase"
    ) not in ("Succeeded", "Failed"):
        new = copy.deepcopy(pod)
        conditions = [
            c
            for c in new.setdefault("status", {}).get("conditions") or []
            if c.get("type") != "DisruptionTarget"
        ]
        conditions.append(
            {
                "type": "DisruptionTarget",
                "status": "True",
                "lastProbeTime": None,
                "lastTransitionTime": metadata.timestamp(api.clock()),
                "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting",
            }
        )
        new["status"]["conditions"] = conditions
        updated = api.apply_update(pods, (namespace, name), new, prev, subresource="status")
        options = DeleteOptions(
            options.grace_period_seconds,
            options.uid,
            None if options.resource_version is None else updated["metadata"]["resourceVersion"],
            options.propagation_policy,
            False,
        )
    api.delete(pods, namespace, name, options)
