"""The fake cloud against the API server emulator: instances are Node objects."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from karpy.apis.nodeclaim import NodeClaim
from karpy.cloud.errors import (
    CreateError,
    InsufficientCapacity,
    NodeClaimNotFound,
    NodeClassNotReady,
)
from karpy.cloud.fake import FakeCloudProvider, FakeFaults
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.kube.resources import NODES
from tests import factories as f
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.fixtures.waiting import eventually

TYPE = "node.kubernetes.io/instance-type"
ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"


def req(key: str, *values: str, operator: str = "In") -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def claim(name: str = "default-abcde", *, requirements=(), requests=None, **kw) -> NodeClaim:
    return NodeClaim.from_dict(f.nodeclaim(
        name, nodepool="default", launched=False, requirements=requirements,
        requests=requests or {"cpu": "500m", "memory": "1Gi", "pods": "1"}, **kw,
    ))  # fmt: skip


@contextlib.asynccontextmanager
async def cloud(apiserver, **kw) -> AsyncIterator[tuple[World, FakeCloudProvider]]:
    async with controller_world(apiserver) as world:
        apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
        await world.settled()
        kw.setdefault("unavailable", UnavailableOfferings())
        provider = FakeCloudProvider(embedded_catalog(), client=world.client,
                                     state=world.state, **kw)  # fmt: skip
        yield world, provider


async def test_create_writes_the_cheapest_fitting_offering_as_a_node(apiserver):
    async with cloud(apiserver) as (world, provider):
        wanted = claim(requirements=[req(TYPE, "c-2x-amd64-linux", "c-4x-amd64-linux",
                                         "m-4x-amd64-linux"),
                                     req(ZONE, "test-zone-b", "test-zone-c")],
                       requests={"cpu": "3", "memory": "2Gi", "pods": "1"},
                       labels={"team": "search"})  # fmt: skip
        instance = await provider.create(wanted)
        # c-2x is too small for 3 CPUs; c-4x spot is the cheapest left; zone-b sorts first.
        assert (instance.instance_type, instance.zone, instance.capacity_type) == (
            "c-4x-amd64-linux",
            "test-zone-b",
            "spot",
        )
        assert instance.provider_id == "fake://test-zone-b/default-abcde"
        assert instance.allocatable["cpu"] == 3900
        node = await world.client.get(NODES, "default-abcde")
        labels = node["metadata"]["labels"]
        assert {k: labels[k] for k in (TYPE, ZONE, CAPACITY_TYPE, "team",
                                       "karpenter.sh/nodepool", "kubernetes.io/hostname",
                                       "kwok.x-k8s.io/node",
                                       "karpenter.kwok.sh/instance-family")} == {
            TYPE: "c-4x-amd64-linux", ZONE: "test-zone-b", CAPACITY_TYPE: "spot",
            "team": "search", "karpenter.sh/nodepool": "default",
            "kubernetes.io/hostname": "default-abcde", "kwok.x-k8s.io/node": "fake",
            "karpenter.kwok.sh/instance-family": "c",
        }  # fmt: skip
        assert node["metadata"]["annotations"]["fake.karpy.dev/nodeclaim"] == "default-abcde"
        assert node["spec"]["taints"] == [{"key": "karpenter.sh/unregistered",
                                           "effect": "NoExecute"}]  # fmt: skip
        assert node["status"]["allocatable"]["cpu"] == "3900m"


async def test_create_is_idempotent(apiserver):
    async with cloud(apiserver) as (world, provider):
        first = await provider.create(claim())
        await world.settled()
        again = await provider.create(claim())
        assert again.provider_id == first.provider_id
        nodes, _ = await world.client.list(NODES)
        assert len(nodes) == 1


async def test_cached_unavailable_offerings_are_skipped_and_all_cached_is_capacity_error(
    apiserver,
):
    unavailable = UnavailableOfferings()
    only = [req(TYPE, "c-1x-amd64-linux"), req(CAPACITY_TYPE, "spot")]
    unavailable.mark([("c-1x-amd64-linux", "test-zone-a", "spot")])
    async with cloud(apiserver, unavailable=unavailable) as (_, provider):
        instance = await provider.create(claim("a-1", requirements=only))
        assert instance.zone == "test-zone-b"
        others = ("test-zone-b", "test-zone-c", "test-zone-d")
        unavailable.mark([("c-1x-amd64-linux", zone, "spot") for zone in others])
        with pytest.raises(InsufficientCapacity) as caught:
            await provider.create(claim("a-2", requirements=only))
        assert len(caught.value.pools) == 4


async def test_refused_offerings_fall_to_the_next_and_are_cached(apiserver):
    unavailable = UnavailableOfferings()
    faults = FakeFaults(insufficient=[("c-1x-*", "test-zone-a", "spot")])
    async with cloud(apiserver, unavailable=unavailable, faults=faults) as (_, provider):
        instance = await provider.create(claim(requirements=[req(TYPE, "c-1x-amd64-linux")]))
        assert (instance.zone, instance.capacity_type) == ("test-zone-b", "spot")
        assert unavailable.is_unavailable("c-1x-amd64-linux", "test-zone-a", "spot")


async def test_every_allowed_offering_refused_is_insufficient_capacity(apiserver):
    unavailable = UnavailableOfferings()
    faults = FakeFaults(insufficient=[("*", "*", "spot")])
    async with cloud(apiserver, unavailable=unavailable, faults=faults) as (world, provider):
        spot_only = [req(TYPE, "m-2x-arm64-linux"), req(CAPACITY_TYPE, "spot")]
        with pytest.raises(InsufficientCapacity) as caught:
            await provider.create(claim(requirements=spot_only))
        assert sorted(caught.value.pools) == [
            ("m-2x-arm64-linux", z, "spot") for z in ("test-zone-a", "test-zone-b",
                                                      "test-zone-c", "test-zone-d")]  # fmt: skip
        nodes, _ = await world.client.list(NODES)
        assert nodes == []


async def test_a_missing_nodeclass_and_an_impossible_claim_are_typed_errors(apiserver):
    async with cloud(apiserver) as (_, provider):
        orphan = claim(node_class_ref={"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                       "name": "missing"})  # fmt: skip
        with pytest.raises(NodeClassNotReady, match='"missing" not found'):
            await provider.create(orphan)
        with pytest.raises(CreateError) as caught:
            await provider.create(claim(requests={"cpu": "10000"}))
        assert caught.value.reason == "InstanceTypeNotFound"


async def test_injected_failures_hit_the_next_calls_only(apiserver):
    faults = FakeFaults()
    faults.fail("create", count=1)
    async with cloud(apiserver, faults=faults) as (_, provider):
        with pytest.raises(CreateError, match="injected create failure"):
            await provider.create(claim())
        assert (await provider.create(claim())).instance_type


async def test_get_list_and_delete_read_and_remove_nodes(apiserver):
    async with cloud(apiserver) as (world, provider):
        instance = await provider.create(claim())
        await world.settled()
        assert (await provider.get(instance.provider_id)).nodeclaim == "default-abcde"
        assert [i.provider_id for i in await provider.list()] == [instance.provider_id]
        with pytest.raises(NodeClaimNotFound):
            await provider.get("fake://test-zone-a/nothing-here")
        with pytest.raises(NodeClaimNotFound):
            await provider.get("aws:///us-east-1a/i-123")

        # The node is held by a finalizer, as a registered node is.
        held = {"metadata": {"finalizers": ["karpenter.sh/termination"]}}
        await world.client.patch(NODES, "default-abcde", held)
        launched = NodeClaim.from_dict(f.nodeclaim("default-abcde",
                                                   provider_id=instance.provider_id))  # fmt: skip
        await provider.delete(launched)

        def labelled() -> bool:  # the informer has seen the termination
            node = world.state.snapshot().nodes.get("default-abcde")
            return node is not None and "fake.karpy.dev/terminated" in node.node.labels

        await eventually(labelled)
        with pytest.raises(NodeClaimNotFound):
            await provider.get(instance.provider_id)
        (listed,) = await provider.list()
        assert listed.terminating, "listed while its finalizers hold the Node"
        with pytest.raises(NodeClaimNotFound):
            await provider.delete(launched)
        with pytest.raises(NodeClaimNotFound):
            await provider.delete(NodeClaim.from_dict(f.nodeclaim(
                "other", provider_id="fake://test-zone-a/other")))  # fmt: skip
