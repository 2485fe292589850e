"""The ``nodeclaim.tagging`` controller against moto and the API server emulator: a
registered NodeClaim's instance gets ``Name``, ``karpenter.sh/nodeclaim`` and
``eks:eks-cluster-name`` and the NodeClaim the ``tagged`` annotations, once; nothing
happens before registration or for a NodeClaim being deleted; a vanished instance is not
an error; an instance that is not karpy's for this cluster and NodeClaim is never tagged;
a hostile node name reaches EC2 only as a valid tag value."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import pytest

from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.aws.launch.tags import instance_tags, tags_of
from karpy.cloud.aws.provider import AWSCloudProvider
from karpy.cloud.aws.tagging import NodeClaimTagging, tag_value
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.settings import Settings
from karpy.state.keys import NodeClaimName
from tests import factories as f
from tests.aws.launch.conftest import nodeclass
from tests.aws.launch.test_ownership import FOREIGN, OWN_TAGS, run_tagged, without
from tests.fixtures.cluster import World, controller_world
from tests.fixtures.waiting import eventually

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from karpy.cloud.aws.clients import AWSClients
    from karpy.sandbox.aws.seed import Account

NODECLAIMS = "nodeclaims.karpenter.sh"
CLUSTER = "test-cluster"
EC2_NODE_CLASS = {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"}
TAGGED = "karpenter.k8s.aws/tagged"
CLUSTER_NAME_TAGGED = "compatibility.karpenter.k8s.aws/cluster-name-tagged"


@contextlib.asynccontextmanager
async def tagging_world(
    apiserver: Any, clients: AWSClients
) -> AsyncIterator[tuple[World, NodeClaimTagging]]:
    async with controller_world(apiserver) as world:
        yield world, NodeClaimTagging(clients, CLUSTER, state=world.state,
                                      client=world.client, pause=0.0)  # fmt: skip


async def launched(clients: AWSClients, account: Account, name: str) -> str:
    """An instance carrying every tag karpy's launch of NodeClaim ``name`` writes."""
    claim = NodeClaim.from_dict(f.nodeclaim(name, nodepool="default", launched=False))
    return await run_tagged(clients, account, instance_tags(nodeclass(account), claim, CLUSTER))


def store_claim(apiserver: Any, name: str, instance_id: str, *, node: str | None,
                **extra: Any) -> None:  # fmt: skip
    created = apiserver.store.create(
        NODECLAIMS,
        f.nodeclaim(
            name, nodepool="default", node_class_ref=EC2_NODE_CLASS, launched=False, **extra
        ),
    )
    status = {"providerID": f"aws:///us-west-2a/{instance_id}"}
    if node is not None:
        status["nodeName"] = node
    created["status"] = status  # create drops the status subresource
    apiserver.store.update_status(NODECLAIMS, created)


async def instance_tags_of(clients: AWSClients, instance_id: str) -> dict[str, str]:
    ec2 = await clients.ec2()
    out = await ec2.describe_instances(InstanceIds=[instance_id])
    return tags_of(out["Reservations"][0]["Instances"][0].get("Tags"))


def annotations_of(apiserver: Any, name: str) -> dict[str, str]:
    return dict(apiserver.store.get(NODECLAIMS, name)["metadata"].get("annotations") or {})


async def test_a_registered_nodeclaims_instance_gets_its_node_name_once(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    instance_id = await launched(aws_clients, aws_account, "default-reg")
    async with tagging_world(apiserver, aws_clients) as (world, tagging):
        store_claim(apiserver, "default-reg", instance_id, node="ip-10-0-0-1.ec2.internal")
        await world.settled()
        assert list(tagging.all_keys(world.state.snapshot())) == ["default-reg"]
        await tagging.reconcile(NodeClaimName("default-reg"))

        tags = await instance_tags_of(aws_clients, instance_id)
        assert tags["Name"] == "ip-10-0-0-1.ec2.internal"
        assert tags["karpenter.sh/nodeclaim"] == "default-reg"
        assert tags["eks:eks-cluster-name"] == CLUSTER
        assert annotations_of(apiserver, "default-reg") == {TAGGED: "true",
                                                         CLUSTER_NAME_TAGGED: "true"}  # fmt: skip

        # once: a user's later Name stays, and the tagged NodeClaim is no longer a key
        ec2 = await aws_clients.ec2()
        await ec2.create_tags(Resources=[instance_id], Tags=[{"Key": "Name", "Value": "mine"}])
        await world.settled()
        assert list(tagging.all_keys(world.state.snapshot())) == []
        await tagging.reconcile(NodeClaimName("default-reg"))
        assert (await instance_tags_of(aws_clients, instance_id))["Name"] == "mine"


async def test_a_name_the_instance_already_has_is_kept(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    claim = NodeClaim.from_dict(f.nodeclaim("default-own", nodepool="default", launched=False))
    tags = {**instance_tags(nodeclass(aws_account), claim, CLUSTER), "Name": "team-a"}
    instance_id = await run_tagged(aws_clients, aws_account, tags)
    async with tagging_world(apiserver, aws_clients) as (world, tagging):
        store_claim(apiserver, "default-own", instance_id, node="ip-10-0-0-2.ec2.internal")
        await world.settled()
        await tagging.reconcile(NodeClaimName("default-own"))
        assert (await instance_tags_of(aws_clients, instance_id))["Name"] == "team-a"
        assert annotations_of(apiserver, "default-own")[TAGGED] == "true"


async def test_nothing_is_tagged_before_registration_or_while_deleting(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    young = await launched(aws_clients, aws_account, "default-young")
    going = await launched(aws_clients, aws_account, "default-going")
    async with tagging_world(apiserver, aws_clients) as (world, tagging):
        store_claim(apiserver, "default-young", young, node=None)
        store_claim(apiserver, "default-going", going, node="ip-10-0-0-3.ec2.internal",
                    finalizers=["karpenter.sh/termination"])  # fmt: skip
        apiserver.store.delete(NODECLAIMS, "default-going")  # held by its finalizer
        await world.settled()
        assert list(tagging.all_keys(world.state.snapshot())) == []
        for name in ("default-young", "default-going"):
            await tagging.reconcile(NodeClaimName(name))
            assert TAGGED not in annotations_of(apiserver, name)
        for instance_id in (young, going):
            assert "Name" not in await instance_tags_of(aws_clients, instance_id)


async def test_an_instance_that_is_gone_is_not_an_error(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    async with tagging_world(apiserver, aws_clients) as (world, tagging):
        store_claim(apiserver, "default-gone", "i-0123456789abcdef0", node="ip-10-0-0-4")
        terminated = await launched(aws_clients, aws_account, "default-ended")
        ec2 = await aws_clients.ec2()
        await ec2.terminate_instances(InstanceIds=[terminated])
        store_claim(apiserver, "default-ended", terminated, node="ip-10-0-0-5")
        await world.settled()
        for name in ("default-gone", "default-ended"):
            await tagging.reconcile(NodeClaimName(name))  # no exception
            assert TAGGED not in annotations_of(apiserver, name)
        assert "Name" not in await instance_tags_of(aws_clients, terminated)


FOREIGN_OR_MISMATCHED = {
    **FOREIGN,
    # karpy's, in this cluster, but launched for another NodeClaim
    "another nodeclaim": OWN_TAGS,
    "no nodepool tag": without(OWN_TAGS, "karpenter.sh/nodepool"),
}


@pytest.mark.parametrize("tags", FOREIGN_OR_MISMATCHED.values(), ids=FOREIGN_OR_MISMATCHED.keys())
async def test_an_instance_that_is_not_karpys_for_the_nodeclaim_is_never_tagged(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients, tags: dict[str, str]
) -> None:
    instance_id = await run_tagged(aws_clients, aws_account, tags)
    async with tagging_world(apiserver, aws_clients) as (world, tagging):
        store_claim(apiserver, "default-other", instance_id, node="ip-10-0-0-6")
        await world.settled()
        await tagging.reconcile(NodeClaimName("default-other"))
        assert await instance_tags_of(aws_clients, instance_id) == tags
        assert TAGGED not in annotations_of(apiserver, "default-other")


HOSTILE = "evil\n\x00\u202e" + "x" * 300  # control and bidi characters, too long


def test_tag_values_are_cut_to_ec2s_limit_without_control_characters() -> None:
    assert tag_value("ip-10-0-0-1.ec2.internal") == "ip-10-0-0-1.ec2.internal"
    value = tag_value(HOSTILE)
    assert value == ("evil" + "x" * 300)[:256]
    assert tag_value("é" * 300) == "é" * 256  # characters, not bytes
    assert tag_value("a\u2028b\ud800c") == "abc"


async def test_a_hostile_node_name_is_written_as_a_valid_tag_value(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    instance_id = await launched(aws_clients, aws_account, "default-evil")
    async with tagging_world(apiserver, aws_clients) as (world, tagging):
        store_claim(apiserver, "default-evil", instance_id, node=HOSTILE)
        await world.settled()
        await tagging.reconcile(NodeClaimName("default-evil"))
        name = (await instance_tags_of(aws_clients, instance_id))["Name"]
        assert len(name) == 256
        assert name == ("evil" + "x" * 300)[:256]


async def test_the_aws_provider_runs_the_tagging_controller(
    apiserver: Any, aws_account: Account, aws_clients: AWSClients
) -> None:
    instance_id = await launched(aws_clients, aws_account, "default-run")
    async with controller_world(apiserver) as world:
        provider = AWSCloudProvider(
            Settings(cluster_name=CLUSTER), aws_clients, client=world.client,
            state=world.state, unavailable=UnavailableOfferings(),
        )  # fmt: skip
        [controller] = [c for c in provider.controllers(world.recorder)
                        if c.name == "nodeclaim.tagging"]  # fmt: skip
        stop = asyncio.Event()
        running = asyncio.create_task(controller.run(stop))
        try:
            store_claim(apiserver, "default-run", instance_id, node="ip-10-0-0-7")
            await eventually(lambda: annotations_of(apiserver, "default-run").get(TAGGED) == "true")
        finally:
            stop.set()
            await asyncio.wait_for(running, 5)
        assert (await instance_tags_of(aws_clients, instance_id))["Name"] == "ip-10-0-0-7"
