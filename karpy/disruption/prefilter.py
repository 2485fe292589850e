"""Can this node be consolidated at all? A necessary condition, cheap enough to check
before every single-node what-if.

A what-if (`karpy.disruption.simulation.WhatIf`) is a full scheduler round over the
whole cluster: about 0.1 s at 10,000 pods, 0.4 s at 40,000. Right after a scale-up
nearly every node is a consolidation candidate and nearly none can go, so single-node
consolidation used to spend its whole time bound (minutes of a core) proving, one node
at a time, what a few sums already show. `Prefilter` is built once per pass from the
same round input the what-ifs start from, and answers in microseconds whether a
candidate *might* be consolidated. Only when it might is the what-if run; the decision
is the what-if's, as before, so decisions do not change, only the time.

The what-if can consolidate a node only by deleting it (every reschedulable pod placed
on another initialized node that is not being deleted) or by replacing it (the same,
plus exactly one new node strictly cheaper than it). So, for the node's reschedulable
pods, with *room* = allocatable minus the requests of the pods bound or nominated there:

* a pod that fits in the room of no other such node must go on the new node, so those
  pods together must fit one instance type whose cheapest available offering is below
  the node's price;
* all the pods together must fit in the total room of the other nodes, plus that
  type's allocatable when a new node is needed or helps.

A spot node cannot be replaced by a node that could be spot unless the
``SpotToSpotConsolidation`` gate is on, so without the gate its replacement can only be
an on-demand (or reserved) node, priced as such.

One constraint is counted, because it is cheap, certain and common: a pod with required
pod anti-affinity on the hostname has no room on a node that runs a pod its term selects
(one such pod per node is the usual shape, and then it fits no other node at all).
Everything else the scheduler checks (requirements, other affinity, taints, topology,
DaemonSet overhead, host ports, volumes, the pending pods that compete for the same
room, the spot-to-spot rules) is ignored here: ignoring a constraint only makes the
check more permissive, so a candidate it refuses is one the what-if would refuse too.

Multi-node consolidation does not use it: there, the "other nodes" change with every
prefix tried, and the binary search already runs few what-ifs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.apis.labels import CAPACITY_TYPE_SPOT, LABEL_HOSTNAME
from karpy.scheduling.resources import ResourceList, add_into, fits, merge, subtract

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from karpy.scheduling.context import SchedulingContext
    from karpy.scheduling.nodes import ClusterNode
    from karpy.scheduling.pods import Pod
    from karpy.scheduling.selectors import LabelSelector

__all__ = ["Prefilter"]

RequestKey = tuple[tuple[str, int], ...]
Exclusion = tuple[frozenset[str], "LabelSelector"]  # an anti-affinity term's namespaces, selector


class Prefilter:
    """Room on the usable nodes and the cheapest instance-type shapes, from one
    snapshot; `why_not` checks one candidate against them."""

    def __init__(
        self,
        capacity: Iterable[ClusterNode],
        bound_pods: Iterable[Pod],
        context: SchedulingContext,
    ) -> None:
        used: dict[str, ResourceList] = {}
        self.active: list[Pod] = []  # what the scheduler's topology counts
        for pod in bound_pods:
            if not pod.is_terminal:
                add_into(used.setdefault(pod.node_name, {}), pod.requests)
                if pod.is_active and pod.node_name:
                    self.active.append(pod)
        self.room: dict[str, ResourceList] = {}
        for node in capacity:
            if node.marked_for_deletion or not node.initialized:
                continue  # the what-if never lets a candidate's pods count on these
            room = subtract(node.allocatable, used.get(node.name, {}))
            if all(v >= 0 for v in room.values()):  # an over-committed node fits nothing
                self.room[node.name] = room
        self.total_room = merge(*self.room.values())
        self.shapes = _cheapest_shapes(context, spot=True)
        self.shapes_without_spot = _cheapest_shapes(context, spot=False)
        self._hosts: dict[tuple[RequestKey, tuple[Exclusion, ...]], tuple[str, ...]] = {}
        self._excluded: dict[Exclusion, frozenset[str]] = {}

    def why_not(
        self, name: str, price: float, pods: Sequence[Pod], *, spot_replacement: bool = True
    ) -> str:
        """Why node ``name`` (costing ``price`` an hour), whose reschedulable pods are
        ``pods``, can be neither deleted nor replaced by a cheaper node; "" if it might.
        ``spot_replacement``: whether its replacement may be a spot node."""
        if not pods:
            return ""
        own = self.room.get(name)
        others = subtract(self.total_room, own) if own is not None else self.total_room
        total: ResourceList = {}
        homeless: ResourceList = {}  # requests of the pods no other node has room for
        stranded = 0
        for pod in pods:
            add_into(total, pod.requests)
            if not any(host != name for host in self._hosts_for(pod)):
                add_into(homeless, pod.requests)
                stranded += 1
        if not stranded and fits(total, others):
            return ""
        shapes = self.shapes if spot_replacement else self.shapes_without_spot
        for shape_price, allocatable in shapes:
            if shape_price >= price:
                break
            if fits(homeless, allocatable) and fits(total, merge(others, allocatable)):
                return ""
        where = (f"{stranded} of its pods fit on no other node" if stranded
                 else "its pods exceed the room left on other nodes")  # fmt: skip
        if not spot_replacement:
            return (f"{where} and no cheaper on-demand instance type can hold them "
                    f"(SpotToSpotConsolidation is disabled)")  # fmt: skip
        return f"{where} and no cheaper instance type can hold them"

    def _hosts_for(self, pod: Pod) -> tuple[str, ...]:
        """Up to two nodes with room for ``pod`` (two: one may be the candidate)."""
        requests = pod.requests
        exclusions = _exclusions(pod)
        key = (tuple(sorted(requests.items())), exclusions)
        hosts = self._hosts.get(key)
        if hosts is None:
            excluded = frozenset[str]().union(*(self._nodes_running(e) for e in exclusions))
            found: list[str] = []
            for node, room in self.room.items():
                if node not in excluded and fits(requests, room):
                    found.append(node)
                    if len(found) == 2:
                        break
            hosts = self._hosts[key] = tuple(found)
        return hosts

    def _nodes_running(self, exclusion: Exclusion) -> frozenset[str]:
        """Nodes running a pod that ``exclusion`` selects."""
        nodes = self._excluded.get(exclusion)
        if nodes is None:
            namespaces, selector = exclusion
            nodes = self._excluded[exclusion] = frozenset(
                p.node_name
                for p in self.active
                if p.namespace in namespaces and selector.matches(p.labels)
            )
        return nodes


def _exclusions(pod: Pod) -> tuple[Exclusion, ...]:
    """The pod's required hostname anti-affinity terms, as (namespaces, selector); terms
    with a namespace selector are left out (they need namespace labels; leaving a
    constraint out only makes the check more permissive)."""
    return tuple(
        (frozenset(term.namespaces or (pod.namespace,)), term.selector)
        for term in pod.required_anti_affinity
        if term.topology_key == LABEL_HOSTNAME and term.namespace_selector is None
    )


def _cheapest_shapes(context: SchedulingContext, *, spot: bool) -> list[tuple[float, ResourceList]]:
    """(cheapest available price, allocatable) of every instance type any NodePool may
    launch, cheapest first, without those another type at most as dear holds as much of
    every resource (they can never be the only fit); spot offerings only if ``spot``."""
    options = 0
    for pool in context.pools:
        options |= pool.options
    priced = []
    for i, it in enumerate(context.index.types):
        if not options >> i & 1:
            continue
        price = min(
            (
                o.price
                for o in it.offerings
                if o.available and (spot or o.capacity_type != CAPACITY_TYPE_SPOT)
            ),
            default=None,
        )
        if price is not None:
            priced.append((price, it.allocatable))
    priced.sort(key=lambda p: p[0])
    kept: list[tuple[float, ResourceList]] = []
    for price, allocatable in priced:
        if not any(fits(allocatable, bigger) for _, bigger in kept):
            kept.append((price, allocatable))
    return kept
