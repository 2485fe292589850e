"""A NodePool whose limits the CRD accepts but read oddly (``1e400``, a hundred digits,
``u`` and ``n`` suffixes) is never dropped: it turns Ready and provisions, a huge limit
meaning no limit and a tiny one a limit that is reached, said on the pod's event."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest

from karpy.apis.core import InvalidObject
from karpy.apis.nodepool import NodePool
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.fake import NODE_CLASSES, FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.nodepools.readiness import NodePoolReadiness
from karpy.provisioning.provisioner import Provisioner
from karpy.settings import Settings
from karpy.state.keys import NodePoolName
from tests import factories as f
from tests.fixtures.apiserver import create_with_status
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.fixtures.waiting import eventually
from tests.nodepools.test_nodepools import conditions, mark_ready

HUGE = ["1e400", "9" * 100, "100000000000000000000000u", "1e1000000", "+1.5e19", "12345Ei"]


@contextlib.asynccontextmanager
async def pool_with_limits(apiserver, limits: dict[str, str]) -> AsyncIterator[World]:
    apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
    mark_ready(apiserver)
    apiserver.store.create("nodepools.karpenter.sh", f.nodepool("default", limits=limits))
    create_with_status(apiserver, "pods", f.pod("web", requests={"cpu": "1"}, unschedulable=True))
    async with controller_world(apiserver) as world:
        yield world


async def provision(world: World) -> None:
    readiness = NodePoolReadiness(world.state, world.client, world.recorder,
                                  node_classes=NODE_CLASSES, clock=SYSTEM_CLOCK)  # fmt: skip
    await readiness.reconcile(NodePoolName("default"))
    await world.settled()
    unavailable = UnavailableOfferings()
    provider = FakeCloudProvider(embedded_catalog(), client=world.client, state=world.state,
                                 unavailable=unavailable)  # fmt: skip
    provisioner = Provisioner(
        world.state, world.client, provider, world.recorder,
        Settings(cluster_name="test", cloud_provider="fake"),
        unavailable=unavailable, clock=SYSTEM_CLOCK,
    )  # fmt: skip
    await provisioner.reconcile()


@pytest.mark.parametrize("limit", HUGE)
async def test_a_pool_with_a_huge_limit_is_ready_and_provisions(apiserver, limit):
    async with pool_with_limits(apiserver, {"cpu": limit, "memory": limit}) as world:
        assert "default" in world.state.snapshot().nodepools
        await provision(world)
        assert conditions(apiserver, "default")["Ready"] == ("True", "Ready")
        (claim,) = apiserver.store.list("nodeclaims.karpenter.sh")
        assert claim["metadata"]["labels"]["karpenter.sh/nodepool"] == "default"


@pytest.mark.parametrize("limit", ["1n", "500u", "1e-400"])
async def test_a_pool_with_a_limit_below_a_millicore_says_its_limit_is_reached(apiserver, limit):
    async with pool_with_limits(apiserver, {"cpu": limit}) as world:
        await provision(world)
        assert conditions(apiserver, "default")["Ready"] == ("True", "Ready")
        assert apiserver.store.list("nodeclaims.karpenter.sh") == []
        await eventually(lambda: bool(world.events("FailedScheduling")))
        (event,) = world.events("FailedScheduling")
        assert "limits" in event["message"], event["message"]


FORMAT_WRONG = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


@pytest.mark.parametrize("limit", ["1e1.5", "2E.5", "1e+3."])
async def test_a_limit_the_crd_admits_but_no_parser_reads_is_reported_in_status(apiserver, limit):
    async with pool_with_limits(apiserver, {"cpu": limit, "memory": "100Gi"}) as world:
        pool = world.state.snapshot().nodepools["default"]  # read, not dropped
        assert pool.spec.unreadable_limits == {"cpu": limit}
        await provision(world)
        said = f'spec.limits.cpu: Invalid value: "{limit}": {FORMAT_WRONG}'
        stored = apiserver.store.get("nodepools.karpenter.sh", "default")
        found = {c["type"]: c for c in stored["status"]["conditions"]}
        assert (found["ValidationSucceeded"]["status"], found["ValidationSucceeded"]["reason"],
                found["ValidationSucceeded"]["message"]) == (
                    "False", "NodePoolValidationFailed", said)  # fmt: skip
        assert found["Ready"]["status"] == "False"
        assert stored["spec"]["limits"]["cpu"] == limit
        assert apiserver.store.list("nodeclaims.karpenter.sh") == []
        await eventually(lambda: bool(world.events("FailedScheduling")))
        (event,) = world.events("FailedScheduling")
        assert said in event["message"], event["message"]


def test_a_limit_the_crd_pattern_refuses_is_still_refused() -> None:
    for text in ("lots", "1e1.5\n"):
        with pytest.raises(InvalidObject):
            NodePool.from_dict(f.nodepool("default", limits={"cpu": text}))
