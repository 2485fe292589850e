"""The interruption reader end to end: EventBridge-shaped messages on a real SQS queue
(moto over HTTP), NodeClaims and Nodes in the API server emulator seen through informers,
and the controller running as the operator runs it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from prometheus_client import CollectorRegistry

from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.interruption import (
    InterruptionController,
    InterruptionMetrics,
    interruption_controller,
)
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.kube.backoff import Backoff
from karpy.kube.resources import NODECLAIMS as NODECLAIM_RESOURCE
from karpy.sandbox.apiserver import APIServer
from karpy.state import kinds
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.aws.interruption import bodies as b
from tests.fixtures.cluster import World, controller_world
from tests.fixtures.waiting import eventually

NODECLAIMS = "nodeclaims.karpenter.sh"
NODES = "nodes"
NODECLAIMS_RESOURCE = NODECLAIM_RESOURCE
ZONE = "us-west-2a"
_names = itertools.count(1)


@attrs.define
class Rig:
    world: World
    clients: AWSClients
    queue_name: str
    registry: CollectorRegistry
    metrics: InterruptionMetrics
    unavailable: UnavailableOfferings
    reservations: list[str]
    reader: InterruptionController
    stop: asyncio.Event
    task: asyncio.Task[None] | None = None

    @property
    def apiserver(self) -> APIServer:
        return self.world.apiserver

    async def create_queue(self) -> str:
        sqs = await self.clients.sqs()
        return str((await sqs.create_queue(QueueName=self.queue_name))["QueueUrl"])

    async def send(self, *events: dict[str, Any] | str) -> None:
        sqs = await self.clients.sqs()
        url = (await sqs.get_queue_url(QueueName=self.queue_name))["QueueUrl"]
        for event in events:
            text = event if isinstance(event, str) else b.body(event)
            await sqs.send_message(QueueUrl=url, MessageBody=text)

    async def in_queue(self) -> int:
        """Messages still in the queue, visible or in flight."""
        sqs = await self.clients.sqs()
        url = (await sqs.get_queue_url(QueueName=self.queue_name))["QueueUrl"]
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        answer = await sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)
        attributes = answer["Attributes"]
        return sum(int(v) for v in attributes.values())

    def start(self) -> None:
        controller = interruption_controller(self.reader)
        self.task = asyncio.create_task(controller.run(self.stop))

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.world.metrics.registry.get_sample_value(name, labels or {}) or 0.0

    def received(self, kind: str) -> float:
        return self.metrics_value("karpenter_interruption_received_messages_total",
                                  {"message_type": kind})  # fmt: skip

    def deleted_messages(self) -> float:
        return self.metrics_value("karpenter_interruption_deleted_messages_total")

    def metrics_value(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.registry.get_sample_value(name, labels or {}) or 0.0

    async def until_deleted(self, count: float, within: float = 10.0) -> None:
        await eventually(lambda: self.deleted_messages() >= count, within=within)

    def claim(self, name: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.apiserver.store.try_get(NODECLAIMS, name)
        return found

    def events(self, reason: str) -> list[tuple[str, str]]:
        return sorted((e["involvedObject"]["kind"], e["involvedObject"]["name"])
                      for e in self.world.events(reason))  # fmt: skip


@contextlib.asynccontextmanager
async def rig(
    apiserver: APIServer, clients: AWSClients, *, create_queue: bool = True,
    wait_seconds: int = 1, state: ClusterState | None = None,
) -> AsyncIterator[Rig]:  # fmt: skip
    async with controller_world(apiserver) as world:
        registry = CollectorRegistry()
        metrics = InterruptionMetrics(registry)
        unavailable = UnavailableOfferings()
        reservations: list[str] = []
        queue_name = f"interruption-{next(_names)}-{id(world)}"
        reader = InterruptionController(
            clients, queue_name, state=state or world.state, client=world.client,
            unavailable=unavailable, recorder=world.recorder, metrics=metrics,
            wait_seconds=wait_seconds, karpenter_metrics=world.metrics.karpenter,
            reservation_unavailable=reservations.append,
            backoff=Backoff(0.05, 0.2, jitter=0.0),
        )  # fmt: skip
        stop = asyncio.Event()
        r = Rig(world, clients, queue_name, registry, metrics, unavailable, reservations,
                reader, stop)  # fmt: skip
        if create_queue:
            await r.create_queue()
        try:
            yield r
        finally:
            stop.set()
            if r.task is not None:
                await asyncio.wait_for(r.task, 5)


def managed(apiserver: APIServer, name: str, instance_id: str, *, capacity_type: str = "spot",
            instance_type: str = "m5.large", node: bool = True, finalizers: tuple[str, ...] = (),
            labels: dict[str, str] | None = None) -> None:  # fmt: skip
    """A launched NodeClaim for ``instance_id`` and, with ``node``, its registered Node."""
    provider_id = f"aws:///{ZONE}/{instance_id}"
    claim_labels = {"node.kubernetes.io/instance-type": instance_type,
                    "topology.kubernetes.io/zone": ZONE,
                    "karpenter.sh/capacity-type": capacity_type, **(labels or {})}  # fmt: skip
    created = apiserver.store.create(NODECLAIMS, f.nodeclaim(
        name, nodepool="default", labels=claim_labels, finalizers=finalizers))  # fmt: skip
    created["status"] = {"providerID": provider_id, "nodeName": name if node else None}
    apiserver.store.update_status(NODECLAIMS, created)
    if node:
        apiserver.store.create(NODES, f.node(name, provider_id=provider_id, labels=claim_labels))


DELETING = [
    pytest.param(b.spot_interruption, "spot_interrupted", "SpotInterrupted", id="spot"),
    pytest.param(b.health_event, "scheduled_change", "InstanceUnhealthy", id="scheduled-change"),
    pytest.param(lambda i: b.state_change(i, "stopping"), "instance_stopped", "InstanceStopping",
                 id="stopping"),
    pytest.param(lambda i: b.state_change(i, "stopped"), "instance_stopped", "InstanceStopping",
                 id="stopped"),
    pytest.param(lambda i: b.state_change(i, "shutting-down"), "instance_terminated",
                 "InstanceTerminating", id="shutting-down"),
    pytest.param(lambda i: b.state_change(i, "terminated"), "instance_terminated",
                 "InstanceTerminating", id="terminated"),
    pytest.param(b.reservation_interruption, "capacity_reservation_interrupted",
                 "CapacityReservationInstanceInterrupted", id="capacity-reservation"),
]  # fmt: skip


@pytest.mark.parametrize(("event", "kind", "reason"), DELETING)
async def test_each_interrupting_message_deletes_the_instance_nodeclaim_and_the_message(
    apiserver, moto_clients, event, kind, reason
):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "doomed", "i-0000000000000000a")
        managed(apiserver, "bystander", "i-0000000000000000b")
        await r.world.settled()
        r.start()
        await r.send(event("i-0000000000000000a"))
        await r.until_deleted(1)
        assert r.claim("doomed") is None
        assert r.claim("bystander") is not None
        assert await r.in_queue() == 0
        assert r.received(kind) == 1
        await eventually(lambda: len(r.events("TerminatingOnInterruption")) == 2)
        assert r.events(reason) == [("Node", "doomed"), ("NodeClaim", "doomed")]
        assert r.events("TerminatingOnInterruption") == [("Node", "doomed"),
                                                         ("NodeClaim", "doomed")]  # fmt: skip
        assert r.sample("karpenter_nodeclaims_disrupted_total", {
            "reason": kind, "nodepool": "default", "capacity_type": "spot",
            "consolidation_policy": "", "termination_mode": ""}) == 1  # fmt: skip


async def test_a_rebalance_recommendation_only_publishes_an_event(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "at-risk", "i-0000000000000000c")
        await r.world.settled()
        r.start()
        await r.send(b.rebalance_recommendation("i-0000000000000000c"))
        await r.until_deleted(1)
        assert r.claim("at-risk") is not None
        assert await r.in_queue() == 0
        assert r.received("rebalance_recommendation") == 1
        await eventually(lambda: len(r.events("SpotRebalanceRecommendation")) == 2)
        assert r.world.events("SpotRebalanceRecommendation")[0]["type"] == "Normal"
        assert r.events("TerminatingOnInterruption") == []
        assert r.unavailable.current() == frozenset()


async def test_a_spot_interruption_marks_its_offering_unavailable(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "spot", "i-0000000000000000d", instance_type="c6g.xlarge")
        await r.world.settled()
        r.start()
        await r.send(b.spot_interruption("i-0000000000000000d"))
        await r.until_deleted(1)
        assert r.unavailable.current() == {("c6g.xlarge", ZONE, "spot")}


async def test_a_reservation_interruption_marks_the_reserved_offering_and_reservation(
    apiserver, moto_clients
):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "reserved", "i-0000000000000000e", capacity_type="reserved",
                labels={"karpenter.k8s.aws/capacity-reservation-id": "cr-0123"})  # fmt: skip
        await r.world.settled()
        r.start()
        await r.send(b.reservation_interruption("i-0000000000000000e"))
        await r.until_deleted(1)
        assert r.claim("reserved") is None
        assert r.unavailable.current() == {("m5.large", ZONE, "reserved")}
        assert r.reservations == ["cr-0123"]


async def test_a_scheduled_change_deletes_every_affected_nodeclaim(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "first", "i-00000000000000001")
        managed(apiserver, "second", "i-00000000000000002", node=False)
        managed(apiserver, "third", "i-00000000000000003")
        await r.world.settled()
        r.start()
        await r.send(b.health_event("i-00000000000000001", "i-00000000000000002"))
        await r.until_deleted(1)
        assert r.claim("first") is None and r.claim("second") is None
        assert r.claim("third") is not None
        await eventually(lambda: len(r.events("InstanceUnhealthy")) == 3)
        assert r.events("InstanceUnhealthy") == [
            ("Node", "first"), ("NodeClaim", "first"), ("NodeClaim", "second")]  # fmt: skip


async def test_unknown_and_malformed_messages_are_deleted_without_stopping_the_loop(
    apiserver, moto_clients
):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "victim", "i-0000000000000000f")
        await r.world.settled()
        r.start()
        await r.send("not json at all", '{"version": "0", "source": "aws.ec2", '
                     '"detail-type": "EC2 Spot Instance Interruption Warning", "detail": {}}',
                     b.state_change("i-0000000000000000f", "running"),
                     {"version": "0", "source": "aws.autoscaling", "detail-type": "x"})  # fmt: skip
        await r.until_deleted(4)
        assert await r.in_queue() == 0
        assert r.claim("victim") is not None
        assert r.received("no_op") == 2  # the two unparseable ones are not counted by kind
        await r.send(b.spot_interruption("i-0000000000000000f"))
        await r.until_deleted(5)
        assert r.claim("victim") is None
        assert r.task is not None and not r.task.done()


async def test_messages_about_unmanaged_instances_are_deleted_with_no_action(
    apiserver, moto_clients
):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "ours", "i-00000000000000010")
        await r.world.settled()
        r.start()
        await r.send(b.spot_interruption("i-0badbadbadbadbad0"),
                     b.state_change("i-0badbadbadbadbad0", "terminated"))  # fmt: skip
        await r.until_deleted(2)
        assert await r.in_queue() == 0
        assert r.claim("ours") is not None
        assert r.world.events() == []
        assert r.unavailable.current() == frozenset()


async def test_a_nodeclaim_already_terminating_is_not_deleted_again(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "leaving", "i-00000000000000011",
                finalizers=("karpenter.sh/termination",))  # fmt: skip
        await r.world.client.delete(NODECLAIMS_RESOURCE, "leaving")
        await r.world.settled()
        r.start()
        await r.send(b.state_change("i-00000000000000011", "shutting-down"))
        await r.until_deleted(1)
        assert r.claim("leaving") is not None  # held by its finalizer, as before
        assert r.events("TerminatingOnInterruption") == []
        assert r.sample("karpenter_nodeclaims_disrupted_total", {
            "reason": "instance_terminated", "nodepool": "default", "capacity_type": "spot",
            "consolidation_policy": "", "termination_mode": ""}) == 0  # fmt: skip


async def test_a_message_whose_delete_fails_stays_in_the_queue(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "stuck", "i-00000000000000012")
        await r.world.settled()
        apiserver.faults.error("DELETE", "/apis/karpenter.sh/v1/nodeclaims/stuck", status=403)
        r.start()
        await r.send(b.spot_interruption("i-00000000000000012"))
        await eventually(lambda: r.received("spot_interrupted") == 1)
        await asyncio.sleep(0.3)
        assert r.deleted_messages() == 0
        assert await r.in_queue() == 1  # in flight: back after its visibility timeout
        assert r.claim("stuck") is not None


async def test_queue_latency_is_measured_from_the_event_time(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        await r.world.settled()
        r.start()
        earlier = datetime.now(UTC) - timedelta(seconds=90)
        await r.send(b.spot_interruption("i-0badbadbadbadbad1", time=earlier))
        await r.until_deleted(1)
        count = r.metrics_value("karpenter_interruption_message_queue_duration_seconds_count")
        total = r.metrics_value("karpenter_interruption_message_queue_duration_seconds_sum")
        assert count == 1 and 89 < total < 120


async def test_a_missing_queue_is_retried_until_it_is_created(apiserver, moto_clients):
    async with rig(apiserver, moto_clients, create_queue=False) as r:
        managed(apiserver, "later", "i-00000000000000013")
        await r.world.settled()
        r.start()
        await asyncio.sleep(0.5)  # several lookups fail meanwhile
        assert r.task is not None and not r.task.done()
        await r.create_queue()
        await r.send(b.spot_interruption("i-00000000000000013"))
        await r.until_deleted(1)
        assert r.claim("later") is None


async def test_a_queue_deleted_under_the_reader_is_looked_up_again(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        managed(apiserver, "again", "i-00000000000000014")
        await r.world.settled()
        r.start()
        await eventually(lambda: r.reader.queue.url is not None)
        sqs = await r.clients.sqs()
        await sqs.delete_queue(QueueUrl=r.reader.queue.url)
        await eventually(lambda: r.reader.queue.url is None)
        await r.create_queue()
        await r.send(b.spot_interruption("i-00000000000000014"))
        await r.until_deleted(1)
        assert r.claim("again") is None


async def test_stop_ends_a_long_poll_promptly(apiserver, moto_clients):
    async with rig(apiserver, moto_clients, wait_seconds=20) as r:
        r.start()
        await eventually(lambda: r.reader.queue.url is not None)
        await asyncio.sleep(0.3)  # inside the 20 s long poll now
        loop = asyncio.get_running_loop()
        started = loop.time()
        r.stop.set()
        assert r.task is not None
        await asyncio.wait_for(r.task, 5)
        assert loop.time() - started < 1.0


async def test_a_batch_is_handled_in_parallel(apiserver, moto_clients):
    async with rig(apiserver, moto_clients) as r:
        for i in range(10):
            managed(apiserver, f"spot-{i}", f"i-000000000000002{i}", node=False)
        await r.world.settled()
        await r.send(*(b.spot_interruption(f"i-000000000000002{i}") for i in range(10)))
        apiserver.faults.delay("DELETE", "/apis/karpenter.sh/v1/nodeclaims/*", 0.5, count=None)
        loop = asyncio.get_running_loop()
        started = loop.time()
        r.start()
        await r.until_deleted(10)
        assert loop.time() - started < 2.5  # one by one would take at least 5 s
        assert all(r.claim(f"spot-{i}") is None for i in range(10))


async def test_messages_wait_until_nodeclaims_and_nodes_are_listed(apiserver, moto_clients):
    unsynced = ClusterState(watched=[kinds.NODECLAIM, kinds.NODE])
    async with rig(apiserver, moto_clients, state=unsynced) as r:
        r.start()
        await r.send(b.spot_interruption("i-0badbadbadbadbad2"))
        await asyncio.sleep(0.5)
        assert r.received("spot_interrupted") == 0 and await r.in_queue() == 1
        unsynced.set_synced(kinds.NODECLAIM)
        unsynced.set_synced(kinds.NODE)
        await r.until_deleted(1)
        assert r.received("spot_interrupted") == 1
