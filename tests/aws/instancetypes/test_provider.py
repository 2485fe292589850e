"""`InstanceTypeProvider` against moto: catalogue, offerings, prices, caching, ICE and
learned capacity (prices over HTTP from the harness's Pricing stub and spot history)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from karpy.base.quantity import parse_quantity
from karpy.cloud.aws.instancetypes import InstanceTypeProvider, LearnedCapacity
from karpy.cloud.aws.instancetypes.learned import LearnedCapacityController
from karpy.cloud.aws.instancetypes.pricing import static_on_demand_prices
from karpy.cloud.aws.instancetypes.provider import PeriodicRefresh
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.disruption.explain import state_from_objects
from karpy.settings import Settings
from karpy.state.cluster import StateChange
from karpy.state.keys import NodeName
from tests.aws.instancetypes.factories import make_nodeclass, standard_amis
from tests.factories.nodes import node, nodeclaim

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.instancetypes.catalog import Catalog
    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer
    from karpy.scheduling.instancetypes import InstanceType

MI = 1 << 20
ZONES = {"us-west-2a", "us-west-2b", "us-west-2c"}


def provider(clients: AWSClients, catalog: Catalog | None, **settings: Any) -> InstanceTypeProvider:
    return InstanceTypeProvider(clients, Settings(cluster_name="test-cluster", **settings),
                                unavailable=UnavailableOfferings(), catalog=catalog)  # fmt: skip


def set_on_demand_price(server: MotoServer, instance_type: str, price: float) -> float:
    """Change the harness's on-demand price of one type (returns the old one). The Pricing
    stub caches its product documents, so they are dropped too (the harness has no public
    call for that yet)."""
    table = server.prices.on_demand_prices
    old = table[instance_type]
    table[instance_type] = price
    server.pricing._server.documents.clear()  # see the docstring
    return old


def by_name(types: tuple[InstanceType, ...]) -> dict[str, InstanceType]:
    return {it.name: it for it in types}


def test_catalog_lists_hvm_types_of_both_architectures_with_their_zones(
    moto_catalog: Catalog,
) -> None:
    assert len(moto_catalog.types) > 1300
    assert all(
        "hvm" in r.get("SupportedVirtualizationTypes", ["hvm"]) for r in moto_catalog.types.values()
    )
    assert moto_catalog.types["m6g.large"]["ProcessorInfo"]["SupportedArchitectures"] == ["arm64"]
    assert moto_catalog.zones_of["m5.large"] >= ZONES
    assert moto_catalog.zones == {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}


async def test_offerings_cover_the_subnet_zones_at_static_prices_before_a_refresh(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p = provider(aws_clients, moto_catalog)
    m5 = by_name(p.list(make_nodeclass()))["m5.large"]
    assert {(o.zone, o.capacity_type) for o in m5.offerings} == {
        (z, c) for z in ZONES for c in ("on-demand", "spot")}  # fmt: skip
    static = static_on_demand_prices("us-west-2")["m5.large"]
    assert all(o.available and o.price == static for o in m5.offerings)  # spot = OD until known
    assert m5.requirements.get("topology.k8s.aws/zone-id").values == {
        "usw2-az1",
        "usw2-az2",
        "usw2-az3",
    }
    assert m5.labels()["karpenter.k8s.aws/instance-family"] == "m5"
    assert (
        m5.requirements.get("karpenter.k8s.aws/capacity-reservation-id").operator == "DoesNotExist"
    )
    assert p.describe("m5.large") is moto_catalog.types["m5.large"]
    assert p.describe("x9.nothing") is None


async def test_a_type_not_offered_in_a_zone_has_unavailable_offerings_there(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    name = next(n for n, z in sorted(moto_catalog.zones_of.items())
                       if "us-west-2a" not in z and "us-west-2b" in z)  # fmt: skip
    it = by_name(provider(aws_clients, moto_catalog).list(make_nodeclass()))[name]
    assert not any(o.available for o in it.offerings if o.zone == "us-west-2a")
    assert "us-west-2a" not in it.requirements.get("topology.kubernetes.io/zone").values


async def test_refresh_takes_spot_history_and_the_pricing_api(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog, moto_server: MotoServer
) -> None:
    saved = set_on_demand_price(moto_server, "m5.large", 0.5)
    try:
        p = provider(aws_clients, moto_catalog)
        first = p.list(make_nodeclass())
        version = p.version
        await p.refresh_pricing()
        history = await (await aws_clients.ec2()).describe_spot_price_history(
            InstanceTypes=["m5.large"], AvailabilityZone="us-west-2a", StartTime=datetime.now(UTC)
        )
    finally:
        set_on_demand_price(moto_server, "m5.large", saved)
    rows = history["SpotPriceHistory"]
    expected = float(max(rows, key=lambda r: r["Timestamp"])["SpotPrice"])
    assert p.pricing.on_demand_live
    assert p.pricing.on_demand("m5.large") == 0.5
    assert p.version != version
    m5 = by_name(second := p.list(make_nodeclass()))["m5.large"]
    assert second is not first
    prices = {(o.zone, o.capacity_type): o.price for o in m5.offerings}
    assert prices[("us-west-2a", "spot")] == expected < 0.5
    assert prices[("us-west-2b", "on-demand")] == 0.5


async def test_isolated_vpc_never_asks_the_pricing_api(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog, moto_server: MotoServer
) -> None:
    saved = set_on_demand_price(moto_server, "m5.large", 0.5)
    try:
        p = provider(aws_clients, moto_catalog, isolated_vpc=True)
        await p.refresh_pricing()
    finally:
        set_on_demand_price(moto_server, "m5.large", saved)
    assert not p.pricing.on_demand_live
    assert p.pricing.on_demand("m5.large") == static_on_demand_prices("us-west-2")["m5.large"]
    assert p.pricing.spot("m5.large", "us-west-2a") != p.pricing.on_demand("m5.large")


async def test_list_returns_the_same_tuple_until_an_input_changes(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p = provider(aws_clients, moto_catalog)
    first = p.list(make_nodeclass())
    assert p.list(make_nodeclass()) is first  # an equal class, a new object
    assert p.list(make_nodeclass(), reservation_capacity={}) is first
    kubelet = make_nodeclass(spec={"kubelet": {"maxPods": 20}})
    other = p.list(kubelet)
    assert other is not first
    assert by_name(other)["m5.large"].capacity["pods"] == 20_000
    assert p.list(make_nodeclass(("us-west-2a",))) is not first
    assert p.list(make_nodeclass()) is first  # both answers stay cached


async def test_insufficient_capacity_makes_offerings_unavailable_and_moves_version(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p = provider(aws_clients, moto_catalog)
    nodeclass = make_nodeclass()
    first = p.list(nodeclass)
    version = p.version
    p.unavailable.mark([("m5.large", "us-west-2a", "spot"), ("m5.large", "us-west-2a", "on-demand"),
                        ("m5.large", "us-west-2b", "spot")])  # fmt: skip
    assert p.version != version
    second = p.list(nodeclass)
    assert second is not first
    m5 = by_name(second)["m5.large"]
    down = {(o.zone, o.capacity_type) for o in m5.offerings if not o.available}
    assert down == {("us-west-2a", "spot"), ("us-west-2a", "on-demand"), ("us-west-2b", "spot")}
    assert m5.requirements.get("topology.kubernetes.io/zone").values == {"us-west-2b", "us-west-2c"}
    assert "usw2-az2" not in m5.requirements.get("topology.k8s.aws/zone-id").values
    assert all(o.available for o in by_name(second)["m5.xlarge"].offerings)
    assert p.list(nodeclass) is second


async def test_types_no_ami_can_serve_are_left_out(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    p = provider(aws_clients, moto_catalog)
    everything = by_name(p.list(make_nodeclass()))
    served = by_name(p.list(make_nodeclass(amis=standard_amis(aws_account))))
    assert {"m5.large", "m6g.large"} <= served.keys()
    assert "p4d.24xlarge" in everything
    assert "p4d.24xlarge" not in served and "inf2.xlarge" not in served
    amd64_only = by_name(p.list(make_nodeclass(amis=standard_amis(aws_account)[:1])))
    assert "m6g.large" not in amd64_only and "m5.large" in amd64_only


async def test_enclaves_make_every_offering_of_types_without_them_unavailable(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    """In the catalogue m5.xlarge supports Nitro Enclaves and m5.large does not."""
    p = provider(aws_clients, moto_catalog)
    amis = standard_amis(aws_account)
    plain = by_name(p.list(make_nodeclass(amis=amis)))
    enclaves_on = {"enclaveOptions": {"enabled": True}}
    enclaves = by_name(p.list(make_nodeclass(amis=amis, spec=enclaves_on)))
    assert any(o.available for o in plain["m5.large"].offerings)
    assert not any(o.available for o in enclaves["m5.large"].offerings)
    assert any(o.available for o in enclaves["m5.xlarge"].offerings)


async def test_learned_memory_replaces_the_estimate_for_that_type_and_ami(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    learned = LearnedCapacity()
    p = InstanceTypeProvider(aws_clients, Settings(cluster_name="test-cluster"),
                             unavailable=UnavailableOfferings(), learned=learned,
                             catalog=moto_catalog)  # fmt: skip
    amis = standard_amis(aws_account)
    nodeclass = make_nodeclass(amis=amis)
    before = by_name(p.list(nodeclass))
    version = p.version
    assert learned.record("m5.large", amis[0]["id"], 7800 * MI)
    assert learned.record("m6g.large", "ami-not-in-the-class", 7000 * MI)
    assert p.version != version
    after = by_name(p.list(nodeclass))
    assert after["m5.large"].capacity["memory"] == parse_quantity("7800Mi")
    gained = after["m5.large"].allocatable["memory"] - before["m5.large"].allocatable["memory"]
    assert gained == parse_quantity(f"{7800 - 7577}Mi")
    assert after["m6g.large"].capacity == before["m6g.large"].capacity


async def test_learned_capacity_controller_keeps_the_smallest_registered_memory() -> None:
    def objects(memory: str, image: str = "ami-1") -> list[dict[str, Any]]:
        claim = nodeclaim("claim-a", provider_id="aws:///us-west-2a/i-1", node_name="node-a",
                          registered=True)  # fmt: skip
        claim["status"]["imageID"] = image
        labels = {"node.kubernetes.io/instance-type": "m5.large", "karpenter.sh/registered": "true"}
        return [claim, node("node-a", labels=labels, provider_id="aws:///us-west-2a/i-1",
                            capacity={"memory": memory, "cpu": "2"})]  # fmt: skip

    learned = LearnedCapacity()
    for memory, expected in (("7800Mi", 7800), ("7900Mi", 7800), ("7700Mi", 7700)):
        state = state_from_objects(objects(memory))
        await LearnedCapacityController(state, learned).reconcile(NodeName("node-a"))
        assert learned.get("m5.large", "ami-1") == expected * MI
    unregistered = objects("7000Mi")
    del unregistered[1]["metadata"]["labels"]["karpenter.sh/registered"]
    await LearnedCapacityController(state_from_objects(unregistered), learned).reconcile(
        NodeName("node-a")
    )
    assert learned.get("m5.large", "ami-1") == 7700 * MI


async def test_reserved_offerings_come_from_the_class_capacity_reservations(
    aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    reservation = {"id": "cr-0123", "availabilityZone": "us-west-2a", "instanceType": "m5.large",
                   "instanceMatchCriteria": "targeted", "ownerID": "123456789012",
                   "reservationType": "capacity-block", "interruptible": False}  # fmt: skip
    nodeclass = make_nodeclass(status={"capacityReservations": [reservation]})
    p = provider(aws_clients, moto_catalog)
    m5 = by_name(p.list(nodeclass, reservation_capacity={"cr-0123": 2}))["m5.large"]
    reserved = [o for o in m5.offerings if o.capacity_type == "reserved"]
    assert len(reserved) == 1 and reserved[0].available
    assert reserved[0].reservation_id == "cr-0123" and reserved[0].reservation_capacity == 2
    assert reserved[0].price < 0.001
    assert m5.requirements.get("karpenter.k8s.aws/capacity-reservation-type").values == {
        "capacity-block"
    }
    assert "reserved" in m5.requirements.get("karpenter.sh/capacity-type").values
    used_up = by_name(p.list(nodeclass))["m5.large"]
    assert not any(o.available for o in used_up.offerings if o.capacity_type == "reserved")


async def test_ensure_ready_fetches_the_catalog_once_for_concurrent_callers(
    aws_account: Account, aws_clients: AWSClients
) -> None:
    p = provider(aws_clients, None)
    assert p.list(make_nodeclass()) == ()
    await asyncio.gather(p.ensure_ready(), p.ensure_ready(), p.refresh_catalog())
    assert p.ready and p.catalog_refreshes == 1
    assert len(p.list(make_nodeclass())) > 1300
    names = [c.name for c in p.controllers(state_from_objects([]), clock=p.clock)]
    assert names == ["aws.instancetypes.catalog", "aws.pricing", "aws.instancetypes.capacity",
                     "aws.instancetypes.forget"]  # fmt: skip


async def test_refreshers_run_at_start_and_every_twelve_hours() -> None:
    calls: list[int] = []

    async def refresh() -> None:
        calls.append(1)

    refresher = PeriodicRefresh("aws.pricing", refresh)
    assert refresher.due(state_from_objects([]).snapshot())
    result = await refresher.reconcile()
    assert calls == [1] and result.requeue_after == 12 * 3600


def test_learned_capacity_follows_nodeclaim_changes_to_their_node() -> None:
    state = state_from_objects([nodeclaim("claim-a", node_name="node-a")])
    claim = state.snapshot().nodeclaims["claim-a"]
    reconciler = LearnedCapacityController(state, LearnedCapacity())
    change = StateChange(kind="NodeClaim", key="claim-a", old=None, new=claim)
    assert list(reconciler.keys_for(change)) == ["node-a"]
