"""`AWSCloudProvider`: karpy's `CloudProvider` on EC2.

It ties the AWS parts together and owns none of their logic:

* instance types come from `InstanceTypeProvider` (catalog, prices and offerings fetched
  in the background, composed per EC2NodeClass from cache — never an AWS call in a
  scheduling round);
* launches, lookups and terminations go to `InstanceLauncher` (launch templates, user
  data, CreateFleet, instances found by their tags so a restart never launches twice);
* a NodeClaim may launch only from an EC2NodeClass whose ``Ready`` condition is True for
  its current generation, as Karpenter insists; a missing or terminating class is
  `NodeClassNotReady` (the NodeClaim is deleted and its pods scheduled again);
* drift compares the NodeClaim with its class (`karpy.cloud.aws.drift`);
* its controllers are the EC2NodeClass controller, the catalog refreshers with learned
  allocatable, EC2 status checks, launch template garbage collection, the tagging of
  registered instances with their node's name (`karpy.cloud.aws.tagging`), and, when
  ``INTERRUPTION_QUEUE`` is set, the SQS interruption reader.

The cluster's endpoint, CA bundle and service CIDR, which user data needs, come from
``CLUSTER_ENDPOINT``/``CLUSTER_CA_BUNDLE`` or else from EKS DescribeCluster, once, on the
first launch (`karpy.cloud.aws.cluster`).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import attrs
from prometheus_client import CollectorRegistry

from karpy.apis.hashes import EC2NODECLASS_HASH_VERSION, ec2nodeclass_hash
from karpy.apis.labels import (
    ANNOTATION_EC2NODECLASS_HASH,
    ANNOTATION_EC2NODECLASS_HASH_VERSION,
    ANNOTATION_INSTANCE_PROFILE,
    AWS_RESTRICTED_LABEL_DOMAINS,
    AWS_WELL_KNOWN_LABELS,
    CAPACITY_TYPE_RESERVED,
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_INSTANCE_TYPE,
)
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws import drift
from karpy.cloud.aws.cluster import discover_cluster
from karpy.cloud.aws.instancetypes import InstanceTypeProvider, LearnedCapacity
from karpy.cloud.aws.instancetypes.metrics import InstanceTypeMetrics
from karpy.cloud.aws.interruption import (
    InstanceStatusController,
    InterruptionController,
    InterruptionMetrics,
    instance_status_controller,
    interruption_controller,
)
from karpy.cloud.aws.launch import InstanceLauncher, parse_provider_id
from karpy.cloud.aws.launch.templategc import LaunchTemplateGC
from karpy.cloud.aws.nodeclass import nodeclass_controllers
from karpy.cloud.aws.nodeclasses import NODE_CLASS, NODE_CLASSES
from karpy.cloud.aws.repair import repair_policies
from karpy.cloud.aws.reservationcounts import ReservationCounts
from karpy.cloud.aws.tagging import NodeClaimTagging, tagging_controller
from karpy.cloud.errors import NodeClaimNotFound, NodeClassNotReady

if TYPE_CHECKING:
    from collections.abc import Sequence

    from karpy.apis.core import NodeClassReference
    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.apis.nodeclass import NodeClassKind
    from karpy.apis.nodepool import NodePool
    from karpy.base.clock import Clock
    from karpy.base.component import Component
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.instancetypes.catalog import Catalog
    from karpy.cloud.provider import Instance, RepairPolicy
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.observability.metrics import Metrics
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = ["AWSCloudProvider"]


class AWSCloudProvider:
    name = "aws"

    def __init__(
        self,
        settings: Settings,
        clients: AWSClients,
        *,
        client: KubeClient,
        state: ClusterState,
        unavailable: UnavailableOfferings,
        clock: Clock = SYSTEM_CLOCK,
        controller_metrics: ControllerMetrics | None = None,
        metrics: Metrics | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        """``catalog`` starts the instance-type provider with an already fetched catalog
        (tests that share one fetch); without it the first question fetches one."""
        self.settings = settings
        self.clients = clients
        self.client = client
        self.state = state
        self.unavailable = unavailable
        self.clock = clock
        self.controller_metrics = controller_metrics
        self.metrics = metrics
        self.learned = LearnedCapacity(clock=clock)
        self.reservations = ReservationCounts(clock=clock)
        self.instance_types = InstanceTypeProvider(
            clients, settings, unavailable=unavailable, clock=clock, learned=self.learned,
            metrics=InstanceTypeMetrics(metrics.registry) if metrics is not None else None,
            catalog=catalog,
        )  # fmt: skip
        self._launcher: InstanceLauncher | None = None
        self._launcher_lock = asyncio.Lock()

    @property
    def well_known_labels(self) -> frozenset[str]:
        return AWS_WELL_KNOWN_LABELS

    @property
    def restricted_label_domains(self) -> frozenset[str]:
        return AWS_RESTRICTED_LABEL_DOMAINS

    @property
    def node_classes(self) -> Sequence[NodeClassKind[Any]]:
        return NODE_CLASSES

    # -- NodeClasses -------------------------------------------------------------------

    def _ready_nodeclass(self, ref: NodeClassReference) -> EC2NodeClass:
        """The Ready EC2NodeClass ``ref`` names, else `NodeClassNotReady` saying why."""
        nodeclass = self.state.snapshot().node_class(NODE_CLASS, ref.name)
        if not NODE_CLASS.serves(ref) or nodeclass is None:
            raise NodeClassNotReady(f'{ref.kind} "{ref.name}" not found')
        if nodeclass.metadata.deletion_timestamp is not None:
            raise NodeClassNotReady(f'EC2NodeClass "{ref.name}" is terminating')
        ready = nodeclass.status.condition("Ready")
        if ready is None or ready.status != "True":
            why = ready.message if ready is not None and ready.message else "not resolved yet"
            raise NodeClassNotReady(f'EC2NodeClass "{ref.name}" is not ready: {why}')
        if ready.observed_generation != nodeclass.metadata.generation:
            raise NodeClassNotReady(f'EC2NodeClass "{ref.name}" status has not been '
                                    "reconciled against its latest spec")  # fmt: skip
        return nodeclass

    # -- instance types ----------------------------------------------------------------

    async def get_instance_types(self, nodepool: NodePool) -> Sequence[InstanceType]:
        nodeclass = self._ready_nodeclass(nodepool.spec.template.spec.node_class_ref)
        await self.instance_types.ensure_ready()
        return self._instance_types(nodeclass)

    def _instance_types(self, nodeclass: EC2NodeClass) -> Sequence[InstanceType]:
        """The class's types, reserved offerings available while their reservation has room."""
        return self.instance_types.list(nodeclass, reservation_capacity=self.reservations.counts())

    # -- launch and lookups ------------------------------------------------------------

    async def launcher(self) -> InstanceLauncher:
        if self._launcher is None:
            async with self._launcher_lock:
                if self._launcher is None:
                    cluster = await discover_cluster(self.clients, self.settings)
                    self._launcher = InstanceLauncher(
                        self.clients,
                        cluster,
                        unavailable=self.unavailable,
                        clock=self.clock,
                        reservations=self.reservations,
                    )
        return self._launcher

    async def create(self, nodeclaim: NodeClaim) -> Instance:
        nodeclass = self._ready_nodeclass(nodeclaim.spec.node_class_ref)
        # Checked and hashed before any AWS call: a class whose kubelet values were
        # admitted by an older CRD (Ready from before) must not reach user data.
        problems = nodeclass.kubelet_errors()
        if problems:
            raise NodeClassNotReady(
                f'EC2NodeClass "{nodeclass.name}" is invalid: {problems[0].detail}'
            )
        try:
            nodeclass_hash = ec2nodeclass_hash(nodeclass, self.settings.cluster_ca_bundle or None)
        except ValueError as exc:
            raise NodeClassNotReady(f'EC2NodeClass "{nodeclass.name}" is invalid: {exc}') from None
        await self.instance_types.ensure_ready()
        types = self._instance_types(nodeclass)
        launcher = await self.launcher()
        instance = await launcher.create(nodeclaim, nodeclass, types)
        if instance.capacity_type == CAPACITY_TYPE_RESERVED:
            reservation = instance.labels.get(LABEL_AWS_CAPACITY_RESERVATION_ID, "")
            self.reservations.launched(reservation, instance.created)
        annotations = {
            ANNOTATION_EC2NODECLASS_HASH: nodeclass_hash,
            ANNOTATION_EC2NODECLASS_HASH_VERSION: EC2NODECLASS_HASH_VERSION,
        }
        if nodeclass.status.instance_profile:
            annotations[ANNOTATION_INSTANCE_PROFILE] = nodeclass.status.instance_profile
        return attrs.evolve(instance, annotations={**instance.annotations, **annotations})

    async def delete(self, nodeclaim: NodeClaim) -> None:
        instance_id = self._instance_id(nodeclaim.status.provider_id)
        try:
            await (await self.launcher()).terminate(instance_id)
        except NodeClaimNotFound:
            # Confirmed gone: its place in a capacity reservation is free again.
            reservation = nodeclaim.metadata.labels.get(LABEL_AWS_CAPACITY_RESERVATION_ID, "")
            if reservation:
                self.reservations.terminated(reservation, instance_id)
            raise

    async def reboot(self, nodeclaim: NodeClaim) -> None:
        instance_id = self._instance_id(nodeclaim.status.provider_id)
        await (await self.launcher()).reboot(instance_id)

    async def get(self, provider_id: str) -> Instance:
        instance = await (await self.launcher()).get(self._instance_id(provider_id))
        if instance.terminating:  # shutting down: gone, for the protocol's callers
            raise NodeClaimNotFound(f"instance {provider_id} is terminating")
        return instance

    async def list(self) -> Sequence[Instance]:
        return await (await self.launcher()).list()

    @staticmethod
    def _instance_id(provider_id: str) -> str:
        try:
            return parse_provider_id(provider_id)[1]
        except ValueError:
            raise NodeClaimNotFound(f"{provider_id!r} is not an AWS provider ID") from None

    # -- drift, repair, controllers ----------------------------------------------------

    async def is_drifted(self, nodeclaim: NodeClaim) -> str:
        ref = nodeclaim.spec.node_class_ref
        nodeclass = self.state.snapshot().node_class(NODE_CLASS, ref.name)
        if nodeclass is None or not nodeclaim.status.provider_id:
            return ""
        type_name = nodeclaim.metadata.labels.get(LABEL_INSTANCE_TYPE, "")
        instance_type = next(
            (it for it in self._instance_types(nodeclass) if it.name == type_name), None
        ) if self.instance_types.ready else None  # fmt: skip
        try:
            instance_id = self._instance_id(nodeclaim.status.provider_id)
        except NodeClaimNotFound:
            return ""
        facts = await drift.instance_facts(await self.clients.ec2(), instance_id)
        return drift.drift_reason(nodeclaim, nodeclass, instance_type, facts)

    def repair_policies(self) -> Sequence[RepairPolicy]:
        return repair_policies(reboot=self.settings.aws_feature_gates.reboot_for_repair)

    def controllers(self, recorder: EventRecorder) -> Sequence[Component]:
        """The EC2NodeClass controller, the catalog refreshers (with learned allocatable),
        EC2 status checks, launch template garbage collection, the Name tagging of
        registered instances, and the SQS reader when ``INTERRUPTION_QUEUE`` is set."""
        components: list[Component] = list(
            nodeclass_controllers(
                self.clients,
                self.settings,
                state=self.state,
                client=self.client,
                clock=self.clock,
                recorder=recorder,
                metrics=self.controller_metrics,
                reservation_counts=self.reservations,
            )
        )
        components += self.instance_types.controllers(
            self.state, clock=self.clock, metrics=self.controller_metrics
        )
        registry = self.metrics.registry if self.metrics is not None else CollectorRegistry()
        interruption_metrics = InterruptionMetrics(registry)
        karpenter = self.metrics.karpenter if self.metrics is not None else None
        status_checks = InstanceStatusController(
            self.clients,
            state=self.state,
            client=self.client,
            recorder=recorder,
            metrics=interruption_metrics,
            clock=self.clock,
            karpenter_metrics=karpenter,
        )
        components.append(
            instance_status_controller(status_checks, metrics=self.controller_metrics)
        )
        components.append(
            LaunchTemplateGC(self.clients, self.settings.cluster_name,
                             launcher=lambda: self._launcher, clock=self.clock, registry=registry)
        )  # fmt: skip
        tagging = NodeClaimTagging(self.clients, self.settings.cluster_name, state=self.state,
                                   client=self.client, clock=self.clock)  # fmt: skip
        components.append(tagging_controller(tagging, metrics=self.controller_metrics))
        if self.settings.interruption_queue:
            reader = InterruptionController(
                self.clients,
                self.settings.interruption_queue,
                state=self.state,
                client=self.client,
                unavailable=self.unavailable,
                recorder=recorder,
                metrics=interruption_metrics,
                clock=self.clock,
                karpenter_metrics=karpenter,
                reservation_unavailable=lambda rid: self.reservations.exhausted([rid]),
            )
            components.append(interruption_controller(reader, metrics=self.controller_metrics))
        return components

    async def aclose(self) -> None:
        await self.clients.aclose()
