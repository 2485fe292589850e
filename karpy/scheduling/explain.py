"""Why a pod could not be placed, in one line per NodePool.

The hot path of the solver only records *that* a node refused a pod. For pods still
unplaced when the round ends, `Explainer` replays the decision once per pod shape, with
every preference relaxed (the form in which the pod was last tried), against a fresh
NodeClaim of each NodePool, and reports the first constraint that failed there:

* ``incompatible with nodepool "gpu": node selector example.com/gpu-family=h100 not in
  [a10g]`` - a requirement conflict, or a label no NodePool or provider defines;
* ``incompatible with nodepool "infra": did not tolerate taint dedicated=infra:NoSchedule``;
* ``no instance type has 300Gi memory after overhead (largest: r5a.8xlarge, 239554Mi
  allocatable)`` - for resources, the closest instance type and its allocatable;
* topology, volume topology, volume attachment limits, host ports, limits and
  ``minValues`` failures likewise.

A pod's volumes count against instance types' attachment limits, and pods of one shape
may mount different numbers of claims, so explanations are kept per shape and per count
of claims by driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.base.quantity import format_resource
from karpy.scheduling.kinds import RejectionKind
from karpy.scheduling.nodeclaim import NewNodeClaim, Plan, Rejection
from karpy.scheduling.requirements import RequirementConflict, Requirements, UndefinedLabel
from karpy.scheduling.resources import merge, render_resources
from karpy.scheduling.results import PoolReason, UnschedulableReason
from karpy.scheduling.taints import Taint, render_taint
from karpy.scheduling.topology import TopologyFailure

if TYPE_CHECKING:
    from collections.abc import Callable

    from karpy.scheduling.context import PoolCandidates
    from karpy.scheduling.environment import RoundEnvironment
    from karpy.scheduling.index import InstanceTypeIndex
    from karpy.scheduling.limits import PoolLimits
    from karpy.scheduling.shapes import PodShape
    from karpy.scheduling.volumelimits import PodVolumes

__all__ = ["Explainer", "describe_incompatibility"]


def _values(values: frozenset[str]) -> str:
    items = sorted(values)
    if len(items) > 5:
        items = [*items[:5], f"and {len(items) - 5} more"]
    return "[" + ", ".join(items) + "]"


def _source(key: str, shape: PodShape | None) -> str:
    if shape is not None and any(k == key for k, _ in shape.node_selector):
        return "node selector"
    return "node affinity"


def describe_incompatibility(
    problem: UndefinedLabel | RequirementConflict,
    shape: PodShape | None = None,
    what: str = "nodepool",
) -> str:
    """A requirement problem in words, from the pod's point of view."""
    if isinstance(problem, UndefinedLabel):
        return (
            f"{_source(problem.key, shape)} requires label {problem.key}, which neither the "
            f"{what} nor the provider's well-known labels define"
        )
    key, wanted, have = problem.key, problem.incoming, problem.existing
    op = wanted.operator
    if op == "In" and len(wanted.values) == 1 and wanted.gte is None and wanted.lte is None:
        asked = f"{key}={next(iter(wanted.values))}"
    else:
        asked = wanted.render()
    have_op = have.operator
    if have_op == "In" and have.gte is None and have.lte is None:
        allowed = f"not in {_values(have.values)}"
    elif have_op == "DoesNotExist":
        allowed = f"but the {what} requires {key} to be absent"
    else:
        allowed = f"conflicts with {have.render()}"
    return f"{_source(key, shape)} {asked} {allowed}"


class Explainer:
    """Explains unplaced pods of a round: ``fresh_claim`` opens a node of a pool as the
    round would now (within what its limits leave), ``limits`` describes them."""

    __slots__ = ("_by_shape", "_env", "_fresh_claim", "_limits")

    def __init__(
        self,
        env: RoundEnvironment,
        fresh_claim: Callable[[PoolCandidates], NewNodeClaim | Rejection],
        limits: PoolLimits,
    ) -> None:
        self._env = env
        self._fresh_claim = fresh_claim
        self._limits = limits
        self._by_shape: dict[tuple[int, tuple[tuple[str, int], ...]], UnschedulableReason] = {}

    def explain(
        self, shape: PodShape, pod_volumes: PodVolumes | None = None
    ) -> UnschedulableReason:
        """Why a pod of ``shape``, mounting ``pod_volumes``, found no place."""
        counts = tuple(sorted((d, len(c)) for d, c in (pod_volumes or {}).items()))
        key = (id(shape), counts)
        cached = self._by_shape.get(key)
        if cached is not None:
            return cached
        reason = self._explain(self._fully_relaxed(shape), pod_volumes)
        self._by_shape[key] = reason
        return reason

    def _fully_relaxed(self, shape: PodShape) -> PodShape:
        env = self._env
        while True:
            relaxed = shape.relax(env.tolerate_prefer_no_schedule, env.policy)
            if relaxed is None:
                return shape
            env.topology.prepare(relaxed)
            shape = relaxed

    def _explain(self, shape: PodShape, volumes: PodVolumes | None) -> UnschedulableReason:
        context = self._env.context
        if not context.pools:
            if context.skipped:
                reasons = tuple(
                    PoolReason(s.template.nodepool, RejectionKind.INSTANCE_TYPES, s.reason)
                    for s in context.skipped
                )
                return UnschedulableReason(pools=reasons)
            if context.templates:
                return UnschedulableReason(message="no ready nodepools")
            return UnschedulableReason(message="no nodepools found")
        return UnschedulableReason(
            pools=tuple(self._pool(pool, shape, volumes) for pool in context.pools)
        )

    def _pool(
        self, pool: PoolCandidates, shape: PodShape, volumes: PodVolumes | None
    ) -> PoolReason:
        name = pool.template.nodepool
        claim = self._fresh_claim(pool)
        if isinstance(claim, Rejection):
            return PoolReason(name, RejectionKind.LIMITS, str(claim.detail))
        result = self._try(claim, shape, volumes)
        if isinstance(result, Plan):
            return PoolReason(
                name,
                RejectionKind.ORDERING,
                "a new node would fit now, but not when the pod was tried (it depends on "
                "other pods placed in this round)",
            )
        if result.transient and volumes and result.kind in _INSTANCE_TYPE_KINDS:
            attachable = claim.attachable(volumes, self._env.index)
            if isinstance(attachable, int) and isinstance(self._try(claim, shape, None), Plan):
                # It fits without its volumes: the types that can attach them are the problem.
                narrowed = NewNodeClaim(pool, attachable, claim.daemon_groups, -1)
                return PoolReason(
                    name,
                    RejectionKind.VOLUME_LIMIT,
                    f"volume attachment limit: of the instance types that can attach "
                    f"{_volume_counts(volumes)}, " + self._instance_types(narrowed, shape),
                )
        if result.kind in _INSTANCE_TYPE_KINDS and claim.options != pool.options:
            unlimited = NewNodeClaim(pool, pool.options, claim.daemon_groups, -1)
            if isinstance(self._try(unlimited, shape, volumes), Plan):
                return PoolReason(name, RejectionKind.LIMITS, self._limits.describe(pool))
        return PoolReason(name, result.kind, self._message(result, claim, shape))

    def _try(
        self, claim: NewNodeClaim, shape: PodShape, volumes: PodVolumes | None
    ) -> Plan | Rejection:
        env = self._env
        return claim.can_add(shape, env, relax_min_values=env.relax_min_values, pod_volumes=volumes)

    def _message(self, rejection: Rejection, claim: NewNodeClaim, shape: PodShape) -> str:
        detail = rejection.detail
        kind = rejection.kind
        if kind == RejectionKind.TAINTS and isinstance(detail, Taint):
            return f"did not tolerate taint {render_taint(detail)}"
        if kind == RejectionKind.REQUIREMENTS and isinstance(
            detail, UndefinedLabel | RequirementConflict
        ):
            return describe_incompatibility(detail, shape)
        if kind == RejectionKind.VOLUMES:
            if isinstance(detail, UndefinedLabel | RequirementConflict):
                return "volume topology: " + describe_incompatibility(detail, None, "node")
            return f"volume topology: {detail}"
        if kind == RejectionKind.TOPOLOGY:
            if isinstance(detail, TopologyFailure):
                return detail.render()
            if isinstance(detail, UndefinedLabel | RequirementConflict):
                return "topology: " + describe_incompatibility(detail, None)
        if kind == RejectionKind.VOLUME_LIMIT:
            return f"volume attachment limit: {detail}"
        if kind == RejectionKind.HOST_PORTS:
            return f"host port conflict: {detail}" if detail else "host port conflict"
        if kind == RejectionKind.RESERVED:
            return (
                f"waiting for reserved capacity: {detail}; the pod is retried next round "
                "instead of falling back to other capacity"
            )
        if kind in (
            RejectionKind.INSTANCE_TYPES,
            RejectionKind.RESOURCES,
            RejectionKind.MIN_VALUES,
        ):
            return self._instance_types(claim, shape)
        return kind

    def _instance_types(self, claim: NewNodeClaim, shape: PodShape) -> str:
        env = self._env
        index = env.index
        reqs = env.algebra.merge(claim.requirements, shape.requirements, env.well_known)
        if not isinstance(reqs, Requirements):
            return describe_incompatibility(reqs, shape)
        options = claim.options
        for key in sorted(reqs.keys()):
            narrowed = options & index.requirement_mask(reqs[key])
            if not narrowed:
                return (
                    f"no instance type of the nodepool matches {reqs[key].render()} "
                    f"({_count(options)} candidates)"
                )
            options = narrowed
        offered = options & index.offering_mask(reqs)
        if not offered:
            return f"no available offering for {_offer_terms(reqs)}"
        overheads = [g.overhead for g in claim.daemon_groups if g.mask & offered] or [{}]
        overhead = min(overheads, key=lambda o: sum(o.values()))
        requests = merge(shape.requests, overhead)
        message = _resources_message(index, offered, requests)
        if message:
            fitting = options & index.fits_mask(requests)
            if fitting:  # big enough types exist; none of them can be bought right now
                example = min(
                    index.members(fitting),
                    key=lambda it: (
                        it.capacity.get("cpu", 0),
                        it.capacity.get("memory", 0),
                        it.name,
                    ),
                ).name
                return (
                    f"instance types with {render_resources(requests)} (e.g. {example}) have "
                    f"no available offering for {_offer_terms(reqs)} (none offered, or "
                    "insufficient capacity recently)"
                )
            return message
        for key, req in sorted(reqs.items()):
            if req.min_values is not None:
                fits = offered & index.fits_mask(requests)
                have = len(index.values_for(fits, key))
                if have < req.min_values:
                    return (
                        f"minValues requirement is not met for label {key} "
                        f"({have} of {req.min_values} values)"
                    )
        together = render_resources(requests)
        return (
            "no instance type satisfies requirements, resources and offerings "
            f"together ({together})"
        )


_INSTANCE_TYPE_KINDS = (
    RejectionKind.RESOURCES,
    RejectionKind.INSTANCE_TYPES,
    RejectionKind.MIN_VALUES,
)


def _volume_counts(volumes: PodVolumes) -> str:
    return ", ".join(
        f"{len(claims)} {driver} volumes" for driver, claims in sorted(volumes.items())
    )


def _count(mask: int) -> int:
    return mask.bit_count()


def _offer_terms(reqs: Requirements) -> str:
    parts = [
        reqs[k].render()
        for k in ("topology.kubernetes.io/zone", "karpenter.sh/capacity-type")
        if k in reqs
    ]
    return ", ".join(parts) or "any zone and capacity type"


def _resources_message(index: InstanceTypeIndex, mask: int, requests: dict[str, int]) -> str:
    for name in sorted(requests):
        value = requests[name]
        if value <= 0:
            continue
        if mask & index.fits_mask({name: value}):
            continue
        largest = index.largest(mask, name)
        needed = format_resource(name, value)
        if largest is None or largest.allocatable.get(name, 0) == 0:
            return f"no instance type has {needed} {name}: none offers {name}"
        have = format_resource(name, largest.allocatable.get(name, 0))
        return (
            f"no instance type has {needed} {name} after overhead "
            f"(largest: {largest.name}, {have} allocatable)"
        )
    if mask & index.fits_mask(requests):
        return ""
    best = None
    best_score = -1.0
    for it in index.members(mask):
        score = min(
            (it.allocatable.get(n, 0) / v for n, v in requests.items() if v > 0), default=0.0
        )
        if score > best_score:
            best, best_score = it, score
    closest = ""
    if best is not None:
        offered = render_resources({k: best.allocatable.get(k, 0) for k in requests})
        closest = f" (closest: {best.name}, {offered} allocatable)"
    return f"no instance type has {render_resources(requests)} after overhead{closest}"
