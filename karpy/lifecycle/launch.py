"""Launch: turn a NodeClaim into an instance (`CloudProvider.create`).

On success the NodeClaim learns what was launched: the cloud's labels (instance type,
zone, capacity type, ...) merged under its own (the NodePool's labels and single-valued
requirements win), its provider ID, image, capacity and allocatable, and
``Launched=True``. A launch is idempotent (the provider finds the instance it already
made for this NodeClaim), so a controller killed between the launch and these writes
simply launches "again" and finds it.

Failures, as Karpenter handles them:

* **insufficient capacity**: the offerings tried are marked unavailable for three minutes
  (`UnavailableOfferings`, which the next scheduling rounds and the provider consult), an
  ``InsufficientCapacityError`` Event is recorded, and the NodeClaim is deleted so its pods
  are scheduled again onto other offerings;
* **NodeClass not ready**: a ``NodeClassNotReady`` Event, and the NodeClaim is deleted;
* anything else: ``Launched=Unknown`` with the provider's reason and message, and the
  launch is retried with backoff (the controller's per-key backoff, by raising).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from karpy.apis.conditions import ConditionUpdate
from karpy.apis.labels import LABEL_HOSTNAME, LABEL_NODEPOOL
from karpy.apis.resources import format_resource_list
from karpy.cloud.errors import CreateError, InsufficientCapacity, NodeClassNotReady
from karpy.kube.errors import NotFound
from karpy.kube.events import Event, ObjectRef
from karpy.kube.resources import NODECLAIMS
from karpy.lifecycle.conditions import LAUNCHED, is_true
from karpy.log import get_logger, obj_ref
from karpy.scheduling.templates import SIMULATION_ONLY_KEYS

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.cloud.provider import Instance
    from karpy.lifecycle.context import Lifecycle

__all__ = ["launch", "nodeclaim_ref"]

log = get_logger("nodeclaim.lifecycle")

# An Event's message Kubernetes keeps whole (events.k8s.io's note limit); longer ones are
# cut rather than refused.
EVENT_MESSAGE_LIMIT: Final = 1024


def nodeclaim_ref(claim: NodeClaim) -> ObjectRef:
    return ObjectRef("NodeClaim", claim.name, "", claim.metadata.uid, "karpenter.sh/v1")


async def launch(ctx: Lifecycle, claim: NodeClaim) -> NodeClaim | None:
    """Launch ``claim`` unless it has launched; the updated claim, or None when it was
    deleted (capacity or NodeClass errors)."""
    if is_true(claim, LAUNCHED):
        return claim
    try:
        instance = await ctx.provider.create(claim)
    except InsufficientCapacity as exc:
        ctx.unavailable.mark(exc.pools)
        _tell_nominated_pods(ctx, claim, str(exc))
        await _give_up(ctx, claim, "InsufficientCapacityError", "insufficient_capacity", str(exc))
        return None
    except NodeClassNotReady as exc:
        await _give_up(ctx, claim, "NodeClassNotReady", "nodeclass_not_ready", str(exc))
        return None
    except CreateError as exc:
        await ctx.set_conditions(claim, ConditionUpdate.unknown(LAUNCHED, exc.reason, str(exc)))
        raise
    metadata: dict[str, Any] = {"labels": _labels(claim, instance)}
    if instance.annotations:
        metadata["annotations"] = {**instance.annotations, **claim.metadata.annotations}
    # Labels and annotations only, key by key: no resourceVersion to conflict on with the
    # status writes other controllers make meanwhile (a 409 costs a write and a retry).
    claim = await ctx.patch_metadata(claim, metadata, guarded=False)
    claim = await ctx.set_conditions(
        claim,
        ConditionUpdate.true(LAUNCHED),
        fields={
            "providerID": instance.provider_id,
            "imageID": instance.image_id or None,
            "capacity": format_resource_list(instance.capacity),
            "allocatable": format_resource_list(instance.allocatable),
        },
    )
    pool = claim.metadata.labels.get(LABEL_NODEPOOL, "")
    log.info("launched nodeclaim", **obj_ref("NodeClaim", claim.name),
             providerID=instance.provider_id,
             instanceType=instance.instance_type, zone=instance.zone,
             capacityType=instance.capacity_type,
             allocatable=format_resource_list(instance.allocatable))  # fmt: skip
    if ctx.metrics is not None:
        ctx.metrics.nodeclaims_launched.labels(pool).inc()
    return claim


def _labels(claim: NodeClaim, instance: Instance) -> dict[str, str]:
    """The cloud's labels, then single-valued requirements, then the claim's own: later
    ones win, as in Karpenter's ``PopulateNodeClaimDetails``."""
    resolved = {
        r.key: r.values[0]
        for r in claim.spec.requirements
        if r.operator == "In" and len(r.values) == 1
        and r.key not in SIMULATION_ONLY_KEYS and r.key != LABEL_HOSTNAME
    }  # fmt: skip
    return {**instance.labels, **resolved, **claim.metadata.labels}


def _tell_nominated_pods(ctx: Lifecycle, claim: NodeClaim, error: str) -> None:
    """A Warning Event on each pod nominated to ``claim`` that still waits for it (not
    bound, finished or being deleted): its capacity failed to launch, so nobody needs the
    controller's log to learn why the pod stays pending (Karpenter v1.15, #3143)."""
    if ctx.nominated is None:
        return
    pods = ctx.state.snapshot().pods
    message = truncated(f"NodeClaim {claim.name} nominated for this pod failed to launch: {error}")
    for key in ctx.nominated(claim.name):
        info = pods.get(key)
        if info is None:
            continue
        pod = info.pod
        if pod.node_name or pod.is_terminal or pod.terminating:
            continue
        ref = ObjectRef("Pod", pod.name, pod.namespace, pod.uid, "v1")
        ctx.recorder.publish(Event(ref, "Warning", "InsufficientCapacityError", message,
                                   dedupe_values=(pod.uid,)))  # fmt: skip


def truncated(message: str) -> str:
    """``message`` cut to what an Event holds (1,024 characters), marked when cut."""
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    return message[: EVENT_MESSAGE_LIMIT - 3] + "..."


async def _give_up(
    ctx: Lifecycle, claim: NodeClaim, reason: str, metric_reason: str, message: str
) -> None:
    ctx.recorder.publish(Event(nodeclaim_ref(claim), "Warning", reason,
                               truncated(f"NodeClaim {claim.name} event: {message}")))  # fmt: skip
    log.warning("deleting nodeclaim: launch failed", **obj_ref("NodeClaim", claim.name),
                reason=reason, error=message)  # fmt: skip
    try:
        await ctx.client.delete(NODECLAIMS, claim.name)
    except NotFound:
        return
    if ctx.metrics is not None:
        labels = claim.metadata.labels
        ctx.metrics.nodeclaims_disrupted.labels(
            metric_reason, labels.get(LABEL_NODEPOOL, ""),
            labels.get("karpenter.sh/capacity-type", ""), "", "",
        ).inc()  # fmt: skip
