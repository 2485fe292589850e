"""What a stored object says, read straight from its dict.

The stand-ins see objects as the emulator stores them (plain dicts inside immutable
`Entry` values, shared with list responses and watches: never mutate them). These small
readers name the questions every stand-in asks — is this node Ready, which ReplicaSet
controls this pod, is it terminal — so the answer is written once, the way the real
components decide it.
"""

from __future__ import annotations

from typing import Any, Final

Obj = dict[str, Any]

TERMINAL_PHASES: Final = ("Succeeded", "Failed")
DEFAULT_SCHEDULER: Final = "default-scheduler"
KUBELET_ANNOTATION: Final = "sandbox.karpy.dev/kubelet"
KUBELET_STOPPED: Final = "stopped"


def meta(obj: Obj) -> dict[str, Any]:
    found: dict[str, Any] = obj.get("metadata") or {}
    return found


def spec(obj: Obj) -> dict[str, Any]:
    found: dict[str, Any] = obj.get("spec") or {}
    return found


def status(obj: Obj) -> dict[str, Any]:
    found: dict[str, Any] = obj.get("status") or {}
    return found


def uid(obj: Obj) -> str:
    return str(meta(obj).get("uid") or "")


def labels(obj: Obj) -> dict[str, str]:
    found: dict[str, str] = meta(obj).get("labels") or {}
    return found


def is_deleting(obj: Obj) -> bool:
    return meta(obj).get("deletionTimestamp") is not None


def controller_ref(obj: Obj) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true``, if any."""
    for ref in meta(obj).get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller"):
            return ref
    return None


def controlled_by(obj: Obj, kind: str) -> str | None:
    """The uid of the controller of ``obj`` when it is a ``kind``, else None."""
    ref = controller_ref(obj)
    if ref is None or ref.get("kind") != kind:
        return None
    return str(ref.get("uid") or "") or None


def owner_uids(obj: Obj) -> tuple[str, ...]:
    return tuple(
        str(ref.get("uid"))
        for ref in meta(obj).get("ownerReferences") or ()
        if isinstance(ref, dict) and ref.get("uid")
    )


def owner_reference(owner: Obj, *, controller: bool = True) -> dict[str, Any]:
    """A reference from a dependent to ``owner``, as the workload controllers write it."""
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta(owner).get("name", ""),
        "uid": uid(owner),
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def condition(obj: Obj, kind: str) -> dict[str, Any] | None:
    for cond in status(obj).get("conditions") or ():
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def condition_is(obj: Obj, kind: str, value: str) -> bool:
    cond = condition(obj, kind)
    return cond is not None and cond.get("status") == value


# -- nodes ----------------------------------------------------------------------------


def node_is_ready(node: Obj) -> bool:
    return condition_is(node, "Ready", "True")


def kubelet_stopped(node: Obj) -> bool:
    """Tests mark a node whose instance never joins: its kubelet never reports."""
    annotations = meta(node).get("annotations") or {}
    return annotations.get(KUBELET_ANNOTATION) == KUBELET_STOPPED


def node_is_schedulable(node: Obj) -> bool:
    """What kube-scheduler considers at all: Ready, not cordoned, not being deleted."""
    return node_is_ready(node) and not spec(node).get("unschedulable") and not is_deleting(node)


# -- pods -----------------------------------------------------------------------------


def pod_phase(pod: Obj) -> str:
    return str(status(pod).get("phase") or "Pending")


def pod_is_terminal(pod: Obj) -> bool:
    return pod_phase(pod) in TERMINAL_PHASES


def pod_is_active(pod: Obj) -> bool:
    """Counts toward a ReplicaSet's replicas: neither finished nor being deleted."""
    return not pod_is_terminal(pod) and not is_deleting(pod)


def pod_is_ready(pod: Obj) -> bool:
    return condition_is(pod, "Ready", "True")


def node_name(pod: Obj) -> str:
    return str(spec(pod).get("nodeName") or "")


def nominated_node(pod: Obj) -> str:
    """``status.nominatedNodeName``: where the pod is expected to go (KEP-5278), or ""."""
    return str(status(pod).get("nominatedNodeName") or "")


def awaits_scheduling(pod: Obj) -> bool:
    """A pod kube-scheduler would try to place: unbound, for the default scheduler, not
    deleting or finished, and with no scheduling gates left."""
    pod_spec = spec(pod)
    if pod_spec.get("nodeName") or pod_spec.get("schedulingGates"):
        return False
    if pod_spec.get("schedulerName") not in (None, "", DEFAULT_SCHEDULER):
        return False
    return not is_deleting(pod) and not pod_is_terminal(pod)


def marked_unschedulable(pod: Obj) -> bool:
    """Carries ``PodScheduled=False`` with reason ``Unschedulable`` already."""
    cond = condition(pod, "PodScheduled")
    return (
        cond is not None and cond.get("status") == "False" and cond.get("reason") == "Unschedulable"
    )
