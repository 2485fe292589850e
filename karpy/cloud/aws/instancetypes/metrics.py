"""`InstanceTypeMetrics`: Karpenter's ``karpenter_cloudprovider_instance_type_*`` gauges.

Karpenter's AWS provider exports, per instance type, its vCPUs and memory as EC2 reports
them (``..._cpu_cores``, ``..._memory_bytes``, label ``instance_type``), and per offering
whether it can be bought now and its estimated hourly price
(``..._offering_available``, ``..._offering_price_estimate``, labels ``instance_type``,
``capacity_type``, ``zone``). Its dashboards and users' alerts read them (a spot pool
going dry, a price jump).

They are published from the instance-type provider when it composes a new list for an
EC2NodeClass (`InstanceTypeProvider.list`), never per scheduling round: a list is
composed again only when one of its inputs changed (catalog, prices, the
insufficient-capacity cache, learned capacity, the class's subnets or reservations).
Each class's contribution is kept, and the published series are their union, as
Karpenter's metrics controller unions the NodePools' types: an offering is available if
it is available to any class, and its price is the lowest any class sees (on-demand and
spot prices do not depend on the class). With the ``ReservedCapacity`` gate on, every
zone where a type has offerings also has a ``reserved`` series, unavailable at price 0
when no reservation of that type is there, as in Karpenter. Cardinality is Karpenter's
or less: the types a class can launch, in the zones of its subnets.

Unlike Karpenter, series of types and offerings that no class lists any more (a type
gone from the catalog, a subnet's zone dropped, a class deleted: `DeletedNodeClasses`)
are removed, and only values that changed are written, so a recomposed list costs a
dictionary comparison.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from prometheus_client import CollectorRegistry, Gauge

from karpy.apis.labels import CAPACITY_TYPE_RESERVED
from karpy.cloud.aws.nodeclasses import NODE_CLASS
from karpy.reconcile import DONE
from karpy.state.keys import NodeClassName

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

    from karpy.reconcile import Result
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = ["DeletedNodeClasses", "InstanceTypeMetrics"]

MIB: Final = 1024 * 1024

Offer = tuple[str, str, str]  # (instance type, capacity type, zone)


class InstanceTypeMetrics:
    """The four gauges and what each EC2NodeClass last contributed to them."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.cpu_cores = Gauge(
            "karpenter_cloudprovider_instance_type_cpu_cores",
            "vCPUs of an instance type (EC2's default vCPU count).",
            ["instance_type"],
            registry=registry,
        )
        self.memory_bytes = Gauge(
            "karpenter_cloudprovider_instance_type_memory_bytes",
            "Memory of an instance type in bytes, as EC2 lists it.",
            ["instance_type"],
            registry=registry,
        )
        self.offering_available = Gauge(
            "karpenter_cloudprovider_instance_type_offering_available",
            "1 if an offering (instance type, capacity type, zone) can be launched now, else 0.",
            ["instance_type", "capacity_type", "zone"],
            registry=registry,
        )
        self.offering_price_estimate = Gauge(
            "karpenter_cloudprovider_instance_type_offering_price_estimate",
            "Estimated hourly price of an offering (instance type, capacity type, zone), "
            "the one scheduling and consolidation compare.",
            ["instance_type", "capacity_type", "zone"],
            registry=registry,
        )
        self._types_by_class: dict[str, dict[str, tuple[float, float]]] = {}
        self._offers_by_class: dict[str, dict[Offer, tuple[bool, float]]] = {}
        self._placeholders_by_class: dict[str, set[Offer]] = {}
        self._types: dict[str, tuple[float, float]] = {}
        self._offers: dict[Offer, tuple[bool, float]] = {}

    def publish(
        self,
        nodeclass: str,
        types: Iterable[InstanceType],
        records: Mapping[str, Mapping[str, Any]],
        *,
        reserved_series: bool = False,
    ) -> None:
        """Replace ``nodeclass``'s contribution with ``types`` (``records``: the catalog's
        DescribeInstanceTypes records by name) and bring the gauges to the union."""
        sizes: dict[str, tuple[float, float]] = {}
        offers: dict[Offer, tuple[bool, float]] = {}
        placeholders: set[Offer] = set()
        for it in types:
            record = records.get(it.name) or {}
            vcpus = (record.get("VCpuInfo") or {}).get("DefaultVCpus", 0)
            mib = (record.get("MemoryInfo") or {}).get("SizeInMiB", 0)
            sizes[it.name] = (float(vcpus), float(mib) * MIB)
            for o in it.offerings:
                _merge(offers, (it.name, o.capacity_type, o.zone), o.available, o.price)
            if reserved_series:
                placeholders |= {(it.name, CAPACITY_TYPE_RESERVED, o.zone) for o in it.offerings}
        self._types_by_class[nodeclass] = sizes
        self._offers_by_class[nodeclass] = offers
        self._placeholders_by_class[nodeclass] = placeholders
        self._sync()

    def forget(self, nodeclass: str) -> None:
        """Drop ``nodeclass``'s contribution (the class is gone)."""
        if self._types_by_class.pop(nodeclass, None) is not None:
            self._offers_by_class.pop(nodeclass, None)
            self._placeholders_by_class.pop(nodeclass, None)
            self._sync()

    def _sync(self) -> None:
        types: dict[str, tuple[float, float]] = {}
        for sizes in self._types_by_class.values():
            types.update(sizes)
        offers: dict[Offer, tuple[bool, float]] = {}
        for contribution in self._offers_by_class.values():
            for key, (available, price) in contribution.items():
                _merge(offers, key, available, price)
        for placeholders in self._placeholders_by_class.values():
            for key in placeholders:
                offers.setdefault(key, (False, 0.0))  # no reservation of the type there
        for name in self._types.keys() - types.keys():
            self.cpu_cores.remove(name)
            self.memory_bytes.remove(name)
        for name, (vcpus, memory) in types.items():
            if self._types.get(name) != (vcpus, memory):
                self.cpu_cores.labels(name).set(vcpus)
                self.memory_bytes.labels(name).set(memory)
        for key in self._offers.keys() - offers.keys():
            self.offering_available.remove(*key)
            self.offering_price_estimate.remove(*key)
        for key, (available, price) in offers.items():
            if self._offers.get(key) != (available, price):
                self.offering_available.labels(*key).set(1.0 if available else 0.0)
                self.offering_price_estimate.labels(*key).set(price)
        self._types, self._offers = types, offers


def _merge(offers: dict[Offer, tuple[bool, float]], key: Offer, available: bool,
           price: float) -> None:  # fmt: skip
    """Available if any is; the lowest price (reserved offerings of one type and zone
    differ by reservation only)."""
    seen = offers.get(key)
    if seen is None:
        offers[key] = (available, price)
    else:
        offers[key] = (seen[0] or available, min(seen[1], price))


class DeletedNodeClasses:
    """A reconciler that calls ``forget`` with the name of each EC2NodeClass that is gone
    from cluster state, so what was kept for it (its gauges' contribution, its list)
    goes too."""

    name = "aws.instancetypes.forget"
    watches = frozenset({NODE_CLASS.kind})

    def __init__(self, state: ClusterState, forget: Callable[[str], None]) -> None:
        self.state = state
        self.forget = forget

    def keys_for(self, change: StateChange[Any]) -> Iterable[NodeClassName]:
        return (NodeClassName(change.key),) if change.new is None else ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[NodeClassName]:
        return ()

    async def reconcile(self, key: NodeClassName) -> Result:
        snapshot = self.state.snapshot()
        if snapshot.node_class(NODE_CLASS, key) is None and not snapshot.is_unreadable(
            NODE_CLASS.kind, key
        ):
            self.forget(key)
        return DONE
