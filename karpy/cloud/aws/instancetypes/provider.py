"""`InstanceTypeProvider`: the instance types an EC2NodeClass can launch, from cache.

Scheduling asks for instance types every round, and a region sells ~1,400 of them, so
nothing here may call AWS or recompute 1,400 shapes per question. The work is split by
how often its inputs change:

* **In the background** (`controllers`): the catalog (DescribeInstanceTypes and
  DescribeInstanceTypeOfferings) and prices are refreshed every 12 hours; learned memory
  capacity arrives as nodes register. `refresh` does the first two on demand and is safe
  to call concurrently (callers that queue behind a refresh in flight share its result).
* **Per shape inputs**: labels, requirements, capacity, overhead and allocatable of every
  type are computed once per *shape key* — the class's kubelet settings, block devices,
  instance-store policy, resolved AMI family, network interfaces, CPU options and
  connection tracking, the AMIs in its status, and the catalog's version — and kept for
  the next call with the same key. Types with learned memory capacity are recomputed
  from that cache alone when a value is learned.
* **Per call**: offerings for the zones of the class's subnets (on-demand and spot at
  current prices, unavailable where the type is not offered, where the class cannot run
  it, or where the insufficient-capacity cache says so; reserved offerings from the
  class's capacity reservations), composed with the cached shapes. The composed tuple is
  memoised too, on the shape key plus zones, reservations, ICE-cache and price versions:
  `list` returns *the same tuple object* while none of these changed, so callers may
  cache what they derive from it by identity.
* **Per new list**: the ``karpenter_cloudprovider_instance_type_*`` gauges
  (`karpy.cloud.aws.instancetypes.metrics`) are brought up to date when the tuple `list`
  returns for a class is not the one it returned last, so never in an unchanged round.

Types that no AMI in ``status.amis`` can serve (by the AMIs' requirements, e.g. GPU types
for a non-GPU AMI) are left out; with no AMIs resolved yet nothing is filtered.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_AWS_CAPACITY_RESERVATION_TYPE,
    LABEL_AWS_ZONE_ID,
)
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.amis import ami_requirements
from karpy.cloud.aws.instancetypes.attributes import type_requirements
from karpy.cloud.aws.instancetypes.capacity import Shape, ShapeOptions, compute_shape, quantities
from karpy.cloud.aws.instancetypes.catalog import Catalog, fetch_catalog
from karpy.cloud.aws.instancetypes.compatibility import compatible_with_nodeclass
from karpy.cloud.aws.instancetypes.families import family
from karpy.cloud.aws.instancetypes.learned import LearnedCapacity, LearnedCapacityController
from karpy.cloud.aws.instancetypes.metrics import DeletedNodeClasses, InstanceTypeMetrics
from karpy.cloud.aws.instancetypes.pricing import PricingProvider
from karpy.log import get_logger
from karpy.reconcile import Controller, Result, Singleton, requeue_after
from karpy.scheduling.instancetypes import InstanceType, Offering, new_instance_type
from karpy.scheduling.requirements import Requirement, Requirements

if TYPE_CHECKING:
    import builtins
    from collections.abc import Iterable, Mapping

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["InstanceTypeProvider", "PeriodicRefresh", "TypeShape", "shape_options"]

log = get_logger("aws.instancetypes")

REFRESH_PERIOD: Final = 12 * 3600.0  # seconds: Karpenter's instance-type and pricing period
SHAPE_CACHE_SIZE: Final = 16
LIST_CACHE_SIZE: Final = 64
RESERVED_PRICE_DIVISOR: Final = 10_000_000.0  # reservations are all but free, yet ordered
EXPIRING: Final = "expiring"


@attrs.frozen(slots=True)
class TypeShape:
    """One type under one shape key: what `list` composes offerings with."""

    name: str
    requirements: tuple[Requirement, ...]
    shape: Shape
    compatible: bool  # the class can launch it at all (`compatibility`)
    zones: frozenset[str]  # where EC2 offers it
    capacity_types: tuple[str, ...]  # on-demand / spot, as the type supports them
    ami_id: str  # the AMI that would serve it ("" when the class lists none)


class InstanceTypeProvider:
    def __init__(
        self,
        clients: AWSClients,
        settings: Settings,
        *,
        unavailable: UnavailableOfferings,
        clock: Clock = SYSTEM_CLOCK,
        learned: LearnedCapacity | None = None,
        catalog: Catalog | None = None,
        metrics: InstanceTypeMetrics | None = None,
    ) -> None:
        """``catalog`` starts the provider with an already fetched catalog (tests and tools
        that share one fetch); `refresh` replaces it as usual. ``metrics`` gets each
        class's list when it changes."""
        self.clients = clients
        self.settings = settings
        self.unavailable = unavailable
        self.clock = clock
        self.learned = learned if learned is not None else LearnedCapacity(clock=clock)
        self.region = clients.region
        self.pricing = PricingProvider(clients, region=clients.region,
                                       isolated_vpc=settings.isolated_vpc)  # fmt: skip
        self._catalog: Catalog | None = catalog
        self._catalog_version = 0 if catalog is None else 1
        self.catalog_refreshes = 0
        self._catalog_lock = asyncio.Lock()
        self._price_refreshes = 0
        self._price_lock = asyncio.Lock()
        self._shapes: OrderedDict[tuple[Any, ...], tuple[ShapeOptions, tuple[TypeShape, ...]]] = (
            OrderedDict()
        )
        self._lists: OrderedDict[tuple[Any, ...], tuple[InstanceType, ...]] = OrderedDict()
        self._keys_by_class: dict[str, tuple[EC2NodeClass, tuple[Any, ...], tuple[Any, ...]]] = {}
        self.metrics = metrics
        self._published: dict[str, tuple[InstanceType, ...]] = {}  # by class, for metrics

    # --- state ------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """The catalog has been fetched at least once."""
        return self._catalog is not None

    @property
    def catalog(self) -> Catalog | None:
        return self._catalog

    @property
    def version(self) -> int:
        """Changes whenever any `list` answer may change (catalog, prices, learned capacity,
        the insufficient-capacity cache): each part only grows, so their sum does."""
        self.unavailable.current()  # lets expired entries bump the cache's version
        return (self._catalog_version + self.pricing.version + self.learned.version
                + self.unavailable.version)  # fmt: skip

    def describe(self, name: str) -> Mapping[str, Any] | None:
        """The raw DescribeInstanceTypes record of ``name``."""
        return None if self._catalog is None else self._catalog.types.get(name)

    # --- refreshing -------------------------------------------------------------------------

    async def refresh(self) -> None:
        """Catalog and offerings, then prices, from AWS (see the module docstring)."""
        await self.refresh_catalog()
        await self.refresh_pricing()

    async def refresh_catalog(self) -> None:
        seen = self.catalog_refreshes
        async with self._catalog_lock:
            if self.catalog_refreshes != seen:
                return  # a refresh finished while this caller waited: share its answer
            catalog = await fetch_catalog(await self.clients.ec2())
            if not catalog.same_as(self._catalog):
                self._catalog = catalog
                self._catalog_version += 1
                log.info("discovered instance types", instanceTypes=len(catalog.types),
                         zones=sorted(catalog.zones))  # fmt: skip
            self.catalog_refreshes += 1

    async def refresh_pricing(self) -> None:
        seen = self._price_refreshes
        async with self._price_lock:
            if self._price_refreshes != seen:
                return
            await self.pricing.refresh()
            self._price_refreshes += 1

    async def ensure_ready(self) -> None:
        """`refresh` once if the catalog was never fetched (prices start from the static
        table, so only the catalog is needed to answer)."""
        if self._catalog is None:
            await self.refresh()

    # --- listing ----------------------------------------------------------------------------

    def list(
        self, nodeclass: EC2NodeClass, *, reservation_capacity: Mapping[str, int] | None = None
    ) -> tuple[InstanceType, ...]:
        """The instance types ``nodeclass`` may launch, with offerings (see the module
        docstring). Reserved offerings take their remaining instance count from
        ``reservation_capacity`` (reservation id -> count); one missing there has none left.
        Empty until the catalog has been fetched."""
        catalog = self._catalog
        if catalog is None:
            return ()
        self.unavailable.current()
        shape_key, offer_key = self._keys(nodeclass)
        capacities = tuple(sorted((reservation_capacity or {}).items()))
        key = (shape_key, offer_key, capacities, self.unavailable.version, self.pricing.version,
               self.learned.version)  # fmt: skip
        out = self._lists.get(key)
        if out is None:
            shapes = self._learned_shapes(catalog, nodeclass, shape_key)
            out = self._compose(shapes, nodeclass, dict(reservation_capacity or {}))
            _remember(self._lists, key, out, LIST_CACHE_SIZE)
        if self.metrics is not None and self._published.get(nodeclass.name) is not out:
            self._published[nodeclass.name] = out
            reserved = self.settings.feature_gates.reserved_capacity
            self.metrics.publish(nodeclass.name, out, catalog.types, reserved_series=reserved)
        return out

    def _keys(self, nodeclass: EC2NodeClass) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(shape key, offerings key) of ``nodeclass``, recomputed only for a new object."""
        seen = self._keys_by_class.get(nodeclass.name)
        if seen is not None and seen[0] is nodeclass and seen[1][-1] == self._catalog_version:
            return seen[1], seen[2]
        spec, status = nodeclass.spec, nodeclass.status
        shape_key = (
            nodeclass.ami_family,
            repr(spec.kubelet),
            repr(spec.block_device_mappings),
            spec.instance_store_policy,
            repr(spec.network_interfaces),
            repr(spec.cpu_options),
            spec.enclaves_enabled,
            spec.connection_tracking is not None,
            tuple((a.id, repr(a.requirements)) for a in status.amis),
            self._catalog_version,
        )
        offer_key = (
            tuple(sorted({(s.zone, s.zone_id or "") for s in status.subnets})),
            repr(status.capacity_reservations),
        )
        self._keys_by_class[nodeclass.name] = (nodeclass, shape_key, offer_key)
        return shape_key, offer_key

    def _learned_shapes(
        self, catalog: Catalog, nodeclass: EC2NodeClass, key: tuple[Any, ...]
    ) -> tuple[TypeShape, ...]:
        """The cached shapes, with learned memory capacity in place of the estimate for the
        (type, AMI) pairs that have registered."""
        options, shapes = self._type_shapes(catalog, nodeclass, key)
        if not len(self.learned):
            return shapes
        out = []
        for ts in shapes:
            memory = self.learned.get(ts.name, ts.ami_id) if ts.ami_id else None
            if memory is None:
                out.append(ts)
                continue
            shape = compute_shape(catalog.types[ts.name], options, learned_memory=memory)
            out.append(attrs.evolve(ts, shape=shape))
        return tuple(out)

    def _type_shapes(
        self, catalog: Catalog, nodeclass: EC2NodeClass, key: tuple[Any, ...]
    ) -> tuple[ShapeOptions, tuple[TypeShape, ...]]:
        cached = self._shapes.get(key)
        if cached is not None:
            return cached
        options = shape_options(nodeclass, self.settings)
        amis = [(ami.id, ami_requirements(ami)) for ami in nodeclass.status.amis]
        out: list[TypeShape] = []
        for name in sorted(catalog.types):
            record = catalog.types[name]
            reqs = type_requirements(record, region=self.region, family=options.family)
            ami_id = ""
            if amis:
                base = Requirements(reqs)
                ami_id = next((i for i, r in amis if base.is_compatible(r)), "")
                if not ami_id:
                    continue  # no AMI of the class can run this type
            usage = tuple(c for c in (CAPACITY_TYPE_ON_DEMAND, CAPACITY_TYPE_SPOT)
                          if c in (record.get("SupportedUsageClasses") or ()))  # fmt: skip
            out.append(TypeShape(
                name=name,
                requirements=reqs,
                shape=compute_shape(record, options),
                compatible=compatible_with_nodeclass(record, nodeclass, options.family.name),
                zones=catalog.zones_of.get(name, frozenset()),
                capacity_types=usage,
                ami_id=ami_id,
            ))  # fmt: skip
        answer = (options, tuple(out))
        _remember(self._shapes, key, answer, SHAPE_CACHE_SIZE)
        return answer

    def _compose(
        self,
        shapes: Iterable[TypeShape],
        nodeclass: EC2NodeClass,
        reservation_capacity: Mapping[str, int],
    ) -> tuple[InstanceType, ...]:
        zone_ids = {s.zone: s.zone_id or "" for s in nodeclass.status.subnets}
        zones = sorted(zone_ids)
        offline = self.unavailable.current()
        reservations_by_type: dict[str, list[Any]] = {}
        if self.settings.feature_gates.reserved_capacity:
            for cr in nodeclass.status.capacity_reservations:
                reservations_by_type.setdefault(cr.instance_type, []).append(cr)
        out: list[InstanceType] = []
        for ts in shapes:
            offerings: list[Offering] = []
            on_demand = self.pricing.on_demand(ts.name)
            for zone in zones:
                offered = ts.compatible and zone in ts.zones
                for capacity_type in ts.capacity_types:
                    price = on_demand if capacity_type == CAPACITY_TYPE_ON_DEMAND \
                        else self.pricing.spot(ts.name, zone)  # fmt: skip
                    available = (offered and price is not None
                                 and (ts.name, zone, capacity_type) not in offline)  # fmt: skip
                    offerings.append(Offering(zone, capacity_type, price or 0.0, available))
            reservations = reservations_by_type.get(ts.name, ())
            for cr in reservations:
                count = reservation_capacity.get(cr.id, 0)
                zone = cr.availability_zone
                available = (ts.compatible and count > 0 and zone in ts.zones
                             and zone in zone_ids and cr.state != EXPIRING)  # fmt: skip
                offerings.append(Offering(
                    cr.availability_zone, CAPACITY_TYPE_RESERVED,
                    (on_demand or 0.0) / RESERVED_PRICE_DIVISOR, available,
                    reservation_id=cr.id, reservation_capacity=count,
                ))  # fmt: skip
            extra = list(ts.requirements)
            if reservations:
                extra += [
                    Requirement.new(LABEL_AWS_CAPACITY_RESERVATION_ID, "In",
                                    [cr.id for cr in reservations]),
                    Requirement.new(LABEL_AWS_CAPACITY_RESERVATION_TYPE, "In",
                                    [cr.reservation_type for cr in reservations]),
                    Requirement.new(LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE, "In",
                                    ["true" if cr.interruptible else "false"
                                     for cr in reservations]),
                ]  # fmt: skip
            else:
                extra += [Requirement.does_not_exist(k) for k in (
                    LABEL_AWS_CAPACITY_RESERVATION_ID, LABEL_AWS_CAPACITY_RESERVATION_TYPE,
                    LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE)]  # fmt: skip
            ids = sorted({zone_ids[o.zone] for o in offerings
                          if o.available and zone_ids.get(o.zone)})  # fmt: skip
            if ids:
                extra.append(Requirement.new(LABEL_AWS_ZONE_ID, "In", ids))
            out.append(new_instance_type(ts.name, capacity=ts.shape.capacity,
                                         offerings=offerings, requirements=extra,
                                         overhead=ts.shape.overhead.total()))  # fmt: skip
        return tuple(out)

    def forget(self, nodeclass: str) -> None:
        """Drop what is kept for a deleted class: its keys and its gauges' series."""
        self._keys_by_class.pop(nodeclass, None)
        if self._published.pop(nodeclass, None) is not None and self.metrics is not None:
            self.metrics.forget(nodeclass)

    def shapes(self, nodeclass: EC2NodeClass) -> dict[str, TypeShape]:
        """The shapes behind `list` for ``nodeclass``, by type name (for `explain`)."""
        catalog = self._catalog
        if catalog is None:
            return {}
        shape_key, _ = self._keys(nodeclass)
        return {s.name: s for s in self._learned_shapes(catalog, nodeclass, shape_key)}

    # --- controllers ------------------------------------------------------------------------

    def controllers(
        self, state: ClusterState, *, clock: Clock, metrics: ControllerMetrics | None = None
    ) -> builtins.list[Component]:
        """The catalog and price refreshers (every 12 h), the learned-capacity recorder,
        and the forgetting of deleted classes."""
        catalog = PeriodicRefresh("aws.instancetypes.catalog", self.refresh_catalog)
        prices = PeriodicRefresh("aws.pricing", self.refresh_pricing)
        learned = LearnedCapacityController(state, self.learned)
        deleted = DeletedNodeClasses(state, self.forget)
        return [
            Controller(Singleton(catalog), state, resync=REFRESH_PERIOD, needs_sync=False,
                       clock=clock, metrics=metrics),
            Controller(Singleton(prices), state, resync=REFRESH_PERIOD, needs_sync=False,
                       clock=clock, metrics=metrics),
            Controller(learned, state, clock=clock, metrics=metrics),
            Controller(deleted, state, resync=None, clock=clock, metrics=metrics),
        ]  # fmt: skip


def shape_options(nodeclass: EC2NodeClass, settings: Settings) -> ShapeOptions:
    """The `ShapeOptions` of ``nodeclass`` under ``settings``."""
    spec = nodeclass.spec
    kubelet = spec.kubelet
    return ShapeOptions(
        family=family(nodeclass.ami_family),
        max_pods=kubelet.max_pods if kubelet is not None else None,
        pods_per_core=kubelet.pods_per_core if kubelet is not None else None,
        kube_reserved=quantities(kubelet.kube_reserved) if kubelet is not None else {},
        system_reserved=quantities(kubelet.system_reserved) if kubelet is not None else {},
        eviction_hard=dict(kubelet.eviction_hard) if kubelet is not None else {},
        block_device_mappings=spec.block_device_mappings,
        instance_store_policy=spec.instance_store_policy,
        network_interfaces=spec.network_interfaces or None,
        vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
        reserved_enis=settings.reserved_enis,
    )


def _remember(cache: OrderedDict[Any, Any], key: Any, value: Any, size: int) -> None:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > size:
        cache.popitem(last=False)


class PeriodicRefresh:
    """A singleton reconciler (`karpy.reconcile.Singleton`) that runs ``action`` at start
    and on every resync; a failure is retried with the controller's backoff."""

    watches: frozenset[str] = frozenset()

    def __init__(self, name: str, action: Any) -> None:
        self.name = name
        self.action = action

    def wants(self, change: StateChange[Any]) -> bool:
        return False

    def due(self, snapshot: StateSnapshot) -> bool:
        return True

    async def reconcile(self) -> Result:
        await self.action()
        return requeue_after(REFRESH_PERIOD)
