"""EC2 status checks polled with DescribeInstanceStatus (moto over HTTP, its instances'
status patched in-process the way AWS would report a failure): failed checks terminate
the NodeClaim forcefully, scheduled events drain it, short blips and other instances are
left alone, and each unhealthy instance is counted once while it stays unhealthy."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs
import pytest
from moto.ec2.models.instances import Instance
from prometheus_client import CollectorRegistry

from karpy.cloud.aws.clients import AWSClients
from karpy.cloud.aws.interruption import (
    InstanceStatusController,
    InterruptionMetrics,
    instance_status_controller,
)
from karpy.cloud.aws.interruption.instancestatus import INTERVAL, _failed_categories
from karpy.sandbox.apiserver import APIServer
from tests import factories as f
from tests.fixtures.cluster import World, controller_world
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock

NODECLAIMS = "nodeclaims.karpenter.sh"
TERMINATION = "karpenter.sh/nodeclaim-termination-timestamp"
NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _check(status: str, since: datetime | None = None) -> dict[str, Any]:
    detail: dict[str, Any] = {"Name": "reachability", "Status": status}
    if since is not None:
        detail["ImpairedSince"] = since
    return {"Status": "impaired" if status == "failed" else "ok", "Details": [detail]}


# --- which details count ---------------------------------------------------------------


def test_a_check_failed_for_two_minutes_counts_and_a_blip_does_not():
    old = {"InstanceStatus": _check("failed", NOW - timedelta(seconds=121))}
    blip = {"InstanceStatus": _check("failed", NOW - timedelta(seconds=60))}
    assert _failed_categories(old, NOW, 120) == (("InstanceStatus", NOW - timedelta(seconds=121)),)
    assert _failed_categories(blip, NOW, 120) == ()
    assert _failed_categories({"SystemStatus": _check("passed")}, NOW, 120) == ()


def test_scheduled_events_count_unless_finished_or_of_another_code():
    def events(*pairs: tuple[str, str]) -> dict[str, Any]:
        return {"Events": [{"Code": c, "Description": d} for c, d in pairs]}

    assert _failed_categories(events(("system-maintenance", "host work")), NOW, 120) == (
        ("EventStatus", NOW),)  # fmt: skip
    assert _failed_categories(events(("instance-retirement", "[Completed] retired")), NOW,
                              120) == ()  # fmt: skip
    assert _failed_categories(events(("instance-reboot", "[Canceled] reboot")), NOW, 120) == ()
    assert _failed_categories(events(("something-new", "x")), NOW, 120) == ()


def test_categories_come_forceful_first():
    status = {"Events": [{"Code": "system-reboot", "Description": "reboot"}],
              "SystemStatus": _check("failed", NOW - timedelta(minutes=5))}  # fmt: skip
    assert [c for c, _ in _failed_categories(status, NOW, 120)] == ["SystemStatus", "EventStatus"]


# --- against moto and the API server ----------------------------------------------------


@attrs.define
class Health:
    """What moto reports per instance ID, patched onto its Instance model."""

    instance: dict[str, dict[str, Any]] = attrs.Factory(dict)
    system: dict[str, dict[str, Any]] = attrs.Factory(dict)
    events: dict[str, list[dict[str, Any]]] = attrs.Factory(dict)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        instance_status = Instance.instance_status.fget  # type: ignore[attr-defined]
        system_status = Instance.system_status.fget  # type: ignore[attr-defined]
        monkeypatch.setattr(
            Instance,
            "instance_status",
            property(lambda i: self.instance.get(i.id) or instance_status(i)),
            raising=False,
        )
        monkeypatch.setattr(
            Instance,
            "system_status",
            property(lambda i: self.system.get(i.id) or system_status(i)),
            raising=False,
        )
        monkeypatch.setattr(Instance, "events", property(lambda i: self.events.get(i.id)),
                            raising=False)  # fmt: skip


@attrs.define
class Rig:
    world: World
    clients: AWSClients
    registry: CollectorRegistry
    poller: InstanceStatusController
    health: Health
    clock: FakeClock
    stop: asyncio.Event = attrs.field(factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    async def poll(self) -> None:
        """Let one poll and the work on its answer finish: the controller's first, or
        the next one an interval later. Its source then sleeps out the interval."""
        if self.task is None:
            controller = instance_status_controller(self.poller)
            self.task = asyncio.create_task(controller.run(self.stop))
        else:
            await self.clock.advance(INTERVAL)
        await self.clock.idle(within=10)

    async def launch(self, count: int) -> list[str]:
        ec2 = await self.clients.ec2()
        answer = await ec2.run_instances(ImageId="ami-12c6146b", MinCount=count,
                                         MaxCount=count, InstanceType="m5.large")  # fmt: skip
        return [i["InstanceId"] for i in answer["Instances"]]

    def claim(self, name: str, instance_id: str) -> None:
        created = self.world.apiserver.store.create(NODECLAIMS, f.nodeclaim(
            name, nodepool="default", finalizers=("karpenter.sh/termination",)))  # fmt: skip
        created["status"] = {"providerID": f"aws:///us-west-2a/{instance_id}"}
        self.world.apiserver.store.update_status(NODECLAIMS, created)

    def stored(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.world.apiserver.store.get(NODECLAIMS, name)
        return found

    def deleting(self, name: str) -> bool:
        return bool(self.stored(name)["metadata"].get("deletionTimestamp"))

    def forceful(self, name: str) -> bool:
        return TERMINATION in (self.stored(name)["metadata"].get("annotations") or {})

    def unhealthy_count(self, category: str) -> float:
        value = self.registry.get_sample_value(
            "karpenter_interruption_instance_status_unhealthy_total", {"category": category}
        )
        return value or 0.0  # fmt: skip


@contextlib.asynccontextmanager
async def rig(apiserver: APIServer, clients: AWSClients,
              monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Rig]:  # fmt: skip
    health = Health()
    health.install(monkeypatch)
    async with controller_world(apiserver) as world:
        registry = CollectorRegistry()
        clock = FakeClock(start=datetime.now(UTC))  # the checks' ImpairedSince is real time
        poller = InstanceStatusController(
            clients, state=world.state, client=world.client, recorder=world.recorder,
            metrics=InterruptionMetrics(registry), clock=clock,
            karpenter_metrics=world.metrics.karpenter,
        )  # fmt: skip
        r = Rig(world, clients, registry, poller, health, clock)
        try:
            yield r
        finally:
            r.stop.set()
            if r.task is not None:
                await asyncio.wait_for(r.task, 5)


def _failed_for(minutes: float) -> dict[str, Any]:
    return _check("failed", datetime.now(UTC) - timedelta(minutes=minutes))


async def test_failed_checks_terminate_forcefully_and_events_drain(
    apiserver, moto_clients, monkeypatch
):
    async with rig(apiserver, moto_clients, monkeypatch) as r:
        broken_os, broken_host, maintenance, healthy, blip = await r.launch(5)
        for name, instance in [("broken-os", broken_os), ("broken-host", broken_host),
                               ("maintenance", maintenance), ("healthy", healthy),
                               ("blip", blip)]:  # fmt: skip
            r.claim(name, instance)
        r.health.instance[broken_os] = _failed_for(5)
        r.health.system[broken_host] = _failed_for(5)
        r.health.events[maintenance] = [
            {
                "Code": "system-maintenance",
                "Description": "scheduled host maintenance",
                "NotBefore": datetime.now(UTC) + timedelta(days=3),
            }
        ]
        r.health.instance[blip] = _failed_for(0.5)  # fmt: skip
        await r.world.settled()
        await r.poll()
        assert r.deleting("broken-os") and r.forceful("broken-os")
        assert r.deleting("broken-host") and r.forceful("broken-host")
        assert r.deleting("maintenance") and not r.forceful("maintenance")
        assert not r.deleting("healthy") and not r.deleting("blip")
        assert (r.unhealthy_count("InstanceStatus"), r.unhealthy_count("SystemStatus"),
                r.unhealthy_count("EventStatus")) == (1, 1, 1)  # fmt: skip
        await eventually(lambda: len(r.world.events("InstanceUnhealthy")) == 3)
        assert r.world.metrics.registry.get_sample_value(
            "karpenter_nodeclaims_disrupted_total",
            {"reason": "system_status", "nodepool": "default", "capacity_type": "",
             "consolidation_policy": "", "termination_mode": ""}) == 1  # fmt: skip


async def test_a_broken_instance_with_scheduled_maintenance_is_terminated_forcefully(
    apiserver, moto_clients, monkeypatch
):
    async with rig(apiserver, moto_clients, monkeypatch) as r:
        (instance,) = await r.launch(1)
        r.claim("both", instance)
        r.health.system[instance] = _failed_for(5)
        r.health.events[instance] = [{"Code": "system-reboot", "Description": "reboot"}]
        await r.world.settled()
        await r.poll()
        assert r.deleting("both") and r.forceful("both")


async def test_unhealthy_instances_are_counted_once_while_unhealthy_and_unmanaged_never(
    apiserver, moto_clients, monkeypatch
):
    async with rig(apiserver, moto_clients, monkeypatch) as r:
        ours, foreign = await r.launch(2)
        r.claim("ours", ours)
        r.health.instance[ours] = _failed_for(5)
        r.health.instance[foreign] = _failed_for(5)
        await r.world.settled()
        await r.poll()
        await r.poll()
        assert r.unhealthy_count("InstanceStatus") == 1
        del r.health.instance[ours]  # recovered
        await r.poll()
        r.health.instance[ours] = _failed_for(5)  # and failed anew
        await r.poll()
        assert r.unhealthy_count("InstanceStatus") == 2


async def test_the_poller_runs_until_stopped(apiserver, moto_clients, monkeypatch):
    async with rig(apiserver, moto_clients, monkeypatch) as r:
        (instance,) = await r.launch(1)
        r.claim("polled", instance)
        await r.world.settled()
        await r.poll()
        assert not r.deleting("polled")
        r.health.instance[instance] = _failed_for(5)
        await r.clock.advance(INTERVAL - 1)
        assert not r.deleting("polled"), "the next poll is a minute after the last"
        await r.clock.advance(1)
        await eventually(lambda: r.deleting("polled"))
        r.stop.set()
        assert r.task is not None
        await asyncio.wait_for(r.task, 2)
