"""The ``karpenter_cloudprovider_instance_type_*`` gauges, read from the registry after
the instance-type provider lists a class's types on moto's catalogue: sizes per type,
availability and price per offering, updated by a price change or an insufficient-
capacity mark, dropped with the zone or type they described, and unioned across classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry

from karpy.cloud.aws.instancetypes import InstanceTypeProvider
from karpy.cloud.aws.instancetypes.metrics import InstanceTypeMetrics
from karpy.cloud.aws.nodeclasses import NODE_CLASS
from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.disruption.explain import state_from_objects
from karpy.observability.metrics import Metrics
from karpy.reconcile import Controller
from karpy.settings import FeatureGates, Settings
from karpy.state.cluster import ClusterState
from karpy.state.keys import NodeClassName
from tests.aws.instancetypes.factories import make_nodeclass
from tests.aws.instancetypes.test_provider import by_name, set_on_demand_price

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.instancetypes.catalog import Catalog
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer

PREFIX = "karpenter_cloudprovider_instance_type_"
MI = 1 << 20


def provider(
    clients: AWSClients, catalog: Catalog, *, reserved: bool = True
) -> tuple[InstanceTypeProvider, CollectorRegistry]:
    registry = CollectorRegistry()
    settings = Settings(cluster_name="test-cluster",
                        feature_gates=FeatureGates(reserved_capacity=reserved))  # fmt: skip
    p = InstanceTypeProvider(clients, settings, unavailable=UnavailableOfferings(),
                             catalog=catalog, metrics=InstanceTypeMetrics(registry))  # fmt: skip
    return p, registry


def offering(registry: CollectorRegistry, metric: str, name: str, capacity_type: str,
             zone: str) -> float | None:  # fmt: skip
    labels = {"instance_type": name, "capacity_type": capacity_type, "zone": zone}
    return registry.get_sample_value(f"{PREFIX}offering_{metric}", labels)


def series(registry: CollectorRegistry, metric: str) -> set[tuple[str, ...]]:
    return {tuple(s.labels.values()) for f in registry.collect() if f.name == PREFIX + metric
            for s in f.samples}  # fmt: skip


async def test_listing_a_class_publishes_its_types_sizes_and_offerings(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p, registry = provider(aws_clients, moto_catalog, reserved=False)
    types = p.list(make_nodeclass())
    assert registry.get_sample_value(f"{PREFIX}cpu_cores", {"instance_type": "m5.large"}) == 2
    assert registry.get_sample_value(f"{PREFIX}memory_bytes",
                                     {"instance_type": "m5.large"}) == 8192 * MI  # fmt: skip
    m5 = by_name(types)["m5.large"]
    for o in m5.offerings:
        assert offering(registry, "available", "m5.large", o.capacity_type, o.zone) == 1
        assert offering(registry, "price_estimate", "m5.large", o.capacity_type, o.zone) == o.price
    # Karpenter's cardinality: one series per type, one per listed offering
    assert len(series(registry, "cpu_cores")) == len(types)
    listed = {(it.name, o.capacity_type, o.zone) for it in types for o in it.offerings}
    assert series(registry, "offering_available") == listed
    assert series(registry, "offering_price_estimate") == listed
    assert not any(zone == "us-west-2d" for _, _, zone in listed)  # no subnet there


async def test_a_price_change_updates_the_estimate(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog, moto_server: MotoServer
) -> None:
    p, registry = provider(aws_clients, moto_catalog)
    p.list(make_nodeclass())
    before = offering(registry, "price_estimate", "m5.large", "on-demand", "us-west-2a")
    saved = set_on_demand_price(moto_server, "m5.large", 0.5)
    try:
        await p.refresh_pricing()
    finally:
        set_on_demand_price(moto_server, "m5.large", saved)
    p.list(make_nodeclass())
    assert before != 0.5
    assert offering(registry, "price_estimate", "m5.large", "on-demand", "us-west-2a") == 0.5


async def test_insufficient_capacity_shows_as_unavailable(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p, registry = provider(aws_clients, moto_catalog)
    p.list(make_nodeclass())
    p.unavailable.mark([("m5.large", "us-west-2a", "spot")])
    p.list(make_nodeclass())
    assert offering(registry, "available", "m5.large", "spot", "us-west-2a") == 0
    assert offering(registry, "available", "m5.large", "spot", "us-west-2b") == 1


async def test_series_of_zones_no_class_lists_any_more_are_dropped(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p, registry = provider(aws_clients, moto_catalog)
    p.list(make_nodeclass())
    assert offering(registry, "available", "m5.large", "spot", "us-west-2c") == 1
    p.list(make_nodeclass(("us-west-2a",)))  # the class lost two subnets
    assert {z for _, _, z in series(registry, "offering_available")} == {"us-west-2a"}
    assert {z for _, _, z in series(registry, "offering_price_estimate")} == {"us-west-2a"}
    assert offering(registry, "available", "m5.large", "spot", "us-west-2c") is None


async def test_offerings_are_the_union_over_classes_and_a_deleted_class_leaves_it(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p, registry = provider(aws_clients, moto_catalog)
    a, b = make_nodeclass(("us-west-2a",), name="a"), make_nodeclass(("us-west-2b",), name="b")
    p.list(a)
    p.list(b)
    assert {z for _, _, z in series(registry, "offering_available")} == {"us-west-2a",
                                                                         "us-west-2b"}  # fmt: skip
    state = ClusterState()
    state.apply(NODE_CLASS.kind, [("a", a), ("b", b)], [])
    [controller] = [c for c in p.controllers(state, clock=p.clock)
                    if c.name == "aws.instancetypes.forget"]  # fmt: skip
    assert isinstance(controller, Controller)
    forget = controller.reconciler
    state.apply(NODE_CLASS.kind, [], ["a"])
    await forget.reconcile(NodeClassName("b"))  # still there: kept
    assert {z for _, _, z in series(registry, "offering_available")} == {"us-west-2a",
                                                                         "us-west-2b"}  # fmt: skip
    await forget.reconcile(NodeClassName("a"))
    assert {z for _, _, z in series(registry, "offering_available")} == {"us-west-2b"}


async def test_reserved_series_as_karpenter_with_the_gate_on(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    reservation = {"id": "cr-0123", "availabilityZone": "us-west-2a", "instanceType": "m5.large",
                   "instanceMatchCriteria": "targeted", "ownerID": "123456789012",
                   "reservationType": "default", "interruptible": False}  # fmt: skip
    nodeclass = make_nodeclass(status={"capacityReservations": [reservation]})
    p, registry = provider(aws_clients, moto_catalog)
    m5 = by_name(p.list(nodeclass, reservation_capacity={"cr-0123": 1}))["m5.large"]
    (reserved,) = [o for o in m5.offerings if o.capacity_type == "reserved"]
    assert offering(registry, "available", "m5.large", "reserved", "us-west-2a") == 1
    assert offering(registry, "price_estimate", "m5.large", "reserved",
                    "us-west-2a") == reserved.price  # fmt: skip
    # every other zone of a type: a reserved series, unavailable at price 0
    assert offering(registry, "available", "m5.large", "reserved", "us-west-2b") == 0
    assert offering(registry, "price_estimate", "m5.large", "reserved", "us-west-2b") == 0
    assert offering(registry, "available", "c5.large", "reserved", "us-west-2c") == 0
    p.list(nodeclass)  # the reservation is used up
    assert offering(registry, "available", "m5.large", "reserved", "us-west-2a") == 0


async def test_the_aws_provider_publishes_into_the_controllers_registry(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    metrics = Metrics()
    cloud = AWSCloudProvider(Settings(cluster_name="test-cluster"), aws_clients,
                             client=None,  # type: ignore[arg-type]  # no API server calls
                             state=state_from_objects([]),
                             unavailable=UnavailableOfferings(), metrics=metrics,
                             catalog=moto_catalog)  # fmt: skip
    cloud.instance_types.list(make_nodeclass())
    value = metrics.registry.get_sample_value(f"{PREFIX}cpu_cores", {"instance_type": "m5.large"})
    assert value == 2
