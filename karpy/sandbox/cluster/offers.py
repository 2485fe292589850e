"""Which already-failed pods an incremental pass tries on the nodes that changed.

Every pod here failed against every node before, so it can only fit on a *dirty* node
(joined, changed, freed). Handing all 36,000 of them to the solver for three new nodes
would cost a second per pass for a few dozen placements; handing it too few would leave
room unused. The bound, per group of identical pods (same spec, labels and owners), is:

1. **What fits at all**: on each dirty node the pod tolerates and whose labels its node
   selector and required affinity accept, the fewest of free ÷ requested over its
   resources (``pods`` included), summed over those nodes.
2. **What is left after bigger pods**: the solver places pods largest first, so groups
   take their share of the dirty nodes' summed free room in that order, and a group gets
   no more than the room the groups before it have not claimed.

Every group that can fit anywhere is offered at least one pod, so a pass learns whether
the group fits at all. Both bounds are upper bounds when the solver uses room as claimed;
when a group was cut short and every pod offered was placed, room may be left (bigger
groups claimed more than they used), and `Offer.more_may_fit` asks for another pass. Each
such pass places pods, so passes end; a pass that places none of a cut group's pods
shows no more fit, as the solver would place further pods of that group no differently.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import LABEL_HOSTNAME
from karpy.sandbox.cluster.nodematch import pod_accepts
from karpy.scheduling.resources import CPU, MEMORY
from karpy.scheduling.taints import first_untolerated

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.apis.core import Taint
    from karpy.scheduling.nodes import Node
    from karpy.scheduling.pods import Pod


@attrs.frozen(slots=True)
class _NodeKind:
    """Dirty nodes that are alike for offering: same free room, labels and taints."""

    free: Mapping[str, int]
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    count: int


@attrs.frozen(slots=True)
class Offer:
    pods: tuple[Pod, ...]
    cut: Mapping[int, int]  # group -> pods offered, for groups offered fewer than they have

    def more_may_fit(self, placed: Iterable[int]) -> bool:
        """Whether a cut group had every offered pod placed (``placed``: their groups)."""
        counts = Counter(placed)
        return any(counts[group] >= offered for group, offered in self.cut.items())


def _kinds(dirty: Sequence[Node], near: Sequence[Pod]) -> list[_NodeKind]:
    used: dict[str, dict[str, int]] = {}
    for pod in near:
        if pod.is_terminal:
            continue
        node_used = used.setdefault(pod.node_name, {})
        for resource, value in pod.requests.items():
            node_used[resource] = node_used.get(resource, 0) + value
    alike: Counter[
        tuple[tuple[tuple[str, int], ...], tuple[tuple[str, str], ...], tuple[Taint, ...]]
    ]
    alike = Counter()
    for node in dirty:
        taken = used.get(node.name, {})
        free = tuple(sorted((r, v - taken.get(r, 0)) for r, v in node.allocatable.items()))
        labels = tuple(sorted((k, v) for k, v in node.labels.items() if k != LABEL_HOSTNAME))
        hard = tuple(t for t in node.taints if t.effect in ("NoSchedule", "NoExecute"))
        alike[(free, labels, hard)] += 1
    return [
        _NodeKind(dict(free), dict(labels), taints, count)
        for (free, labels, taints), count in alike.items()
    ]


def _names_a_host(pod: Pod) -> bool:
    """Selects nodes by hostname, which node kinds leave out: then no kind is ruled out."""
    return any(key == LABEL_HOSTNAME for key, _ in pod.node_selector) or any(
        r.key == LABEL_HOSTNAME for term in pod.required_node_terms for r in term
    )


def _fits(requests: Sequence[tuple[str, int]], free: Mapping[str, int]) -> int:
    return min((max(free.get(r, 0), 0) // v for r, v in requests), default=0)


def offer(groups: Mapping[int, Sequence[Pod]], dirty: Sequence[Node], near: Sequence[Pod]) -> Offer:
    """The pods of ``groups`` (each oldest first) worth trying on ``dirty`` nodes, given the
    pods bound ``near`` them."""
    kinds = _kinds(dirty, near)
    claimable: Counter[str] = Counter()
    for kind in kinds:
        for resource, value in kind.free.items():
            claimable[resource] += max(value, 0) * kind.count
    order = sorted(
        groups.items(),
        key=lambda item: (
            -item[1][0].requests.get(CPU, 0),
            -item[1][0].requests.get(MEMORY, 0),
            item[1][0].creation_timestamp,
        ),
    )
    offered: list[Pod] = []
    cut: dict[int, int] = {}
    for group, members in order:
        pod = members[0]
        requests = [(r, v) for r, v in pod.requests.items() if v > 0]
        by_name = _names_a_host(pod)
        fits = sum(
            kind.count * _fits(requests, kind.free)
            for kind in kinds
            if first_untolerated(kind.taints, pod.tolerations) is None
            and (by_name or pod_accepts(pod, kind.labels))
        )
        if fits <= 0:
            continue
        count = max(1, min(len(members), fits, _fits(requests, claimable)))
        for resource, value in requests:
            claimable[resource] -= value * count
        offered.extend(members[:count])
        if count < len(members):
            cut[group] = count
    return Offer(tuple(offered), cut)
