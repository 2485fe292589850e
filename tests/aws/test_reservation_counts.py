"""Capacity reservations are counted: a reservation is launched into while EC2 says it
has room, less karpy's own launches since; when full, launches fall through to the
NodePool's other capacity types; a terminated instance gives its place back, once.

The provider tests run against the sandbox's EC2, which keeps reservations as EC2 does
(`karpy.sandbox.aws.reservations`): its ``AvailableInstanceCount`` is the judge."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import attrs
import pytest

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.nodepool import NodePool
from karpy.cloud.aws.nodeclass.resolve import resolve
from karpy.cloud.aws.nodeclasses import NODE_CLASS
from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.aws.reservationcounts import ReservationCounts, ReservationRead
from karpy.cloud.errors import InsufficientCapacity, NodeClaimNotFound
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.settings import Settings
from karpy.state.cluster import ClusterState
from tests.aws.launch.conftest import nodeclaim, nodeclass
from tests.aws.test_provider import ready
from tests.factories.base import nodepool_requirement
from tests.factories.nodes import nodepool
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.instancetypes.catalog import Catalog
    from karpy.cloud.provider import Instance
    from karpy.sandbox.aws.seed import Account

ZONE = "us-west-2b"
ID = "cr-0aaa"


# --- the counts -----------------------------------------------------------------------------


def counts_of(available: int, clock: FakeClock) -> ReservationCounts:
    counts = ReservationCounts(clock=clock)
    counts.sync([ReservationRead(ID, "m5.large", ZONE, available)], read_at=clock.now())
    return counts


def test_a_launch_after_the_read_takes_a_place_one_before_it_does_not() -> None:
    clock = FakeClock()
    read_at = clock.now()
    counts = counts_of(3, clock)
    counts.launched(ID, read_at - timedelta(seconds=1))  # the read already shows it
    assert counts.available(ID) == 3
    counts.launched(ID, read_at + timedelta(seconds=1))
    counts.launched(ID, read_at + timedelta(seconds=2))
    counts.launched(ID, read_at + timedelta(seconds=3))
    counts.launched(ID, read_at + timedelta(seconds=4))
    assert counts.available(ID) == 0  # never below 0


def test_a_termination_gives_back_one_place_per_instance_however_often_it_is_told() -> None:
    clock = FakeClock()
    counts = counts_of(0, clock)
    for _ in range(3):
        counts.terminated(ID, "i-1")
    assert counts.available(ID) == 1
    counts.terminated(ID, "i-2")
    assert counts.available(ID) == 2


def test_exhausted_reservations_are_full_until_the_next_read() -> None:
    clock = FakeClock()
    counts = counts_of(5, clock)
    counts.sync([ReservationRead("cr-other", "m5.large", "us-west-2a", 4)], read_at=clock.now())
    counts.exhausted_offerings([("m5.large", ZONE)])
    assert counts.counts() == {ID: 0, "cr-other": 4}
    counts.sync([ReservationRead(ID, "m5.large", ZONE, 2)], read_at=clock.now())
    assert counts.available(ID) == 2
    counts.exhausted([ID])
    assert counts.available(ID) == 0


def test_unknown_and_day_old_counts_have_no_room() -> None:
    clock = FakeClock()
    counts = counts_of(5, clock)
    assert counts.available("cr-never-read") == 0
    counts.launched("cr-never-read", clock.now())
    counts.terminated("cr-never-read", "i-1")
    assert counts.available("cr-never-read") == 0
    clock._elapsed += timedelta(hours=24, seconds=1).total_seconds()
    assert counts.available(ID) == 0
    assert counts.counts() == {}


# --- the provider on the sandbox's EC2 -------------------------------------------------------


async def reserve(clients: AWSClients, count: int, instance_type: str = "m5.large") -> str:
    ec2 = await clients.ec2()
    answer = await ec2.create_capacity_reservation(
        InstanceType=instance_type, InstancePlatform="Linux/UNIX", AvailabilityZone=ZONE,
        InstanceCount=count, InstanceMatchCriteria="targeted",
    )  # fmt: skip
    return str(answer["CapacityReservation"]["CapacityReservationId"])


async def ec2_available(clients: AWSClients, reservation_id: str) -> int:
    ec2 = await clients.ec2()
    answer = await ec2.describe_capacity_reservations(CapacityReservationIds=[reservation_id])
    return int(answer["CapacityReservations"][0]["AvailableInstanceCount"])


@attrs.define
class World:
    provider: AWSCloudProvider
    nodeclass: EC2NodeClass
    clients: AWSClients

    async def resync(self) -> None:
        """What the EC2NodeClass controller does every minute."""
        counts = self.provider.reservations
        await resolve(self.nodeclass, self.clients, cluster_name="test-cluster",
                      k8s_version="1.31", reservation_counts=counts)  # fmt: skip

    async def reserved_room(self) -> list[tuple[bool, int]]:
        pool = NodePool.from_dict(nodepool("default"))
        types = await self.provider.get_instance_types(pool)
        (m5,) = (it for it in types if it.name == "m5.large")
        return [(o.available, o.reservation_capacity) for o in m5.offerings
                if o.capacity_type == "reserved"]  # fmt: skip


async def world(
    account: Account, clients: AWSClients, catalog: Catalog, reservation_id: str
) -> World:
    """A provider whose class selects ``reservation_id``, on the session's catalogue (what
    these tests check is counting, not fetching: prices stay the static table's)."""
    spec = {"capacityReservationSelectorTerms": [{"id": reservation_id}]}
    base = nodeclass(account, spec=spec)
    resolved = await resolve(base, clients, cluster_name=account.cluster_name,
                             k8s_version="1.31")  # fmt: skip
    nc = ready(attrs.evolve(base, status=attrs.evolve(
        base.status, capacity_reservations=resolved.status.capacity_reservations)))  # fmt: skip
    state = ClusterState()
    state.apply(NODE_CLASS.kind, [("default", nc)], [])
    provider = AWSCloudProvider(
        Settings(cluster_name=account.cluster_name),
        clients,
        client=None,  # type: ignore[arg-type]  # nothing here reaches the API server
        state=state,
        unavailable=UnavailableOfferings(),
        catalog=catalog,
    )
    built = World(provider, nc, clients)
    await built.resync()
    return built


def claim(name: str, *capacity_types: str) -> NodeClaim:
    return nodeclaim(name, requirements=[
        nodepool_requirement("karpenter.sh/capacity-type", "In", capacity_types),
        nodepool_requirement("node.kubernetes.io/instance-type", "In", ["m5.large"]),
        nodepool_requirement("topology.kubernetes.io/zone", "In", [ZONE]),
    ])  # fmt: skip


def as_launched(nc: NodeClaim, instance: Instance) -> NodeClaim:
    """``nc`` as the lifecycle records its launch: the instance's labels and provider ID."""
    metadata = attrs.evolve(nc.metadata, labels={**nc.metadata.labels, **instance.labels})
    status = attrs.evolve(nc.status, provider_id=instance.provider_id)
    return attrs.evolve(nc, metadata=metadata, status=status)


async def test_a_full_reservation_falls_through_to_on_demand_and_a_termination_frees_it(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    rid = await reserve(aws_clients, 2)
    w = await world(aws_account, aws_clients, moto_catalog, rid)
    assert await w.reserved_room() == [(True, 2)]

    launched = [await w.provider.create(claim(f"claim-{i}", "reserved", "on-demand"))
                for i in range(3)]  # fmt: skip
    assert [i.capacity_type for i in launched] == ["reserved", "reserved", "on-demand"]
    assert await ec2_available(aws_clients, rid) == 0
    assert await w.reserved_room() == [(False, 0)]

    first = as_launched(claim("claim-0"), launched[0])
    await w.provider.delete(first)  # terminating: not gone yet
    for _ in range(3):  # gone, however often it is asked
        with pytest.raises(NodeClaimNotFound):
            await w.provider.delete(first)
    assert await w.reserved_room() == [(True, 1)]
    assert await ec2_available(aws_clients, rid) == 1
    await w.resync()  # EC2 agrees
    assert await w.reserved_room() == [(True, 1)]


async def test_a_reservation_filled_behind_karpys_back_is_marked_full_by_the_refusal(
    aws_account: Account, aws_clients: AWSClients, moto_catalog: Catalog
) -> None:
    rid = await reserve(aws_clients, 1)
    w = await world(aws_account, aws_clients, moto_catalog, rid)
    # Someone else takes the place after karpy read the count.
    other = await world(aws_account, aws_clients, moto_catalog, rid)
    await other.provider.create(claim("theirs", "reserved"))
    assert await ec2_available(aws_clients, rid) == 0
    assert await w.reserved_room() == [(True, 1)]  # karpy does not know yet

    with pytest.raises(InsufficientCapacity):
        await w.provider.create(claim("mine", "reserved"))
    assert await w.reserved_room() == [(False, 0)]
    instance = await w.provider.create(claim("mine", "reserved", "on-demand"))
    assert instance.capacity_type == "on-demand"
