"""Pods on nodes being deleted that need a new home this round.

When a node is being disrupted, Karpenter provisions for its pods before they are evicted,
but only for pods that will actually move: active (or terminating StatefulSet) pods not
owned by a DaemonSet or the node itself, not protected by ``karpenter.sh/do-not-disrupt``,
and not covered by a PodDisruptionBudget that blocks every eviction (``maxUnavailable: 0``
or ``0%``, ``minAvailable: 100%``) or by more than one budget (the eviction API refuses
those). Pods that tolerate the ``karpenter.sh/disrupted`` taint are never evicted, so
budgets do not matter for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.core import Taint
from karpy.apis.labels import TAINT_DISRUPTED
from karpy.scheduling.selectors import LabelSelector, selector_from_dict
from karpy.scheduling.taints import tolerates_all

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.scheduling.pods import Pod

__all__ = ["DisruptionBudget", "pdb_from_dict", "reschedulable_pods"]

_DISRUPTED = (Taint(key=TAINT_DISRUPTED, effect="NoSchedule"),)


@attrs.frozen(slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector
    fully_blocking: bool


def pdb_from_dict(data: Mapping[str, Any]) -> DisruptionBudget:
    meta = data.get("metadata") or {}
    spec = data.get("spec") or {}
    max_unavailable = spec.get("maxUnavailable")
    min_available = spec.get("minAvailable")
    blocking = (max_unavailable in (0, "0%") or min_available == "100%") and not isinstance(
        max_unavailable, bool
    )
    return DisruptionBudget(
        namespace=str(meta.get("namespace") or "default"),
        name=str(meta.get("name", "")),
        selector=selector_from_dict(spec.get("selector") if "selector" in spec else {}),
        fully_blocking=blocking,
    )


def _blocked(pod: Pod, budgets: Sequence[DisruptionBudget]) -> bool:
    if not pod.is_active or tolerates_all(_DISRUPTED, pod.tolerations) or pod.is_static_pod:
        return False  # not evicted at all, so no budget applies
    matching = [
        b for b in budgets if b.namespace == pod.namespace and b.selector.matches(pod.labels)
    ]
    if len(matching) > 1:
        return True
    return any(b.fully_blocking for b in matching)


def reschedulable_pods(pods: Iterable[Pod], budgets: Sequence[DisruptionBudget]) -> list[Pod]:
    """The pods among ``pods`` (bound to deleting nodes) to provision new capacity for."""
    out = []
    for pod in pods:
        if not pod.is_reschedulable:
            continue
        if pod.is_active and pod.do_not_disrupt:
            continue
        if _blocked(pod, budgets):
            continue
        out.append(pod)
    return out
