"""Initialization: a registered node is ready for the pods it was made for.

A NodeClaim is ``Initialized`` once its Node is Ready, every startup taint is gone (some
DaemonSet removes them once the node is set up), the known ephemeral taints are gone
(``node.kubernetes.io/not-ready``, ``unreachable``, the cloud provider's
``uninitialized``, ``karpenter.sh/unregistered``, ``readiness.k8s.io/*``), and every
extended resource it was sized for (a GPU, say) shows in the Node's allocatable. Until
then the condition is Unknown with the reason that holds it back, so ``kubectl describe
nodeclaim`` says what it waits for. The Node is then labelled
``karpenter.sh/initialized=true``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.apis.conditions import ConditionUpdate
from karpy.apis.labels import LABEL_INITIALIZED, LABEL_NODEPOOL
from karpy.apis.resources import format_resource_list
from karpy.kube.resources import NODES
from karpy.lifecycle.conditions import INITIALIZED, REGISTERED, is_true
from karpy.log import get_logger, obj_ref
from karpy.scheduling.taints import is_ephemeral_taint

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.core import Taint
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.lifecycle.context import Lifecycle
    from karpy.state.records import NodeInfo

__all__ = ["initialize", "initialized", "not_initialized_because"]

log = get_logger("nodeclaim.lifecycle")

WELL_KNOWN_RESOURCES: Final = frozenset({"cpu", "memory", "pods", "ephemeral-storage", "nodes"})


def not_initialized_because(
    claim: NodeClaim, node: NodeInfo, taints: Sequence[Taint] | None = None
) -> tuple[str, str] | None:
    """(reason, message) that keeps ``node`` from being initialized, or None; with
    ``taints``, as if the node carried those (what registration is about to write)."""
    if not node.ready:
        return "NodeNotReady", "Node status is NotReady"
    taints = node.spec_taints if taints is None else taints
    startup = [t for t in taints if any(s.matches(t) for s in claim.spec.startup_taints)]
    if startup:
        names = ", ".join(f"{t.key}:{t.effect}" for t in startup)
        return "StartupTaintsExist", f"StartupTaint {names} still exists"
    ephemeral = [t for t in taints if is_ephemeral_taint(t)]
    if ephemeral:
        names = ", ".join(f"{t.key}:{t.effect}" for t in ephemeral)
        return "KnownEphemeralTaintsExist", f"KnownEphemeralTaint {names} still exists"
    missing = sorted(
        name
        for name, quantity in claim.spec.resources.requests.items()
        if name not in WELL_KNOWN_RESOURCES and quantity > 0
        and node.node.allocatable.get(name, 0) <= 0
    )  # fmt: skip
    if missing:
        return (
            "ResourceNotRegistered",
            f"Resource {', '.join(missing)} was requested but not registered",
        )
    return None


async def initialize(ctx: Lifecycle, claim: NodeClaim) -> NodeClaim:
    if is_true(claim, INITIALIZED) or not is_true(claim, REGISTERED):
        return claim
    node = ctx.state.snapshot().node_by_provider(claim.status.provider_id)
    if node is None:
        return await ctx.set_conditions(
            claim,
            ConditionUpdate.unknown(
                INITIALIZED, "NodeNotFound", "Node not registered with cluster"
            ),
        )
    blocked = not_initialized_because(claim, node)
    if blocked is not None:
        return await ctx.set_conditions(claim, ConditionUpdate.unknown(INITIALIZED, *blocked))
    if node.node.labels.get(LABEL_INITIALIZED) != "true":
        await ctx.client.patch(
            NODES, node.name, {"metadata": {"labels": {LABEL_INITIALIZED: "true"}}}
        )
    claim = await ctx.set_conditions(claim, ConditionUpdate.true(INITIALIZED))
    initialized(ctx, claim, node)
    return claim


def initialized(ctx: Lifecycle, claim: NodeClaim, node: NodeInfo) -> None:
    """Log and count ``claim`` initialized (its condition and label are written)."""
    log.info("initialized nodeclaim", **obj_ref("NodeClaim", claim.name),
             **obj_ref("Node", node.name),
             allocatable=format_resource_list(node.node.allocatable))  # fmt: skip
    if ctx.metrics is not None:
        ctx.metrics.nodeclaims_initialized.labels(
            claim.metadata.labels.get(LABEL_NODEPOOL, "")
        ).inc()
