"""Launch template garbage collection against moto: karpy's templates of this cluster that
no launch has used for ten minutes are deleted; those in use, recently used, of another
cluster, or not karpy's are kept."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
import pytest
from prometheus_client import CollectorRegistry

from karpy.cloud.aws.launch import InstanceLauncher, delete_launch_templates
from karpy.cloud.aws.launch.templategc import IDLE_AFTER, LaunchTemplateGC
from karpy.cloud.aws.launch.templates import LaunchTemplates
from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.settings import Settings
from tests.aws.launch.conftest import cluster_info, nodeclaim, nodeclass
from tests.fixtures.cluster import controller_world
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account

ON_DEMAND = [{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]
IDLE = IDLE_AFTER.total_seconds()
KARPY_TAGS = {"ResourceType": "launch-template", "Tags": [
    {"Key": "kubernetes.io/cluster/test-cluster", "Value": "owned"},
    {"Key": "eks:eks-cluster-name", "Value": "test-cluster"},
    {"Key": "karpenter.k8s.aws/ec2nodeclass", "Value": "default"}]}  # fmt: skip


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def launcher(aws_account: Account, aws_clients: AWSClients, clock: FakeClock) -> InstanceLauncher:
    return InstanceLauncher(aws_clients, cluster_info(aws_account),
                            unavailable=UnavailableOfferings(clock=clock), clock=clock)  # fmt: skip


def collector(
    clients: AWSClients, launcher: InstanceLauncher | None, clock: FakeClock
) -> LaunchTemplateGC:
    return LaunchTemplateGC(clients, "test-cluster", launcher=lambda: launcher, clock=clock,
                            registry=CollectorRegistry())  # fmt: skip


async def template_names(clients: AWSClients) -> set[str]:
    ec2 = await clients.ec2()
    listed = (await ec2.describe_launch_templates())["LaunchTemplates"]
    return {t["LaunchTemplateName"] for t in listed}


async def launch_names(
    launcher: InstanceLauncher, clients: AWSClients, claim: str, nc: Any, types: list[Any]
) -> set[str]:
    """The templates created by launching ``claim`` from ``nc``."""
    before = await template_names(clients)
    await launcher.create(nodeclaim(claim, requirements=ON_DEMAND), nc, types)
    return await template_names(clients) - before


async def test_idle_templates_of_an_old_ami_and_a_gone_kubelet_config_are_deleted(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any,
    clock: FakeClock,
) -> None:  # fmt: skip
    types = [priced("m5.large")]
    old_ami = nodeclass(attrs.evolve(aws_account, amis=aws_account.previous_amis))
    old_kubelet = nodeclass(aws_account, spec={"kubelet": {"maxPods": 20}})
    stale = await launch_names(launcher, aws_clients, "claim-1", old_ami, types)
    stale |= await launch_names(launcher, aws_clients, "claim-2", old_kubelet, types)
    await clock.advance(IDLE)
    current = await launch_names(launcher, aws_clients, "claim-3", nodeclass(aws_account), types)
    assert len(stale) == 2 and len(current) == 1

    gc = collector(aws_clients, launcher, clock)
    assert set(await gc.collect()) == stale
    assert await template_names(aws_clients) == current
    assert gc.deleted._value.get() == 2
    assert all(launcher.templates.last_used(name) is None for name in stale)

    # a deleted template the configuration needs again is simply recreated
    again = await launch_names(launcher, aws_clients, "claim-4", old_kubelet, types)
    assert len(again) == 1 and again <= stale


async def test_templates_of_another_cluster_or_not_karpys_are_kept(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any,
    clock: FakeClock,
) -> None:  # fmt: skip
    other = InstanceLauncher(aws_clients, attrs.evolve(cluster_info(aws_account),
                             name="other-cluster"), unavailable=UnavailableOfferings(),
                             clock=clock)  # fmt: skip
    await launch_names(other, aws_clients, "claim-1", nodeclass(aws_account), [priced("m5.large")])
    ec2 = await aws_clients.ec2()
    data = {"ImageId": aws_account.amis["al2023"]["x86_64"]}
    await ec2.create_launch_template(LaunchTemplateName="made-by-hand", LaunchTemplateData=data)
    # karpy's name and cluster tags, but not the node class tag a launch always writes
    await ec2.create_launch_template(
        LaunchTemplateName="karpenter.k8s.aws/12345", LaunchTemplateData=data,
        TagSpecifications=[{"ResourceType": "launch-template", "Tags": [
            {"Key": "kubernetes.io/cluster/test-cluster", "Value": "owned"},
            {"Key": "eks:eks-cluster-name", "Value": "test-cluster"}]}],
    )  # fmt: skip
    # every tag karpy writes, copied onto a template karpy did not name
    await ec2.create_launch_template(LaunchTemplateName="copied-tags", LaunchTemplateData=data,
                                     TagSpecifications=[KARPY_TAGS])  # fmt: skip
    everything = await template_names(aws_clients)

    gc = collector(aws_clients, launcher, clock)
    for _ in range(2):
        assert await gc.collect() == []
        await clock.advance(IDLE * 3)
    assert await template_names(aws_clients) == everything


async def test_a_template_of_a_launch_in_flight_is_kept(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any,
    clock: FakeClock,
) -> None:  # fmt: skip
    sent, release = asyncio.Event(), asyncio.Event()

    async def hold(**_: Any) -> None:
        sent.set()
        await release.wait()

    (await aws_clients.ec2()).meta.events.register("before-call.ec2.CreateFleet", hold)
    claim = nodeclaim("claim-1", requirements=ON_DEMAND)
    launching = asyncio.create_task(
        launcher.create(claim, nodeclass(aws_account), [priced("m5.large")])
    )
    await asyncio.wait_for(sent.wait(), 10)
    await clock.advance(IDLE * 1.4)
    in_flight = await template_names(aws_clients)

    gc = collector(aws_clients, launcher, clock)
    assert await gc.collect() == []
    release.set()
    await launching
    assert await template_names(aws_clients) == in_flight


async def test_after_a_restart_templates_are_kept_until_idle_since_first_seen(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any,
    clock: FakeClock,
) -> None:  # fmt: skip
    created = await launch_names(launcher, aws_clients, "claim-1", nodeclass(aws_account),
                                 [priced("m5.large")])  # fmt: skip
    await clock.advance(IDLE * 2)
    restarted = collector(aws_clients, None, clock)  # no launch in this process yet
    assert await restarted.collect() == []
    await clock.advance(IDLE - 1)
    assert await restarted.collect() == []
    await clock.advance(1)
    assert set(await restarted.collect()) == created


async def test_the_collector_runs_every_minute_until_stopped(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any,
    clock: FakeClock,
) -> None:  # fmt: skip
    await launch_names(launcher, aws_clients, "claim-1", nodeclass(aws_account),
                       [priced("m5.large")])  # fmt: skip
    gc = collector(aws_clients, launcher, clock)
    stop = asyncio.Event()
    running = asyncio.create_task(gc.run(stop))
    await clock.idle()
    assert await template_names(aws_clients)
    for _ in range(int(IDLE // 60)):
        await clock.advance(60)
        await clock.idle()
    assert await template_names(aws_clients) == set()
    stop.set()
    await asyncio.wait_for(running, 5)


async def test_known_template_names_are_bounded_least_recently_used_first(
    aws_account: Account, aws_clients: AWSClients, clock: FakeClock
) -> None:
    templates = LaunchTemplates(aws_clients, clock=clock, max_known=2)
    data = {"ImageId": aws_account.amis["al2023"]["x86_64"]}
    for name in ("a", "b", "a", "c"):
        await templates.ensure(f"karpenter.k8s.aws/{name}", data, {"team": "a"})
    assert len(templates) == 2
    assert templates.last_used("karpenter.k8s.aws/b") is None
    assert templates.last_used("karpenter.k8s.aws/a") == clock.now()


async def test_the_aws_provider_runs_the_collector_on_its_launcher(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    async with controller_world(apiserver) as world:
        provider = AWSCloudProvider(
            Settings(cluster_name="test-cluster"), aws_clients, client=world.client,
            state=world.state, unavailable=UnavailableOfferings(),
        )  # fmt: skip
        [gc] = [c for c in provider.controllers(world.recorder) if isinstance(c, LaunchTemplateGC)]
        assert gc.cluster_name == "test-cluster"
        assert gc.launcher() is None  # nothing launched yet: only first sightings count
        launcher = await provider.launcher()
        assert gc.launcher() is launcher


async def test_a_node_class_deletion_removes_only_karpys_templates_of_it(
    launcher: InstanceLauncher, aws_account: Account, aws_clients: AWSClients, priced: Any
) -> None:
    await launch_names(launcher, aws_clients, "claim-1", nodeclass(aws_account),
                       [priced("m5.large")])  # fmt: skip
    ec2 = await aws_clients.ec2()
    await ec2.create_launch_template(
        LaunchTemplateName="copied-tags", TagSpecifications=[KARPY_TAGS],
        LaunchTemplateData={"ImageId": aws_account.amis["al2023"]["x86_64"]},
    )  # fmt: skip
    assert await delete_launch_templates(aws_clients, cluster_name="test-cluster",
                                         nodeclass="default") == 1  # fmt: skip
    assert await template_names(aws_clients) == {"copied-tags"}
