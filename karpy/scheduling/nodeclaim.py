"""A NodeClaim being planned in this round: pods packed so far and what it could launch as.

A planned NodeClaim starts from a NodePool template with every instance type the pool may
launch (``options``, a bitset) and narrows as pods join: their requirements intersect the
claim's, topology may pin a zone, their requests add up, and ``options`` keeps the types
that still satisfy everything. `can_add` is Karpenter's ``NodeClaim.CanAdd``, in its order:

1. the pod tolerates the pool's taints;
2. the claim can still attach the pod's volumes: its options keep only the types whose
   volume attachment limit, per CSI driver, covers the distinct claims of all its pods
   (counted as on existing nodes, `karpy.scheduling.volumelimits`);
3. the pod's requirements are compatible with the claim's (undefined well-known labels
   allowed: instance types define them);
4. for each volume-topology alternative: volume requirements, then the domains topology
   allows, then the instance types that satisfy the requirements, have an available
   offering, fit the requests plus their DaemonSet overhead, have no host-port conflict,
   and still cover the ``minValues`` of every requirement.

Only types whose requirement keys changed are re-filtered (the options already satisfy the
rest), so a step costs a few bitset ANDs. A failed `can_add` returns a small rejection
value; the human explanation is produced later, once per unschedulable pod shape.

Pods of one shape may mount different claims, so a refusal that followed a narrowing by
volume limits is marked ``transient``: it is not remembered for the shape, since the next
pod of the shape, with fewer volumes, may fit where this one did not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.labels import CAPACITY_TYPE_RESERVED as RESERVED_CAPACITY
from karpy.apis.labels import LABEL_CAPACITY_TYPE, LABEL_HOSTNAME, LABEL_ZONE
from karpy.scheduling.index import iter_bits
from karpy.scheduling.instancetypes import RESERVATION_ID_LABEL
from karpy.scheduling.kinds import RejectionKind
from karpy.scheduling.requirements import EXISTS, Requirement, RequirementConflict, Requirements
from karpy.scheduling.taints import first_untolerated

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.core import Taint
    from karpy.scheduling.algebra import Incompatible, RequirementAlgebra
    from karpy.scheduling.context import PoolCandidates
    from karpy.scheduling.daemonsets import DaemonOverheadGroup
    from karpy.scheduling.environment import RoundEnvironment
    from karpy.scheduling.index import InstanceTypeIndex
    from karpy.scheduling.pods import HostPort, Pod
    from karpy.scheduling.reservations import ReservationManager
    from karpy.scheduling.shapes import PodShape
    from karpy.scheduling.topology import TopologyFailure
    from karpy.scheduling.volumelimits import PodVolumes

__all__ = ["NewNodeClaim", "Plan", "Rejection"]

_OFFERING_KEYS: Final = (LABEL_ZONE, LABEL_CAPACITY_TYPE, RESERVATION_ID_LABEL)


def is_permanent(rejection: Rejection) -> bool:
    """Will this refusal stand for the rest of the round (nodes only fill up)?

    Topology and reservations can change either way; a requirement conflict can heal
    only in the odd case of a node-side ``Exists`` narrowing to a negative requirement,
    or a key the node lacked becoming defined by another pod's requirements.
    """
    if rejection.transient or not rejection.kind.monotone:
        return False
    if rejection.kind is not RejectionKind.REQUIREMENTS:
        return True
    detail = rejection.detail
    return isinstance(detail, RequirementConflict) and detail.existing.operator != EXISTS


@attrs.frozen(slots=True)
class Rejection:
    kind: RejectionKind
    detail: Taint | Incompatible | TopologyFailure | str | None = None
    # It depended on this pod's volumes, not only on its shape (see the module docstring).
    transient: bool = False


@attrs.frozen(slots=True)
class Plan:
    """What adding a pod would make of the node: new requirements and options."""

    requirements: Requirements
    options: int = 0
    min_values_relaxed: bool = False
    reservations: tuple[str, ...] = ()  # reservation IDs the node would hold


def hostname_mismatch(wanted: Requirement, hostname: str) -> RequirementConflict | None:
    """A pod's hostname requirement against the node it is tried on."""
    if wanted.has(hostname):
        return None
    return RequirementConflict(
        LABEL_HOSTNAME, wanted, Requirement.in_values(LABEL_HOSTNAME, hostname)
    )


def host_ports_conflict(ports: Sequence[HostPort], reserved: Sequence[HostPort]) -> bool:
    return any(p.conflicts(r) for p in ports for r in reserved)


class NewNodeClaim:
    """Karpenter's scheduling ``NodeClaim``: a node this round would launch."""

    __slots__ = (
        "daemon_groups",
        "host_ports",
        "hostname",
        "index",
        "min_values_relaxed",
        "options",
        "pods",
        "pool",
        "position",
        "requests",
        "requirements",
        "reserved",
        "room",
        "shapes",
        "volumes",
    )

    def __init__(
        self,
        pool: PoolCandidates,
        options: int,
        daemon_groups: tuple[DaemonOverheadGroup, ...],
        index: int,
    ) -> None:
        self.pool = pool
        self.options = options
        self.daemon_groups = daemon_groups
        self.index = index
        self.hostname = f"hostname-placeholder-{index:04d}"
        self.requirements: Requirements = pool.template.requirements
        self.requests: dict[str, int] = {}
        self.pods: list[Pod] = []
        self.shapes: list[PodShape] = []
        self.host_ports: list[HostPort] = []
        self.min_values_relaxed = False
        self.reserved: tuple[str, ...] = ()
        self.position = -1  # bit position of the hostname in `Topology.hosts`
        # Per resource, what the largest remaining option has left (kept by the solver).
        self.room: dict[str, int] = {}
        # The claims its pods mount, by CSI driver (only counted when some type has limits).
        self.volumes: dict[str, frozenset[str]] = {}

    @property
    def taints(self) -> tuple[Taint, ...]:
        return self.pool.template.taints

    def can_add(
        self,
        shape: PodShape,
        env: RoundEnvironment,
        *,
        relax_min_values: bool = False,
        pod_volumes: PodVolumes | None = None,
    ) -> Plan | Rejection:
        """A plan for adding a pod of ``shape``, or the first check that refused it.
        ``relax_min_values`` lets a new node relax minValues it cannot meet (in-flight
        claims never do); ``pod_volumes`` are the claims the pod mounts, by CSI driver."""
        index = env.index
        taint = _untolerated(self.pool, shape)
        if taint is not None:
            return Rejection(RejectionKind.TAINTS, taint)
        options = self.options
        if pod_volumes and index.attach_limited:
            attachable = self.attachable(pod_volumes, index)
            if isinstance(attachable, Rejection):
                return attachable
            options = attachable
        result = self._can_add(shape, env, options, relax_min_values)
        if options != self.options and isinstance(result, Rejection):
            return attrs.evolve(result, transient=True)
        return result

    def attachable(self, pod_volumes: PodVolumes, index: InstanceTypeIndex) -> int | Rejection:
        """The options that can attach this claim's volumes and the pod's together, or a
        `VOLUME_LIMIT` refusal naming the driver no option has room for."""
        options = self.options
        for driver, claims in sorted(pod_volumes.items()):
            count = len(self.volumes.get(driver, frozenset()) | claims)
            narrowed = options & index.attachable_mask(driver, count)
            if not narrowed:
                most = max(
                    (it.volume_attachment_limits.get(driver, 0) for it in index.members(options)),
                    default=0,
                )
                return Rejection(
                    RejectionKind.VOLUME_LIMIT,
                    f"{driver} would attach {count} volumes; its instance types attach at "
                    f"most {most}",
                )
            options = narrowed
        return options

    def _can_add(
        self, shape: PodShape, env: RoundEnvironment, options: int, relax_min_values: bool
    ) -> Plan | Rejection:
        algebra, topology, index, well_known = env.algebra, env.topology, env.index, env.well_known
        if shape.hostname_requirement is not None:
            mismatch = hostname_mismatch(shape.hostname_requirement, self.hostname)
            if mismatch is not None:
                return Rejection(RejectionKind.REQUIREMENTS, mismatch)
        merged = algebra.merge(self.requirements, shape.requirements, well_known)
        if not isinstance(merged, Requirements):
            return Rejection(RejectionKind.REQUIREMENTS, merged)
        if shape.host_ports and host_ports_conflict(shape.host_ports, self.host_ports):
            return Rejection(RejectionKind.HOST_PORTS)
        last: Rejection | None = None
        for volume in shape.volume_alternatives or (None,):
            reqs = merged
            if volume is not None:
                reqs_or = _with_volume(algebra, reqs, volume, self.hostname, well_known)
                if not isinstance(reqs_or, Requirements):
                    last = Rejection(RejectionKind.VOLUMES, reqs_or)
                    continue
                reqs = reqs_or
            narrowed = topology.allowed_domains(shape, self.taints, reqs, self.hostname)
            if not isinstance(narrowed, tuple):
                last = Rejection(RejectionKind.TOPOLOGY, narrowed)
                continue
            if narrowed:
                topo = algebra.narrow(reqs, narrowed, well_known)
                if not isinstance(topo, Requirements):
                    last = Rejection(RejectionKind.TOPOLOGY, topo)
                    continue
                reqs = topo
            plan = self._filter(shape, reqs, index, options, relax_min_values)
            if isinstance(plan, Plan) and env.reservations is not None:
                plan = self._reserve(plan, index, env.reservations, env.reserved_fallback)
            if isinstance(plan, Plan):
                return plan
            last = plan
        assert last is not None
        return last

    def _filter(
        self,
        shape: PodShape,
        reqs: Requirements,
        index: InstanceTypeIndex,
        options: int,
        relax_min_values: bool,
    ) -> Plan | Rejection:
        old = self.requirements
        offering_changed = False
        for key, req in reqs.items():
            if old.find(key) is req:
                continue
            options &= index.requirement_mask(req)
            if key in _OFFERING_KEYS:
                offering_changed = True
        if offering_changed:
            options &= index.offering_mask(reqs)
        if not options:
            return Rejection(RejectionKind.INSTANCE_TYPES)
        totals = dict(self.requests)
        for name, value in shape.requests.items():
            totals[name] = totals.get(name, 0) + value
        remaining = 0
        ports = shape.host_ports
        blocked = False
        for group in self.daemon_groups:
            candidates = options & group.mask
            if not candidates:
                continue
            if ports and host_ports_conflict(ports, group.host_ports):
                blocked = True
                continue
            if group.overhead:
                needed = dict(totals)
                for name, value in group.overhead.items():
                    needed[name] = needed.get(name, 0) + value
            else:
                needed = totals
            remaining |= candidates & index.fits_mask(needed)
        if not remaining:
            if blocked:
                return Rejection(
                    RejectionKind.HOST_PORTS, "a DaemonSet on the node uses the same host port"
                )
            return Rejection(RejectionKind.RESOURCES)
        relaxed = False
        if reqs.has_min_values():
            result = _check_min_values(reqs, remaining, index, relax_min_values)
            if result is None:
                return Rejection(RejectionKind.MIN_VALUES)
            reqs, relaxed = result
        return Plan(reqs, remaining, relaxed)

    def _reserve(
        self,
        plan: Plan,
        index: InstanceTypeIndex,
        reservations: ReservationManager,
        fallback: bool,
    ) -> Plan | Rejection:
        """Which reserved offerings the node would hold (Karpenter's ``offeringsToReserve``)."""
        candidates = plan.options & index.reserved_mask
        if not candidates and not self.reserved:
            return plan
        compatible = False
        held: list[str] = []
        for i in iter_bits(candidates):
            for offering in index.types[i].offerings:
                if offering.capacity_type != RESERVED_CAPACITY or not offering.available:
                    continue
                if not offering.compatible(plan.requirements):
                    continue
                compatible = True
                rid = offering.reservation_id
                if rid not in held and reservations.can_reserve(self.hostname, rid):
                    held.append(rid)
        if not fallback:
            if compatible and not held:
                return Rejection(
                    RejectionKind.RESERVED, "every compatible reserved offering is already held"
                )
            if self.reserved and not held:
                return Rejection(
                    RejectionKind.RESERVED, "the node would lose the reserved offerings it holds"
                )
        if not held and not self.reserved:
            return plan
        return attrs.evolve(plan, reservations=tuple(sorted(held)))

    def add(
        self,
        pod: Pod,
        shape: PodShape,
        plan: Plan,
        env: RoundEnvironment,
        pod_volumes: PodVolumes | None = None,
    ) -> None:
        self.pods.append(pod)
        if pod_volumes:
            volumes = self.volumes
            for driver, claims in pod_volumes.items():
                volumes[driver] = volumes.get(driver, frozenset()) | claims
        self.shapes.append(shape)
        self.options = plan.options
        for name, value in shape.requests.items():
            self.requests[name] = self.requests.get(name, 0) + value
        self.requirements = plan.requirements
        self.min_values_relaxed = self.min_values_relaxed or plan.min_values_relaxed
        self.reserved = plan.reservations
        env.topology.record(shape, self.taints, plan.requirements, self.hostname, env.well_known)
        if shape.host_ports:
            self.host_ports.extend(shape.host_ports)


def _untolerated(pool: PoolCandidates, shape: PodShape) -> Taint | None:
    known = shape.memo.untolerated
    key = id(pool)
    if key in known:
        return known[key]
    taint = known[key] = first_untolerated(pool.template.taints, shape.tolerations)
    return taint


def _with_volume(
    algebra: RequirementAlgebra,
    reqs: Requirements,
    volume: Requirements,
    hostname: str,
    allow_undefined: frozenset[str],
) -> Requirements | Incompatible | str:
    host = volume.find(LABEL_HOSTNAME)
    if host is not None:
        if not host.has(hostname):
            return f"volume requires {host.render()}"
        volume = volume.without(LABEL_HOSTNAME)
    return algebra.merge(reqs, volume, allow_undefined)


def _check_min_values(
    reqs: Requirements, options: int, index: InstanceTypeIndex, relax: bool
) -> tuple[Requirements, bool] | None:
    relaxed = False
    for key, req in list(reqs.items()):
        if req.min_values is None:
            continue
        have = len(index.values_for(options, key))
        if have >= req.min_values:
            continue
        if not relax:
            return None
        reqs = reqs.replace(req.with_min_values(have))
        relaxed = True
    return reqs, relaxed
