"""One provisioner on the API server emulator, and kube-scheduler's moves played by hand.

Every NodeClaim here can only be a ``c-2x-amd64-linux`` (1900m allocatable) and every pod
asks for 1200m by default, so each node holds one pod. kube-scheduler's part (binding,
nodes turning Ready) is played by writing to the API server emulator; time is a
`FakeClock`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import attrs

from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.lifecycle.context import Lifecycle
from karpy.provisioning.nodenames import NominatedNodeNames
from karpy.provisioning.nominations import Ended
from karpy.provisioning.provisioner import Provisioner
from karpy.settings import Settings
from karpy.state.cluster import StateChange
from tests import factories as f
from tests.fixtures.cluster import EXAMPLE_NODECLASS, World, controller_world
from tests.kube.fakeclock import FakeClock

INSTANCE_TYPE = "c-2x-amd64-linux"
NODECLAIMS = "nodeclaims.karpenter.sh"


@attrs.define
class Cluster:
    """The world, the provisioner under test, and kube-scheduler's moves."""

    world: World
    provisioner: Provisioner
    clock: FakeClock
    triggered: list[str] = attrs.field(factory=list)  # what asked the batcher for a round
    provider: FakeCloudProvider | None = None
    unavailable: UnavailableOfferings | None = None

    def lifecycle(self) -> Lifecycle:
        """The NodeClaim lifecycle's context, wired to the provisioner as the controller
        wires it (its nominations, its nominatedNodeName writer)."""
        assert self.provider is not None and self.unavailable is not None
        hints = self.provisioner.hints is not None
        return Lifecycle(self.world.state, self.world.client, self.provider,
                         self.world.recorder, self.unavailable, self.clock,
                         self.world.metrics.karpenter,
                         nominated=self.provisioner.nominations.pods_for,
                         name_nominated=self.provisioner.name_nominated if hints else None,
                         )  # fmt: skip

    @property
    def store(self) -> Any:
        return self.world.apiserver.store

    async def round(self) -> None:
        await self.world.settled()
        await self.provisioner.reconcile()
        await self.world.settled()

    def pending_pod(self, name: str, **options: Any) -> None:
        options.setdefault("requests", {"cpu": "1200m"})
        pod = f.pod(name, unschedulable=True, **options)
        created = self.store.create("pods", pod)
        created["status"] = pod["status"]  # as kube-scheduler marks it
        self.store.update_status("pods", created)

    def claims(self) -> list[str]:
        return sorted(c["metadata"]["name"] for c in self.store.list(NODECLAIMS))

    def initialize(self, claim_name: str) -> str:
        """The NodeClaim's instance launched, its node registered and is initialized;
        the node's name."""
        claim = self.store.get(NODECLAIMS, claim_name)
        node_name = f"node-{claim_name}"
        provider_id = f"fake:///{claim_name}"
        labels = {
            **claim["metadata"].get("labels", {}),
            "node.kubernetes.io/instance-type": INSTANCE_TYPE,
            "karpenter.sh/registered": "true",
            "karpenter.sh/initialized": "true",
        }
        allocatable = {"cpu": "1900m", "memory": "4086Mi", "pods": "32"}
        self.store.create("nodes", f.node(node_name, labels=labels, allocatable=allocatable,
                                          provider_id=provider_id))  # fmt: skip
        stamp = self.clock.now().isoformat().replace("+00:00", "Z")
        claim["status"] = {
            "providerID": provider_id,
            "nodeName": node_name,
            "capacity": {"cpu": "2", "memory": "4Gi", "pods": "32"},
            "allocatable": allocatable,
            "conditions": [
                {"type": kind, "status": "True", "reason": kind, "message": "",
                 "lastTransitionTime": stamp}
                for kind in ("Launched", "Registered", "Initialized")
            ],
        }  # fmt: skip
        self.store.update_status(NODECLAIMS, claim)
        return node_name

    def bind(self, pod: str, node: str) -> None:
        self.store.bind(pod, node)

    def nominated_to(self, pod: str) -> str | None:
        return self.provisioner.live_nominations(self.world.state.snapshot()).get(f"default/{pod}")

    def ended(self, outcome: Ended) -> float:
        return self._sample("karpy_nominations_ended_total", {"outcome": outcome.value})

    def nodeclaims(self, plan: str) -> float:
        return self._sample("karpy_provisioning_nodeclaims_total", {"plan": plan})

    def _sample(self, name: str, labels: dict[str, str]) -> float:
        return self.world.metrics.registry.get_sample_value(name, labels) or 0.0


@contextlib.asynccontextmanager
async def cluster(apiserver: Any, *, hints: bool = False) -> AsyncIterator[Cluster]:
    """``hints``: the provisioner writes nominatedNodeName (`NominatedNodeNames`, running
    as the controller runs it)."""
    async with controller_world(apiserver) as world:
        apiserver.store.create("ec2nodeclasses.karpenter.k8s.aws", EXAMPLE_NODECLASS)
        only_one_type = f.nodepool_requirement(
            "node.kubernetes.io/instance-type", "In", [INSTANCE_TYPE]
        )
        apiserver.store.create("nodepools.karpenter.sh",
                               f.nodepool("default", requirements=[only_one_type]))  # fmt: skip
        await world.settled()
        clock = FakeClock()
        triggered: list[str] = []

        unavailable = UnavailableOfferings()
        provider = FakeCloudProvider(embedded_catalog(), client=world.client, state=world.state,
                                     unavailable=unavailable)  # fmt: skip
        writer = (
            NominatedNodeNames(world.client, metrics=world.metrics.karpenter) if hints else None
        )
        provisioner = Provisioner(
            world.state, world.client, provider, world.recorder,
            Settings(cluster_name="test", cloud_provider="fake"),
            unavailable=unavailable,
            metrics=world.metrics.karpenter, clock=clock, hints=writer,
        )  # fmt: skip

        def batch(changes: Sequence[StateChange[Any]]) -> None:
            for change in changes:
                if change.kind in provisioner.batch_watches:
                    triggered.extend(str(item) for item in provisioner.batch_items(change))

        world.state.subscribe(provisioner.claims_informed)
        world.state.subscribe(batch)
        async with running(writer):
            yield Cluster(world, provisioner, clock, triggered, provider=provider,
                          unavailable=unavailable)  # fmt: skip


@contextlib.asynccontextmanager
async def running(writer: NominatedNodeNames | None) -> AsyncIterator[None]:
    """``writer`` runs (as the controller runs it) for the block."""
    if writer is None:
        yield
        return
    stop = asyncio.Event()
    task = asyncio.create_task(writer.run(stop))
    try:
        yield
    finally:
        stop.set()
        await task
