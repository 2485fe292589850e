"""`FakeCloudProvider`: a cloud whose instances are Node objects, like Karpenter's KWOK.

``create`` picks, among the instance types the NodeClaim's requirements allow whose
allocatable holds its requests, the cheapest available offering its requirements allow,
skipping offerings in the insufficient-capacity cache (when that leaves none, the launch
fails with `InsufficientCapacity` at once, as EC2 launches do). Offerings the faults
declare out of capacity are tried and fail as EC2 fleet launches do: each is marked
unavailable and the next cheapest is tried; when none is left the launch raises
`InsufficientCapacity` naming them all. The chosen instance is then written as a Node
(`karpy.cloud.fake.nodes`), at once or, with ``FAKE_REGISTRATION_DELAY``, that long
after the launch (a booting instance; `karpy.cloud.fake.boot` writes it then, from the
NodeClaim).

Launches are idempotent: the Node is named after the NodeClaim, so a repeated ``create``
finds it and returns it. ``get`` and ``list`` read the Nodes from the cluster state (the
informers' copy of the API server), never a record of what this process launched; a
booting instance is known from its launched NodeClaim until its Node exists. Only Nodes
the fake cloud wrote are its instances (`nodes.is_fake_instance`: a ``fake://`` provider ID
naming the Node itself and KWOK's label), so ``list`` leaves every other Node out and
``delete`` refuses one, as the AWS provider does an instance without karpy's tags.
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from karpy.apis.labels import (
    AWS_RESTRICTED_LABEL_DOMAINS,
    AWS_WELL_KNOWN_LABELS,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_ZONE,
)
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.errors import (
    CreateError,
    InsufficientCapacity,
    NodeClaimNotFound,
    NodeClassNotReady,
)
from karpy.cloud.fake import nodes
from karpy.cloud.fake.boot import FakeBoot, booting
from karpy.cloud.fake.faults import FakeFaults
from karpy.cloud.fake.nodeclass import NODE_CLASS, NODE_CLASSES, FakeNodeClassReadiness
from karpy.cloud.provider import Instance, RepairPolicy
from karpy.kube.errors import AlreadyExists, NotFound
from karpy.kube.resources import NODES
from karpy.log import get_logger, obj_ref
from karpy.reconcile import Controller
from karpy.scheduling.requirements import Requirement, Requirements
from karpy.scheduling.resources import fits
from karpy.state.records import node_info

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodeclass import NodeClassKind
    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.scheduling.catalog import Catalog
    from karpy.scheduling.instancetypes import CapacityPool, InstanceType, Offering
    from karpy.state.cluster import ClusterState

__all__ = [
    "RESTRICTED_LABEL_DOMAINS",
    "FakeCloudProvider",
    "fake_repair_policies",
    "well_known_labels",
]

log = get_logger("fake.cloud")

NODECLASS_RESYNC: Final = 300.0
BOOT_WORKERS: Final = 16
BOOT_RESYNC: Final = 60.0


REPAIR_TOLERATION: Final = timedelta(minutes=10)


# The fake serves the AWS provider's labels (`well_known_labels`), so it reserves their
# domain as that provider does.
RESTRICTED_LABEL_DOMAINS: Final = AWS_RESTRICTED_LABEL_DOMAINS


def well_known_labels(catalog: Catalog) -> frozenset[str]:
    """The label keys pods and NodePools may require on the fake cloud: the AWS
    provider's, since the fake serves its NodeClass kind and the same manifests must
    schedule alike, and the catalog's own (KWOK's, or those a catalog file declares)."""
    return AWS_WELL_KNOWN_LABELS | catalog.well_known_labels


class FakeCloudProvider:
    name = "fake"

    def __init__(
        self,
        catalog: Catalog,
        *,
        client: KubeClient,
        state: ClusterState,
        unavailable: UnavailableOfferings,
        faults: FakeFaults | None = None,
        registration_delay: float = 0.0,
        repair_toleration: timedelta = REPAIR_TOLERATION,
        clock: Clock = SYSTEM_CLOCK,
        controller_metrics: ControllerMetrics | None = None,
    ) -> None:
        self.catalog = catalog
        self.client = client
        self.state = state
        self.unavailable = unavailable
        self.faults = faults or FakeFaults()
        self.registration_delay = registration_delay
        self.repair_toleration = repair_toleration
        self.clock = clock
        self.controller_metrics = controller_metrics
        self.types_by_name = {it.name: it for it in catalog.instance_types}

    @property
    def well_known_labels(self) -> frozenset[str]:
        return well_known_labels(self.catalog)

    @property
    def restricted_label_domains(self) -> frozenset[str]:
        return RESTRICTED_LABEL_DOMAINS

    @property
    def node_classes(self) -> Sequence[NodeClassKind[Any]]:
        return NODE_CLASSES

    async def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        self.faults.check("get_instance_types")
        return self.catalog.instance_types

    # -- launch ------------------------------------------------------------------------

    async def create(self, nodeclaim: NodeClaim) -> Instance:
        self.faults.check("create")
        existing = await self.client.try_get(NODES, nodeclaim.name)
        if existing is not None:
            return self._instance_of(existing)
        self._check_node_class(nodeclaim)
        it, offering = self._choose(nodeclaim)
        node = nodes.node_for(nodeclaim, it, offering)
        if self.registration_delay > 0:
            # `FakeBoot` writes the Node once the delay has passed since the launch.
            return self._instance_of(node)
        return self._instance_of(await self._write(node))

    def _check_node_class(self, claim: NodeClaim) -> None:
        ref = claim.spec.node_class_ref
        node_class = self.state.snapshot().node_class(NODE_CLASS, ref.name)
        if not NODE_CLASS.serves(ref) or node_class is None:
            raise NodeClassNotReady(f'{ref.kind} "{ref.name}" not found')
        if node_class.metadata.deletion_timestamp is not None:
            raise NodeClassNotReady(f'{ref.kind} "{ref.name}" is terminating')

    def _choose(self, claim: NodeClaim) -> tuple[InstanceType, Offering]:
        """The cheapest launchable (instance type, offering) for ``claim``; offerings out
        of capacity on the way are marked unavailable."""
        requirements = Requirements(
            Requirement.new(r.key, r.operator, r.values) for r in claim.spec.requirements
        )
        requests = claim.spec.resources.requests
        offline = self.unavailable.current()
        candidates: list[tuple[float, str, Offering, InstanceType]] = []
        known_out: list[CapacityPool] = []
        for it in self.catalog.instance_types:
            if it.requirements.intersects(requirements) is not None:
                continue
            if not fits(requests, it.allocatable):
                continue
            for offering in it.offerings:
                if not offering.available or not offering.compatible(requirements):
                    continue
                if (it.name, offering.zone, offering.capacity_type) in offline:
                    known_out.append((it.name, offering.zone, offering.capacity_type))
                    continue
                candidates.append((offering.price, it.name, offering, it))
        if not candidates and known_out:
            raise InsufficientCapacity(
                f"all {len(known_out)} offerings the NodeClaim allows are unavailable "
                "(insufficient capacity recently)",
                tuple(known_out),
            )
        if not candidates:
            raise CreateError(
                f"no instance type and offering satisfies the NodeClaim's requirements and "
                f"requests ({len(self.catalog.instance_types)} types considered)",
                "InstanceTypeNotFound",
            )
        candidates.sort(key=lambda c: (c[0], c[1], c[2].zone, c[2].capacity_type))
        exhausted: list[CapacityPool] = []
        for _, _, offering, it in candidates:
            pool = (it.name, offering.zone, offering.capacity_type)
            if self.faults.no_capacity(pool):
                exhausted.append(pool)
                continue
            if exhausted:
                self.unavailable.mark(exhausted)
            return it, offering
        self.unavailable.mark(exhausted)
        raise InsufficientCapacity(
            f"insufficient capacity for all {len(exhausted)} offerings the NodeClaim allows",
            tuple(exhausted),
        )

    async def _write(self, node: Mapping[str, Any]) -> Mapping[str, Any]:
        name = node["metadata"]["name"]
        try:
            created: Mapping[str, Any] = await self.client.create(NODES, node)
        except AlreadyExists:
            existing: Mapping[str, Any] | None = await self.client.try_get(NODES, name)
            if existing is None:
                raise
            return existing
        log.debug("fake instance started", **obj_ref("Node", name))
        return created

    def _booting_instance(self, claim: NodeClaim) -> Instance:
        """A launched instance whose Node has not appeared yet, as its NodeClaim knows it."""
        labels = claim.metadata.labels
        return Instance(
            provider_id=claim.status.provider_id,
            nodeclaim=claim.name,
            instance_type=labels.get(LABEL_INSTANCE_TYPE, ""),
            zone=labels.get(LABEL_ZONE, ""),
            capacity_type=labels.get(LABEL_CAPACITY_TYPE, ""),
            capacity=dict(claim.status.capacity),
            allocatable=dict(claim.status.allocatable),
            created=claim.metadata.creation_timestamp,
        )

    def _instance_of(self, node: Mapping[str, Any]) -> Instance:
        return nodes.instance_from_node(node_info(node), self.types_by_name, terminating=False)

    # -- read --------------------------------------------------------------------------

    async def get(self, provider_id: str) -> Instance:
        self.faults.check("get")
        name = nodes.node_name_of(provider_id)
        if name is None:
            raise NodeClaimNotFound(f"{provider_id!r} is not a fake provider ID")
        snapshot = self.state.snapshot()
        node = snapshot.nodes.get(name)
        claim = snapshot.nodeclaims.get(name)
        if (
            self.registration_delay > 0
            and node is None
            and claim is not None
            and claim.status.provider_id == provider_id
            and booting(claim, snapshot)
        ):
            return self._booting_instance(claim)
        if (
            node is None
            or node.provider_id != provider_id
            or nodes.TERMINATED_LABEL in node.node.labels
        ):
            raise NodeClaimNotFound(f"instance {provider_id} not found")
        return nodes.instance_from_node(node, self.types_by_name, terminating=False)

    async def list(self) -> Sequence[Instance]:
        self.faults.check("list")
        snapshot = self.state.snapshot()
        out = [self._booting_instance(c) for c in snapshot.nodeclaims.values()
               if self.registration_delay > 0 and booting(c, snapshot)]  # fmt: skip
        for node in snapshot.nodes.values():
            if not nodes.is_fake_instance(node):
                continue
            terminating = nodes.TERMINATED_LABEL in node.node.labels
            out.append(nodes.instance_from_node(node, self.types_by_name, terminating=terminating))
        return out

    # -- terminate ---------------------------------------------------------------------

    async def delete(self, nodeclaim: NodeClaim) -> None:
        self.faults.check("delete")
        name = nodes.node_name_of(nodeclaim.status.provider_id) or nodeclaim.name
        node = self.state.snapshot().nodes.get(name)
        if node is not None and not nodes.is_fake_instance(node):
            log.warning("refused to terminate node: not a fake instance", **obj_ref("Node", name))
            raise NodeClaimNotFound(f"node {name} is not an instance of the fake cloud")
        if node is not None and nodes.TERMINATED_LABEL in node.node.labels:
            raise NodeClaimNotFound(f"instance of NodeClaim {nodeclaim.name} already terminated")
        try:
            await self.client.patch(
                NODES, name, {"metadata": {"labels": {nodes.TERMINATED_LABEL: "true"}}}
            )
            await self.client.delete(NODES, name)
        except NotFound:
            raise NodeClaimNotFound(f"instance of NodeClaim {nodeclaim.name} not found") from None
        log.debug("fake instance terminating", **obj_ref("Node", name))

    # -- reboot ------------------------------------------------------------------------

    async def reboot(self, nodeclaim: NodeClaim) -> None:
        """What a kubelet coming back from a reboot shows: a new ``bootID`` on its Node."""
        self.faults.check("reboot")
        name = nodes.node_name_of(nodeclaim.status.provider_id) or nodeclaim.name
        node = self.state.snapshot().nodes.get(name)
        if node is None or not nodes.is_fake_instance(node):
            raise NodeClaimNotFound(f"instance of NodeClaim {nodeclaim.name} not found")
        if nodes.TERMINATED_LABEL in node.node.labels:
            raise NodeClaimNotFound(f"instance of NodeClaim {nodeclaim.name} is terminating")
        booted = {"status": {"nodeInfo": {"bootID": secrets.token_hex(16)}}}
        try:
            await self.client.patch_status(NODES, name, booted)
        except NotFound:
            raise NodeClaimNotFound(f"instance of NodeClaim {nodeclaim.name} not found") from None
        log.debug("fake instance rebooted", **obj_ref("Node", name))

    # -- the rest of the protocol ------------------------------------------------------

    async def is_drifted(self, nodeclaim: NodeClaim) -> str:
        return ""

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return fake_repair_policies(self.repair_toleration)

    def controllers(self, recorder: EventRecorder) -> Sequence[Component]:
        readiness = FakeNodeClassReadiness(self.state, self.client, clock=self.clock)
        controllers: list[Component] = [
            Controller(readiness, self.state, resync=NODECLASS_RESYNC, clock=self.clock,
                       metrics=self.controller_metrics),
        ]  # fmt: skip
        if self.registration_delay > 0:
            boot = FakeBoot(self.state, self.client, self.types_by_name,
                            delay=self.registration_delay, clock=self.clock)  # fmt: skip
            controllers.append(Controller(boot, self.state, workers=BOOT_WORKERS,
                                          resync=BOOT_RESYNC, clock=self.clock,
                                          metrics=self.controller_metrics))  # fmt: skip
        return controllers


def fake_repair_policies(toleration: timedelta) -> tuple[RepairPolicy, ...]:
    """The fake cloud's repair policies: a node not Ready for ``toleration``."""
    return (
        RepairPolicy("Ready", "False", toleration),
        RepairPolicy("Ready", "Unknown", toleration),
    )
