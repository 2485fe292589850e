"""The message kube-scheduler leaves on a pod it could not place.

Upstream's ``FitError`` (``pkg/scheduler/framework/types.go``) counts, for every node,
the reasons its filters gave, and renders the histogram sorted as text:
``0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint
{karpenter.sh/unregistered: }.`` A PreFilter failure (a missing claim) is one reason for
the whole pod: ``0/5 nodes are available: persistentvolumeclaim "data" not found.`` With
no nodes at all the message is ``no nodes available to schedule pods``.

The stand-in does not run its filters on nodes that are not Ready, cordoned or being
deleted; they are counted here under the reason upstream gives them (a not-Ready node
carries the ``node.kubernetes.io/not-ready`` taint) — `excluded`.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Final

import attrs

from karpy.sandbox.cluster import facts

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.sandbox.apiserver.store import Entry

NOT_READY: Final = "node(s) had untolerated taint {node.kubernetes.io/not-ready: }"
CORDONED: Final = "node(s) were unschedulable"
DELETING: Final = "node(s) were being deleted"
NO_NODES: Final = "no nodes available to schedule pods"


@attrs.frozen(slots=True)
class NoFit:
    """Why a pod fits no node: per-node reasons, or one PreFilter reason."""

    reasons: Counter[str] = attrs.Factory(Counter)
    prefilter: str = ""

    def render(self, total: int, excluded: Counter[str]) -> str:
        if total == 0:
            return NO_NODES
        if self.prefilter:
            return f"0/{total} nodes are available: {self.prefilter}."
        counts = excluded + self.reasons
        parts = sorted(f"{count} {reason}" for reason, count in counts.items())
        return f"0/{total} nodes are available: {', '.join(parts)}."


def excluded(nodes: Iterable[Entry]) -> Counter[str]:
    """The nodes the stand-in's filters never see, by upstream's reason."""
    out: Counter[str] = Counter()
    for entry in nodes:
        obj = entry.obj
        if not facts.node_is_ready(obj):
            out[NOT_READY] += 1
        elif facts.spec(obj).get("unschedulable"):
            out[CORDONED] += 1
        elif facts.is_deleting(obj):
            out[DELETING] += 1
    return out
