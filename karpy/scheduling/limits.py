"""NodePool limits within a round, counted pessimistically so they are never exceeded.

A NodePool's ``spec.limits`` caps the total capacity of its nodes. What is already used is
the larger of the pool's ``status.resources`` and the summed capacity of its existing nodes
and in-flight NodeClaims (the status may lag behind the cluster; summing nodes may miss
ones not yet seen; taking the maximum never under-counts). Each NodeClaim planned in the
round may still launch as its largest remaining option, so the round subtracts the
per-resource *maximum* capacity over its options (Karpenter's ``subtractMax``), and a new
NodeClaim may only choose instance types whose capacity fits what is left. A ``nodes``
limit counts one per node (karpy also charges planned NodeClaims against it, which
Karpenter's scheduler leaves to launch time).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.base.quantity import format_resource
from karpy.scheduling.resources import NODES, ONE, ResourceList
from karpy.scheduling.usage import NodePoolUsage

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.scheduling.context import PoolCandidates, SchedulingContext
    from karpy.scheduling.nodes import ClusterNode

__all__ = ["PoolLimits"]


class PoolLimits:
    __slots__ = ("_cache", "_context", "remaining")

    def __init__(self, context: SchedulingContext, capacity: Iterable[ClusterNode]) -> None:
        self._context = context
        self._cache: dict[str, tuple[tuple[tuple[str, int], ...], int]] = {}
        capacities: dict[str, list[ResourceList]] = {}
        for node in capacity:
            if node.marked_for_deletion:
                continue
            pool = node.nodepool
            if pool not in context.templates:
                continue
            capacities.setdefault(pool, []).append(node.capacity)
        self.remaining: dict[str, ResourceList] = {}
        for name, template in context.templates.items():
            if not template.limits:
                continue
            counted = NodePoolUsage.of_nodes(capacities.get(name, ()))
            self.remaining[name] = {
                resource: limit - max(counted.amount(resource), template.usage.amount(resource))
                for resource, limit in template.limits.items()
            }

    def options_within(self, pool: PoolCandidates) -> int:
        """The pool's instance types a new NodeClaim may use without breaching limits."""
        name = pool.template.nodepool
        remaining = self.remaining.get(name)
        if remaining is None:
            return pool.options
        key = tuple(sorted(remaining.items()))
        cached = self._cache.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        mask = 0
        if remaining.get(NODES, ONE) >= ONE:
            index = self._context.index
            mask = pool.options
            for resource, left in remaining.items():
                if resource != NODES:
                    mask &= index.capacity_at_most_mask(resource, left)
        self._cache[name] = (key, mask)
        return mask

    def reserve(self, pool: PoolCandidates, options: int) -> None:
        """Charge a planned NodeClaim's largest possible capacity against the pool."""
        remaining = self.remaining.get(pool.template.nodepool)
        if remaining is None:
            return
        index = self._context.index
        for resource in remaining:
            if resource == NODES:
                remaining[resource] -= ONE
            else:
                remaining[resource] -= index.max_capacity(options, resource)

    def describe(self, pool: PoolCandidates) -> str:
        remaining = self.remaining.get(pool.template.nodepool, {})
        if remaining.get(NODES, ONE) < ONE:
            return "node limit of the nodepool is exhausted"
        left = ", ".join(
            f"{r} {format_resource(r, max(v, 0))}" for r, v in sorted(remaining.items())
        )
        return f"every instance type would exceed the nodepool's limits (remaining: {left})"
