"""`NodePoolUsage`: what a NodePool's nodes add up to, their summed capacity and how
many they are.

NodePool limits cap both, and Kubernetes writes both in one ResourceList: the pool's
``status.resources`` holds the summed capacity *and* ``nodes``, the count, as if it were
one more resource (Karpenter's ``limits: {nodes: 10}`` reads the same list). karpy keeps
the two apart, so no code counts nodes in milli-units, and joins them only where a
ResourceList is read or written: `NodePoolUsage.from_resource_list` (a pool's status),
`NodePoolUsage.amount` (what a limit is judged against) and `NodePoolUsage.status` (the
status the NodePool counter writes, exactly as before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.apis.resources import format_resource_list
from karpy.scheduling.resources import NODES, ONE

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

__all__ = ["NodePoolUsage"]


@attrs.frozen(slots=True)
class NodePoolUsage:
    resources: Mapping[str, int] = attrs.field(factory=dict)  # milli-units, no "nodes"
    nodes: int = 0

    @classmethod
    def of_nodes(cls, capacities: Iterable[Mapping[str, int]]) -> NodePoolUsage:
        """The usage of nodes with these capacities, one node each."""
        totals: dict[str, int] = {}
        count = 0
        for capacity in capacities:
            for name, value in capacity.items():
                totals[name] = totals.get(name, 0) + value
            count += 1
        return cls(totals, count)

    @classmethod
    def from_resource_list(cls, resources: Mapping[str, int]) -> NodePoolUsage:
        """The usage a ResourceList with ``nodes`` in it (a pool's ``status.resources``)
        says; a part of a node counts as a whole one."""
        rest = {name: value for name, value in resources.items() if name != NODES}
        return cls(rest, -(-resources.get(NODES, 0) // ONE))

    def plus_node(self, capacity: Mapping[str, int]) -> NodePoolUsage:
        """This usage and one more node of ``capacity``."""
        return self + NodePoolUsage.of_nodes((capacity,))

    def __add__(self, other: NodePoolUsage) -> NodePoolUsage:
        totals = dict(self.resources)
        for name, value in other.resources.items():
            totals[name] = totals.get(name, 0) + value
        return NodePoolUsage(totals, self.nodes + other.nodes)

    def amount(self, resource: str) -> int:
        """How much of ``resource`` is used, in milli-units, ``nodes`` included (what a
        limit on it is judged against)."""
        if resource == NODES:
            return self.nodes * ONE
        return self.resources.get(resource, 0)

    def resource_list(self) -> dict[str, int]:
        """As one ResourceList (milli-units), the count as ``nodes`` after the resources."""
        return {**self.resources, NODES: self.nodes * ONE}

    def status(self) -> dict[str, Any]:
        """The NodePool ``status`` fields it is written as."""
        return {"resources": format_resource_list(self.resource_list()), "nodes": self.nodes}
