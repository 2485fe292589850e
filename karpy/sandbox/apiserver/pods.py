"""Pods: create defaults, graceful deletion, the ``binding`` subresource and the
emulated kubelet's half of pod termination.

Upstream, deleting a pod that is bound to a node and not terminal only marks it
(``deletionTimestamp`` = now + grace period); the kubelet stops the containers and then
deletes the pod with grace period 0. Pods that never reached a node, or already
finished, go at once. The emulator reproduces the API side exactly and plays the
kubelet side according to `PodTermination`:

- ``immediate``: the emulated kubelet finishes the deletion right after the mark (the
  watch sees MODIFIED with ``deletionTimestamp`` then DELETED);
- ``graceful`` (default): it finishes when the grace period has passed (optionally capped
  by ``max_grace_seconds`` so tests need not wait 30 s);
- ``manual``: nothing finishes it; a node simulator or test deletes the pod with
  ``gracePeriodSeconds=0``, as a real kubelet does.
"""

from __future__ import annotations

import asyncio
import copy
import enum
from typing import TYPE_CHECKING, Any

from karpy.sandbox.apiserver import errors
from karpy.sandbox.apiserver.objects import Behavior, DeleteOptions, ObjectAPI

if TYPE_CHECKING:
    from karpy.sandbox.apiserver.kinds import Kind, Obj, View
    from karpy.sandbox.apiserver.store import Change, Key

DEFAULT_GRACE_SECONDS = 30
TERMINAL_PHASES = ("Succeeded", "Failed")


class PodTermination(enum.Enum):
    IMMEDIATE = "immediate"
    GRACEFUL = "graceful"
    MANUAL = "manual"


def _resources_of(pod: Obj) -> list[dict[str, Any]]:
    spec = pod.get("spec") or {}
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    return [c.get("resources") or {} for c in containers if isinstance(c, dict)]


def qos_class(pod: Obj) -> str:
    """``qos.GetPodQOS`` for cpu and memory."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    for resources in _resources_of(pod):
        req = resources.get("requests") or {}
        lim = resources.get("limits") or {}
        for name in ("cpu", "memory"):
            if name in req:
                requests[name] = req[name]
            if name in lim:
                limits[name] = lim[name]
            if name not in lim or (name in req and str(req[name]) != str(lim[name])):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and limits.keys() >= {"cpu", "memory"}:
        return "Guaranteed"
    return "Burstable"


def is_ready(pod: Obj) -> bool:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


class PodBehavior(Behavior):
    def prepare_create(self, api: ObjectAPI, kind: Kind, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
        spec = obj.setdefault("spec", {})
        spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)

    def grace_period(self, api: ObjectAPI, kind: Kind, obj: Obj, options: DeleteOptions) -> int:
        spec = obj.get("spec") or {}
        phase = (obj.get("status") or {}).get("phase")
        if not spec.get("nodeName") or phase in TERMINAL_PHASES:
            return 0
        if options.grace_period_seconds is not None:
            return max(options.grace_period_seconds, 0)
        return int(spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))


def bind(api: ObjectAPI, view: View, namespace: str, name: str, binding: Any) -> None:
    """POST pods/<name>/binding: assign the pod to ``target.name``, as kube-apiserver's pod
    storage does (``pkg/registry/core/pod/storage/storage.go``): ``PodScheduled=True`` and,
    with ClearingNominatedNodeNameAfterBinding, no ``status.nominatedNodeName`` left."""
    if not isinstance(binding, dict):
        raise errors.bad_request("the body of the request was not a Binding object")
    meta = binding.get("metadata") or {}
    if meta.get("name") and meta["name"] != name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    target = binding.get("target") or {}
    if target.get("kind") not in (None, "", "Node"):
        raise errors.bad_request(f"target kind must be Node, not {target.get('kind')}")
    node = target.get("name")
    if not node:
        raise errors.invalid("Binding", "", name, [])
    prev = api.entry(view, namespace, name)
    pod = copy.deepcopy(view.external(prev.obj))
    qualified = ("pods/binding", "")
    if pod["metadata"].get("deletionTimestamp"):
        raise errors.conflict(
            "", qualified[0], name, f"pod {name} is being deleted, cannot be assigned to a host"
        )
    if pod.get("spec", {}).get("nodeName"):
        raise errors.conflict(
            "",
            qualified[0],
            name,
            f'pod {name} is already assigned to node "{pod["spec"]["nodeName"]}"',
        )
    uid = meta.get("uid") or ""
    if uid and uid != pod["metadata"].get("uid"):
        raise errors.conflict(
            "",
            "pods",
            name,
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: "
            f"{pod['metadata'].get('uid')}",
        )
    pod["spec"]["nodeName"] = node
    status = pod.setdefault("status", {})
    # ClearingNominatedNodeNameAfterBinding (beta, on by default since 1.35): the binding
    # ends any nomination in the same write (an empty string is an absent field).
    status.pop("nominatedNodeName", None)
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": api.now(),
        }
    )
    status["conditions"] = conditions
    new_status = pod["status"]
    api.store.commit(
        view.kind, "MODIFIED", (namespace, name), view.internal(_with_status(pod, new_status)), prev
    )


def _with_status(pod: Obj, status: dict[str, Any]) -> Obj:
    pod["status"] = status
    return pod


class EmulatedKubelet:
    """Finishes graceful pod deletions per the termination mode (the kubelet's job)."""

    def __init__(
        self, api: ObjectAPI, mode: PodTermination, max_grace_seconds: float | None
    ) -> None:
        self.api = api
        self.mode = mode
        self.max_grace_seconds = max_grace_seconds
        self._timers: dict[Key, asyncio.TimerHandle] = {}

    def on_change(self, kind: Kind, change: Change) -> None:
        if kind.key != ("", "pods"):
            return
        if change.type == "DELETED":
            timer = self._timers.pop(change.key, None)
            if timer is not None:
                timer.cancel()
            return
        meta = change.entry.obj["metadata"]
        grace = meta.get("deletionGracePeriodSeconds")
        if not meta.get("deletionTimestamp") or not grace or self.mode is PodTermination.MANUAL:
            return
        delay = 0.0 if self.mode is PodTermination.IMMEDIATE else float(grace)
        if self.max_grace_seconds is not None:
            delay = min(delay, self.max_grace_seconds)
        old = self._timers.pop(change.key, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        uid = meta.get("uid")
        self._timers[change.key] = loop.call_later(delay, self.finish, change.key, uid)

    def finish(self, key: Key, uid: str | None) -> None:
        self._timers.pop(key, None)
        view = self.api.registry.view("", "v1", "pods")
        assert view is not None
        prev = self.api.store.get_entry(view.kind, *key)
        if prev is None or prev.obj["metadata"].get("uid") != uid:
            return
        terminate(self.api, view, key)

    def cancel_all(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()


def terminate(api: ObjectAPI, view: View, key: Key) -> None:
    """What a kubelet's final ``DELETE ?gracePeriodSeconds=0`` does."""
    prev = api.store.get_entry(view.kind, *key)
    if prev is None:
        return
    meta = prev.obj["metadata"]
    if meta.get("finalizers"):
        if meta.get("deletionGracePeriodSeconds") == 0:
            return
        new = copy.deepcopy(prev.obj)
        new["metadata"]["deletionGracePeriodSeconds"] = 0
        api.store.commit(view.kind, "MODIFIED", key, new, prev)
        return
    api.store.commit(view.kind, "DELETED", key, None, prev)
