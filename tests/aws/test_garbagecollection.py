"""Garbage collection on the AWS provider, against moto and the API server emulator with a
fake clock: a second instance of one NodeClaim (a launch retried after its response was
lost) is terminated and the one the NodeClaim records is kept; instances that are not
karpy's are never terminated, orphaned or not."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest

from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.aws.launch.tags import instance_tags
from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.errors import NodeClaimNotFound
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.lifecycle.context import Lifecycle
from karpy.lifecycle.garbagecollection import GarbageCollection
from karpy.settings import Settings
from tests import factories as f
from tests.aws.launch.conftest import nodeclass
from tests.aws.launch.test_ownership import FOREIGN, run_tagged, state_of
from tests.fixtures.cluster import World, controller_world
from tests.kube.fakeclock import FakeClock

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account

NODECLAIMS = "nodeclaims.karpenter.sh"
CLUSTER = "test-cluster"
PERIOD = 120


@contextlib.asynccontextmanager
async def aws_lifecycle(
    apiserver: Any, clients: AWSClients
) -> AsyncIterator[tuple[World, Lifecycle, FakeClock]]:
    clock = FakeClock(start=datetime.now(UTC))
    async with controller_world(apiserver) as world:
        unavailable = UnavailableOfferings(clock=clock)
        provider = AWSCloudProvider(
            Settings(cluster_name=CLUSTER), clients, client=world.client, state=world.state,
            unavailable=unavailable, clock=clock,
        )  # fmt: skip
        ctx = Lifecycle(world.state, world.client, provider, world.recorder, unavailable,
                        clock, world.metrics.karpenter)  # fmt: skip
        yield world, ctx, clock


def provider_id(instance_id: str) -> str:
    return f"aws:///us-west-2a/{instance_id}"


async def launched_twice(clients: AWSClients, account: Account, name: str) -> tuple[str, str]:
    """Two instances with every tag a launch of NodeClaim ``name`` writes (what a launch
    retried after its CreateFleet response was lost leaves behind)."""
    claim = NodeClaim.from_dict(f.nodeclaim(name, nodepool="default", launched=False))
    tags = instance_tags(nodeclass(account), claim, CLUSTER)
    return await run_tagged(clients, account, tags), await run_tagged(clients, account, tags)


def store_claim(apiserver: Any, name: str, recorded: str) -> None:
    created = apiserver.store.create(NODECLAIMS, f.nodeclaim(name, nodepool="default",
                                                             launched=False))  # fmt: skip
    created["status"] = {"providerID": recorded}
    apiserver.store.update_status(NODECLAIMS, created)


def terminated_total(world: World, reason: str) -> float:
    value = world.metrics.registry.get_sample_value(
        "karpy_garbagecollection_terminated_total", {"reason": reason}
    )
    return value or 0.0


async def test_only_the_instance_its_nodeclaim_records_remains_of_a_duplicate_launch(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    kept, duplicate = await launched_twice(aws_clients, aws_account, "default-dup")
    async with aws_lifecycle(apiserver, aws_clients) as (world, ctx, clock):
        store_claim(apiserver, "default-dup", provider_id(kept))
        await world.settled()
        gc = GarbageCollection(ctx, grace=30)
        await clock.advance(31)
        await gc.reconcile()
        assert gc.terminated == 0
        assert set(gc.suspects) == {provider_id(duplicate)}
        assert gc.suspects[provider_id(duplicate)].reason == "duplicate"
        await clock.advance(PERIOD)
        await gc.reconcile()
        assert gc.terminated == 1
        assert terminated_total(world, "duplicate") == 1
        for _ in range(3):
            await clock.advance(PERIOD)
            await gc.reconcile()
        assert await state_of(aws_clients, kept) == "running"
        assert await state_of(aws_clients, duplicate) in {"shutting-down", "terminated"}
        assert gc.terminated == 1


async def test_a_nodeclaim_without_a_provider_id_yet_keeps_both_of_its_instances(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    first, second = await launched_twice(aws_clients, aws_account, "default-young")
    async with aws_lifecycle(apiserver, aws_clients) as (world, ctx, clock):
        apiserver.store.create(NODECLAIMS, f.nodeclaim("default-young", nodepool="default",
                                                       launched=False))  # fmt: skip
        await world.settled()
        gc = GarbageCollection(ctx, grace=30)
        for _ in range(3):
            await clock.advance(PERIOD)
            await gc.reconcile()
        assert gc.terminated == 0
        assert {await state_of(aws_clients, i) for i in (first, second)} == {"running"}


async def test_instances_that_are_not_karpys_are_never_terminated(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    foreign = [await run_tagged(aws_clients, aws_account, tags) for tags in FOREIGN.values()]
    claim = NodeClaim.from_dict(f.nodeclaim("default-gone", nodepool="default", launched=False))
    orphan = await run_tagged(aws_clients, aws_account,
                              instance_tags(nodeclass(aws_account), claim, CLUSTER))  # fmt: skip
    async with aws_lifecycle(apiserver, aws_clients) as (world, ctx, clock):
        await world.settled()
        gc = GarbageCollection(ctx, grace=30)
        for _ in range(3):
            await clock.advance(PERIOD)
            await gc.reconcile()
        assert gc.terminated == 1 and terminated_total(world, "orphan") == 1
        assert await state_of(aws_clients, orphan) in {"shutting-down", "terminated"}
        for instance_id in foreign:
            assert await state_of(aws_clients, instance_id) == "running"
        # Even a stand-in NodeClaim naming a foreign instance does not terminate it.
        stand_in = NodeClaim.from_dict(
            f.nodeclaim("default-gone", nodepool="default", provider_id=provider_id(foreign[0]))
        )
        with pytest.raises(NodeClaimNotFound):
            await ctx.provider.delete(stand_in)
        assert await state_of(aws_clients, foreign[0]) == "running"


async def test_a_registered_nodeclaim_is_kept_while_its_instance_runs_unlisted(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    """Someone removed the NodeClaim tag by hand: the instance drops out of karpy's list, but
    it runs, so its NodeClaim is not deleted for an instance that is "gone"."""
    claim = NodeClaim.from_dict(f.nodeclaim("default-untagged", nodepool="default",
                                            launched=False))  # fmt: skip
    tags = instance_tags(nodeclass(aws_account), claim, CLUSTER)
    instance_id = await run_tagged(aws_clients, aws_account, tags)
    ec2 = await aws_clients.ec2()
    await ec2.delete_tags(Resources=[instance_id], Tags=[{"Key": "karpenter.sh/nodeclaim"}])
    async with aws_lifecycle(apiserver, aws_clients) as (world, ctx, clock):
        spec = f.nodeclaim("default-untagged", nodepool="default", launched=True,
                           registered=True, provider_id=provider_id(instance_id),
                           node_name="default-untagged")  # fmt: skip
        created = apiserver.store.create(NODECLAIMS, spec)
        for condition in spec["status"]["conditions"]:
            condition.update(lastTransitionTime="2025-01-01T00:00:00Z",
                             reason=condition["type"], message="")  # fmt: skip
        created["status"] = spec["status"]
        apiserver.store.update_status(NODECLAIMS, created)
        await world.settled()
        assert provider_id(instance_id) not in {i.provider_id for i in await ctx.provider.list()}
        gc = GarbageCollection(ctx, grace=30)
        for _ in range(3):
            await clock.advance(PERIOD)
            await gc.reconcile()
        assert gc.deleted == 0 and gc.terminated == 0
        assert apiserver.store.try_get(NODECLAIMS, "default-untagged") is not None
        assert await state_of(aws_clients, instance_id) == "running"
