"""CapacityBuffers with the gate on: a buffer of N chunks makes the provisioner launch room
for N pods while none is pending, its status says what it resolved to and whether the room
is there, a percentage of a Deployment and limits size it, and a real pod that takes the
room gets it replaced. With the gate off buffers are neither watched nor read.

As in ``test_replanning``, every NodeClaim can only be a ``c-2x-amd64-linux`` (1900m
allocatable) and every chunk asks for 1200m, so each node holds one chunk. The buffer
controller and the provisioner are called directly; kube-scheduler's part is played by
writing to the API server emulator.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import AsyncIterator
from typing import Any

import attrs

from karpy.cloud.fake import NODE_CLASSES, FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.provisioning.capacitybuffers import CapacityBuffers
from karpy.provisioning.provisioner import Provisioner
from karpy.rounds.buffers import BufferPods
from karpy.sandbox.apiserver import APIServer
from karpy.settings import Settings
from karpy.state import kinds
from karpy.state.cluster import StateChange
from karpy.state.watched import watched
from tests import factories as f
from tests.fixtures.apiserver import REPO_CRDS
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.kube.fakeclock import FakeClock
from tests.provisioning.world import INSTANCE_TYPE, NODECLAIMS
from tests.provisioning.world import Cluster as ReplanningCluster

BUFFERS = "capacitybuffers.autoscaling.x-k8s.io"
CHUNK = {"cpu": "1200m"}


@attrs.define
class Buffered:
    """The replanning test's cluster, plus the buffer controller and its placeholders."""

    cluster: ReplanningCluster
    controller: CapacityBuffers
    buffers: BufferPods
    woken: list[str]

    @property
    def store(self) -> Any:
        return self.cluster.store

    async def resolve(self, name: str) -> None:
        await self.cluster.world.settled()
        await self.controller.reconcile(f"default/{name}")
        await self.cluster.world.settled()

    async def round(self) -> None:
        await self.cluster.round()

    def status(self, name: str) -> dict[str, Any]:
        status: dict[str, Any] = self.store.get(BUFFERS, name, "default").get("status") or {}
        return status

    def condition(self, name: str, type_: str) -> tuple[str, str]:
        found = [c for c in self.status(name).get("conditions", []) if c["type"] == type_]
        return (found[0]["status"], found[0]["reason"]) if found else ("", "")

    def template(self, name: str, requests: dict[str, str] = CHUNK) -> None:
        self.store.create("podtemplates", f.pod_template(name, template=f.pod(requests=requests)))


@contextlib.asynccontextmanager
async def buffered(apiserver: Any, *, gate: bool = True) -> AsyncIterator[Buffered]:
    async with controller_world(apiserver, capacity_buffers=gate) as world:
        cluster = await _cluster(apiserver, world, gate=gate)
        woken: list[str] = []
        buffers = cluster.provisioner.buffers or BufferPods()
        buffers.on_change = woken.append
        controller = CapacityBuffers(world.state, world.client, buffers, clock=cluster.clock)
        yield Buffered(cluster, controller, buffers, woken)


async def _cluster(apiserver: Any, world: World, *, gate: bool) -> ReplanningCluster:
    apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
    only_one_type = f.nodepool_requirement("node.kubernetes.io/instance-type", "In",
                                           [INSTANCE_TYPE])  # fmt: skip
    apiserver.store.create("nodepools.karpenter.sh",
                           f.nodepool("default", requirements=[only_one_type]))  # fmt: skip
    await world.settled()
    clock = FakeClock()
    unavailable = UnavailableOfferings()
    provider = FakeCloudProvider(embedded_catalog(), client=world.client, state=world.state,
                                 unavailable=unavailable)  # fmt: skip
    provisioner = Provisioner(
        world.state, world.client, provider, world.recorder,
        Settings(cluster_name="test", cloud_provider="fake"),
        unavailable=unavailable, metrics=world.metrics.karpenter, clock=clock,
        buffers=BufferPods() if gate else None,
    )  # fmt: skip
    world.state.subscribe(provisioner.claims_informed)
    return ReplanningCluster(world, provisioner, clock)


async def test_a_buffer_of_n_chunks_launches_room_for_n_pods_with_none_pending(apiserver):
    async with buffered(apiserver) as b:
        b.template("web")
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=2))
        await b.resolve("spare")

        status = b.status("spare")
        assert status["replicas"] == 2
        assert status["podTemplateRef"] == {"name": "web"}
        assert status["podTemplateGeneration"] == 1
        assert status["provisioningStrategy"] == "buffer.x-k8s.io/active-capacity"
        assert b.condition("spare", "ReadyForProvisioning") == ("True", "Resolved")
        assert b.woken == ["default/spare"], "a provisioning window opens for the new room"
        assert b.cluster.provisioner.due(b.cluster.world.state.snapshot())

        await b.round()
        assert len(b.cluster.claims()) == 2
        assert b.cluster.provisioner.live_nominations(b.cluster.world.state.snapshot()) == {}
        assert b.cluster.world.events("Nominated") == []
        assert b.cluster.world.events("FailedScheduling") == []

        await b.round()
        assert len(b.cluster.claims()) == 2, "the room on its way is not bought twice"


async def test_the_provisioning_condition_turns_true_once_the_room_is_on_ready_nodes(apiserver):
    async with buffered(apiserver) as b:
        b.template("web")
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=1))
        await b.resolve("spare")
        await b.round()
        await b.resolve("spare")
        assert b.condition("spare", "Provisioning") == ("False", "RequiresNewCapacity")

        (claim,) = b.cluster.claims()
        b.cluster.initialize(claim)
        await b.round()
        await b.resolve("spare")
        assert b.condition("spare", "Provisioning") == ("True", "FitsExistingCapacity")


async def test_a_percentage_of_a_deployment_sizes_the_buffer(apiserver):
    async with buffered(apiserver) as b:
        b.store.create("deployments", f.deployment("api", replicas=10,
                                                   template=f.pod(requests=CHUNK)))  # fmt: skip
        b.store.create(BUFFERS, f.capacity_buffer("spare", scalable=("Deployment", "api"),
                                                  percentage=20))  # fmt: skip
        await b.resolve("spare")
        status = b.status("spare")
        assert status["replicas"] == 2, "20% of 10"
        assert status.get("podTemplateRef") is None

        await b.round()
        assert len(b.cluster.claims()) == 2


async def test_limits_cap_the_chunks(apiserver):
    async with buffered(apiserver) as b:
        b.template("web")
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=10,
                                                  limits={"cpu": "3"}))  # fmt: skip
        await b.resolve("spare")
        assert b.status("spare")["replicas"] == 2, "3 cpu holds two chunks of 1200m"
        await b.round()
        assert len(b.cluster.claims()) == 2


async def test_a_buffer_naming_a_missing_template_holds_no_room(apiserver):
    async with buffered(apiserver) as b:
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=1))
        await b.resolve("spare")
        assert b.condition("spare", "ReadyForProvisioning") == ("False", "PodTemplateNotFound")
        assert b.buffers.pods() == ()

        b.template("web")  # the template arriving queues the buffers naming it
        await b.cluster.world.settled()
        record = b.cluster.world.state.snapshot().podtemplates["default/web"]
        arrived = StateChange(kinds.PODTEMPLATE, "default/web", None, record)
        assert list(b.controller.keys_for(arrived)) == ["default/spare"]
        await b.resolve("spare")
        assert b.condition("spare", "ReadyForProvisioning") == ("True", "Resolved")
        assert len(b.buffers.pods()) == 1


async def test_a_real_pod_that_takes_the_room_gets_it_replaced(apiserver):
    async with buffered(apiserver) as b:
        b.template("web")
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=1))
        await b.resolve("spare")
        await b.round()
        (first,) = b.cluster.claims()
        node = b.cluster.initialize(first)
        await b.round()
        assert b.cluster.claims() == [first], "the room is there"

        # A real pod arrives and kube-scheduler puts it in the buffer's room.
        b.store.create("pods", f.pod("real", requests=CHUNK, node_name=node))
        await b.round()
        assert len(b.cluster.claims()) == 2, "the buffer's room is bought again"


async def test_a_deleted_buffer_leaves_no_placeholders(apiserver):
    async with buffered(apiserver) as b:
        b.template("web")
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=1))
        await b.resolve("spare")
        assert len(b.buffers.pods()) == 1
        b.store.delete(BUFFERS, "spare", "default")
        await b.resolve("spare")
        assert b.buffers.pods() == ()


async def test_with_the_gate_off_buffers_are_not_watched_and_hold_no_room(apiserver):
    assert kinds.CAPACITYBUFFER not in [s.name for s in watched(NODE_CLASSES)]
    assert kinds.CAPACITYBUFFER in [s.name for s in watched(NODE_CLASSES, capacity_buffers=True)]
    async with buffered(apiserver, gate=False) as b:
        b.template("web")
        b.store.create(BUFFERS, f.capacity_buffer("spare", pod_template="web", replicas=2))
        await b.cluster.world.settled()
        assert len(b.cluster.world.state.snapshot().capacitybuffers) == 0
        await b.round()
        assert b.cluster.claims() == []
        assert b.store.list(NODECLAIMS) == []


async def test_with_the_gate_off_a_cluster_without_the_buffer_crd_syncs(tmp_path):
    for crd in REPO_CRDS.glob("*.yaml"):
        if "capacitybuffers" not in crd.name:
            shutil.copy(crd, tmp_path / crd.name)
    async with APIServer(crd_dirs=[tmp_path]) as server, controller_world(server) as world:
        assert world.state.synced()
