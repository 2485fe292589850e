"""The Events disruption records, with Karpenter's reasons and messages, on the Node and
its NodeClaim alike (one dedupe key per object and message)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from karpy.kube.events import Event, ObjectRef

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim

__all__ = ["node_and_claim_events"]

UNCONSOLIDATABLE_DEDUPE: Final = 900.0  # seconds (Karpenter: 15 minutes)


def node_and_claim_events(
    node: str | None,
    claim: NodeClaim | None,
    reason: str,
    message: str,
    *,
    type_: str = "Normal",
    dedupe_timeout: float | None = None,
) -> list[Event]:
    """``reason``/``message`` on the Node (when it has one) and on the NodeClaim."""
    refs = []
    if node:
        refs.append(ObjectRef("Node", node, api_version="v1"))
    if claim is not None:
        refs.append(ObjectRef("NodeClaim", claim.name, uid=claim.metadata.uid,
                              api_version="karpenter.sh/v1"))  # fmt: skip
    extra = {} if dedupe_timeout is None else {"dedupe_timeout": dedupe_timeout}
    return [
        Event(
            ref,
            type_,
            reason,
            message,
            dedupe_values=(ref.kind, ref.name, reason, message),
            **extra,
        )
        for ref in refs
    ]
