"""`InstanceLauncher`: launch, find and terminate the EC2 instance behind a NodeClaim.

``create`` runs Karpenter's instance provider flow:

1. **Find first.** An instance tagged with the NodeClaim's name (pending or running) is
   returned as it is, so a retried or restarted launch never doubles capacity.
2. **Choose.** `karpy.cloud.aws.launch.selection` narrows the instance types the
   NodePool offers to those the NodeClaim may use, picks the capacity type (reserved,
   then spot, then on-demand) and keeps the 60 cheapest.
3. **Template.** The chosen types are grouped by the AMI that serves them (the first of
   ``status.amis`` whose requirements they meet), by their kubelet values (max pods,
   reserved resources) and, for reserved launches, by capacity reservation; each group
   gets one launch template (`karpy.cloud.aws.launch.templates`) with its user data.
4. **Fleet.** One instant CreateFleet with every group's overrides; EC2 picks the
   offering. Offerings EC2 reports out of capacity are marked in the
   `UnavailableOfferings` cache whatever the outcome; no instance at all is
   `InsufficientCapacity` (or `CreateError` for other failures). The request carries a
   ``ClientToken`` of the NodeClaim's UID and attempt (`karpy.cloud.aws.launch.attempts`):
   when its answer was lost, the next ``create`` resends it unchanged and EC2 answers the
   first launch again, covering the moment the tag lookup of step 1 does not yet see it.

The returned `Instance` carries the labels the node will have that the launch decided
(the type's single-valued labels, zone and zone ID, capacity type, reservation) and the
type's capacity and allocatable.

Concurrency: at most ``max_concurrent_fleets`` CreateFleet calls are in flight. Unlike
Karpenter, karpy does not batch the CreateFleet calls of several NodeClaims into one.
"""

from __future__ import annotations

import asyncio
import base64
from typing import TYPE_CHECKING, Any, Final

import attrs
from botocore.exceptions import ClientError

from karpy.apis.labels import (
    CAPACITY_TYPE_RESERVED,
    LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE,
    LABEL_AWS_CAPACITY_RESERVATION_TYPE,
    LABEL_AWS_ZONE_ID,
    LABEL_NODEPOOL,
)
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.amis import ami_for
from karpy.cloud.aws.launch import fleet, instances
from karpy.cloud.aws.launch.attempts import LaunchAttempts, PendingLaunch
from karpy.cloud.aws.launch.kubelet import KubeletValues, kubelet_config, kubelet_values
from karpy.cloud.aws.launch.nodefacts import (
    instance_from_launch,
    node_labels,
    registration_taints,
    reservation_labels,
)
from karpy.cloud.aws.launch.selection import Candidate, select
from karpy.cloud.aws.launch.tags import (
    TAG_NODECLAIM,
    cluster_tag_key,
    instance_tags,
    nodeclass_tags,
    tag_filters,
)
from karpy.cloud.aws.launch.templates import (
    LaunchTemplates,
    enclaves_wanted,
    launch_template_data,
    launch_template_name,
)
from karpy.cloud.aws.launch.userdata import BootstrapOptions, render_user_data
from karpy.cloud.errors import CreateError, InsufficientCapacity, NodeClassNotReady
from karpy.log import get_logger, obj_ref
from karpy.scheduling.requirements import Requirement, Requirements

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.nodeclaim import NodeClaim
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.launch.cluster import ClusterInfo
    from karpy.cloud.aws.reservationcounts import ReservationCounts
    from karpy.cloud.provider import Instance
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.scheduling.instancetypes import InstanceType, Offering

__all__ = ["InstanceLauncher", "node_labels", "registration_taints"]

log = get_logger("aws.launch")

MAX_CONCURRENT_FLEETS: Final = 16
_TEMPLATE_NOT_FOUND: Final = frozenset(
    {"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound"}
)
_IDEMPOTENT_MISMATCH: Final = "IdempotentParameterMismatch"
# Answers that say nothing of whether the request ran: its token is kept for the retry.
_THROTTLED: Final = frozenset({"RequestLimitExceeded", "Throttling", "ThrottlingException",
                               "RequestThrottled"})  # fmt: skip
_RESERVATION_LABELS: Final = frozenset({LABEL_AWS_CAPACITY_RESERVATION_ID,
    LABEL_AWS_CAPACITY_RESERVATION_TYPE, LABEL_AWS_CAPACITY_RESERVATION_INTERRUPTIBLE})  # fmt: skip

GroupKey = tuple[str, KubeletValues, str]  # (AMI, kubelet values, reservation id)


def nodeclaim_requirements(nodeclaim: NodeClaim) -> Requirements:
    return Requirements(
        Requirement.new(r.key, r.operator, r.values, min_values=r.min_values)
        for r in nodeclaim.spec.requirements
    )


def _check_ready(nodeclass: EC2NodeClass) -> None:
    status = nodeclass.status
    missing = [name for name, present in (
        ("subnets", status.subnets), ("security groups", status.security_groups),
        ("AMIs", status.amis), ("instance profile", status.instance_profile),
    ) if not present]  # fmt: skip
    if missing:
        raise NodeClassNotReady(
            f'EC2NodeClass "{nodeclass.name}" has no resolved {", ".join(missing)}'
        )


class _TemplatesMissing(CreateError):
    """CreateFleet did not find a launch template (deleted since it was last seen)."""


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "")) or "LaunchFailed"


def _unanswered(exc: ClientError) -> bool:
    """Whether EC2 may have run the request despite the error (5xx, throttling)."""
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    return int(status) >= 500 or _code(exc) in _THROTTLED


class InstanceLauncher:
    """See the module docstring. ``kubelet_for`` overrides how a type's kubelet values are
    found (default `karpy.cloud.aws.launch.kubelet.kubelet_values`)."""

    def __init__(
        self,
        clients: AWSClients,
        cluster: ClusterInfo,
        *,
        unavailable: UnavailableOfferings,
        clock: Clock = SYSTEM_CLOCK,
        max_concurrent_fleets: int = MAX_CONCURRENT_FLEETS,
        kubelet_for: Callable[[InstanceType, EC2NodeClass], KubeletValues] = kubelet_values,
        reservations: ReservationCounts | None = None,
    ) -> None:
        self.clients = clients
        self.reservations = reservations
        self.cluster = cluster
        self.unavailable = unavailable
        self.clock = clock
        self.kubelet_for = kubelet_for
        self.templates = LaunchTemplates(clients, clock=clock)
        self.attempts = LaunchAttempts(clock=clock)
        self._fleets = asyncio.Semaphore(max_concurrent_fleets)

    # -- create ------------------------------------------------------------------------

    async def create(
        self, nodeclaim: NodeClaim, nodeclass: EC2NodeClass, instance_types: Sequence[InstanceType]
    ) -> Instance:
        by_name = {it.name: it for it in instance_types}
        existing = await self.find(nodeclaim)
        if existing is not None:
            return self._described(existing, by_name.get(existing.instance_type), nodeclass)
        pending = self.attempts.pending(nodeclaim)
        if pending is not None:
            return await self._resend(nodeclaim, nodeclass, pending, by_name)
        _check_ready(nodeclass)
        requirements = nodeclaim_requirements(nodeclaim)
        selection = select(
            instance_types,
            requirements,
            nodeclaim.spec.resources.requests,
            self.unavailable.current(),
        )
        if not selection.candidates:
            raise InsufficientCapacity(
                f"no offering of the {len(instance_types)} instance types is launchable for "
                f"NodeClaim {nodeclaim.name} (incompatible, unavailable or recently out of "
                "capacity)",
                selection.known_unavailable,
            )
        capacity_type = selection.capacity_type
        groups = self._groups(selection.candidates, nodeclass, capacity_type)
        if not groups:
            raise CreateError(
                f"no AMI of EC2NodeClass {nodeclass.name} serves the instance types the "
                f"NodeClaim {nodeclaim.name} may use",
                "AMINotFound",
            )
        for attempt in range(2):
            configs = await self._template_configs(groups, nodeclaim, nodeclass, capacity_type)
            try:
                launch = await self._launch(nodeclaim, nodeclass, capacity_type, configs)
                break
            except _TemplatesMissing as missing:
                # Deleted behind our back: forget them and let the next round recreate them.
                for config in configs:
                    self.templates.forget(config.name)
                if attempt:
                    raise CreateError(str(missing), missing.reason) from None
        it = by_name[launch.instance_type]
        offering = self._offering(it, launch.zone, capacity_type, groups)
        log.info("launched instance", **obj_ref("NodeClaim", nodeclaim.name),
                 instance=launch.instance_id, instanceType=it.name, zone=launch.zone,
                 capacityType=capacity_type)  # fmt: skip
        return self._launched(
            nodeclaim, nodeclass, launch, it, capacity_type=capacity_type, offering=offering
        )

    async def _resend(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        pending: PendingLaunch,
        by_name: dict[str, InstanceType],
    ) -> Instance:
        """Send ``pending`` again, unchanged: its answer was lost (or its instance not yet
        recorded), and EC2 answers a repeated token with the first launch."""
        log.info("resending launch", **obj_ref("NodeClaim", nodeclaim.name),
                 clientToken=pending.token)  # fmt: skip
        try:
            launch = await self._send(nodeclaim, pending)
        except _TemplatesMissing as missing:
            for name in pending.templates:
                self.templates.forget(name)
            raise CreateError(str(missing), missing.reason) from None
        it = by_name.get(launch.instance_type)
        offering = None
        if it is not None:
            offering = next((o for o in it.offerings if o.zone == launch.zone
                             and o.capacity_type == pending.capacity_type), None)  # fmt: skip
        log.info("launched instance", **obj_ref("NodeClaim", nodeclaim.name),
                 instance=launch.instance_id, instanceType=launch.instance_type,
                 zone=launch.zone, capacityType=pending.capacity_type)  # fmt: skip
        record = instance_from_launch(
            launch, nodeclaim, pending.capacity_type, created=self.clock.now()
        )
        return self._described(record, it, nodeclass, offering)

    def _groups(
        self, candidates: Sequence[Candidate], nodeclass: EC2NodeClass, capacity_type: str
    ) -> dict[GroupKey, list[Candidate]]:
        groups: dict[GroupKey, list[Candidate]] = {}
        for candidate in candidates:
            found = ami_for(candidate.instance_type.requirements, nodeclass.status.amis)
            ami = found.id if found is not None else None
            if ami is None:
                continue
            values = self.kubelet_for(candidate.instance_type, nodeclass)
            reservations = [""]
            if capacity_type == CAPACITY_TYPE_RESERVED:
                reservations = sorted({o.reservation_id for o in candidate.offerings})
            for reservation in reservations:
                groups.setdefault((ami, values, reservation), []).append(candidate)
        return groups

    async def _template_configs(
        self,
        groups: dict[GroupKey, list[Candidate]],
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        capacity_type: str,
    ) -> list[fleet.TemplateConfig]:
        subnets = fleet.zonal_subnets(nodeclass)
        nodepool = nodeclaim.metadata.labels.get(LABEL_NODEPOOL, "")
        tags = nodeclass_tags(nodeclass, self.cluster.name, nodepool)
        labels = node_labels(nodeclaim, nodeclass, capacity_type)
        taints = registration_taints(nodeclaim)
        ranked: list[tuple[float, fleet.TemplateConfig]] = []
        for (ami, values, reservation), members in groups.items():
            priced = fleet.overrides(members, subnets, ami, reservation)
            if not priced:
                continue
            priced.sort(key=lambda p: p[0])
            opts = BootstrapOptions(
                cluster=self.cluster,
                kubelet=kubelet_config(nodeclass, values, self.cluster.dns_ip),
                labels=labels,
                taints=taints,
                custom_user_data=nodeclass.spec.user_data,
                instance_store_policy=nodeclass.spec.instance_store_policy,
            )
            try:
                user_data = render_user_data(nodeclass.ami_family, opts)
            except ValueError as exc:
                raise CreateError(f"rendering user data: {exc}", "InvalidUserData") from None
            data = launch_template_data(
                nodeclass,
                image_id=ami,
                user_data=base64.b64encode(user_data.encode()).decode(),
                capacity_type=capacity_type,
                tags=tags,
                reservation_id=reservation,
                enclaves=enclaves_wanted(nodeclass, nodeclaim.spec.resources.requests),
            )
            name = launch_template_name(data, tags)
            try:
                await self.templates.ensure(name, data, tags)
            except ClientError as exc:
                raise CreateError(f"creating launch template {name}: {exc}", _code(exc)) from None
            overrides = tuple(o for _, o in priced)
            ranked.append((priced[0][0], fleet.TemplateConfig(name, overrides)))
        if not ranked:
            raise CreateError(
                f"no subnet of EC2NodeClass {nodeclass.name} is in a zone the NodeClaim "
                f"{nodeclaim.name} may use",
                "SubnetNotFound",
            )
        ranked.sort(key=lambda r: r[0])
        return [config for _, config in ranked]

    async def _launch(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        capacity_type: str,
        configs: list[fleet.TemplateConfig],
    ) -> fleet.FleetLaunch:
        capacity_block = False
        if capacity_type == CAPACITY_TYPE_RESERVED:
            kinds = {r.reservation_type for r in nodeclass.status.capacity_reservations}
            capacity_block = kinds == {"capacity-block"}
        request = fleet.create_fleet_request(
            capacity_type,
            configs,
            instance_tags(nodeclass, nodeclaim, self.cluster.name),
            capacity_block=capacity_block,
            context=nodeclass.spec.context,
        )
        pending = self.attempts.begin(
            nodeclaim,
            request,
            capacity_type=capacity_type,
            templates=tuple(config.name for config in configs),
        )
        return await self._send(nodeclaim, pending)

    async def _send(self, nodeclaim: NodeClaim, pending: PendingLaunch) -> fleet.FleetLaunch:
        """Send ``pending``'s CreateFleet and read its answer, telling `attempts` whether the
        next launch may resend it (module docstring of `karpy.cloud.aws.launch.attempts`).
        Any error other than an EC2 answer leaves it pending."""
        capacity_type = pending.capacity_type
        ec2 = await self.clients.ec2()
        try:
            async with self._fleets:
                response: dict[str, Any] = await ec2.create_fleet(**pending.request)
        except ClientError as exc:
            code = _code(exc)
            if code == _IDEMPOTENT_MISMATCH:
                advanced = self.attempts.mismatched(nodeclaim)
                log.warning("client token used by an earlier launch",
                            **obj_ref("NodeClaim", nodeclaim.name), clientToken=pending.token,
                            newToken=advanced)  # fmt: skip
            elif not _unanswered(exc):
                self.attempts.failed(nodeclaim)
            if code in _TEMPLATE_NOT_FOUND:
                raise _TemplatesMissing(f"creating fleet: {exc}", code) from None
            raise CreateError(f"creating fleet: {exc}", code) from None
        iced = fleet.capacity_errors(response, capacity_type)
        if iced:
            self.unavailable.mark(iced)
            if capacity_type == CAPACITY_TYPE_RESERVED and self.reservations is not None:
                self.reservations.exhausted_offerings((t, z) for t, z, _ in iced)
            log.info("offerings out of capacity", nodeclaim=nodeclaim.name,
                     offerings=[f"{t}/{z}/{c}" for t, z, c in iced])  # fmt: skip
        try:
            launch = fleet.read_fleet_response(response, capacity_type)
        except (CreateError, InsufficientCapacity):  # nothing launched
            self.attempts.failed(nodeclaim)
            raise
        self.attempts.launched(nodeclaim)
        return launch

    def _offering(
        self,
        it: InstanceType,
        zone: str,
        capacity_type: str,
        groups: dict[GroupKey, list[Candidate]],
    ) -> Offering | None:
        for members in groups.values():
            for candidate in members:
                if candidate.instance_type is it:
                    for offering in candidate.offerings:
                        if offering.zone == zone and offering.capacity_type == capacity_type:
                            return offering
        return None

    def _launched(
        self,
        nodeclaim: NodeClaim,
        nodeclass: EC2NodeClass,
        launch: fleet.FleetLaunch,
        it: InstanceType,
        *,
        capacity_type: str,
        offering: Offering | None,
    ) -> Instance:
        record = instance_from_launch(launch, nodeclaim, capacity_type, created=self.clock.now())
        return self._described(record, it, nodeclass, offering)

    def _described(
        self,
        record: Instance,
        it: InstanceType | None,
        nodeclass: EC2NodeClass,
        offering: Offering | None = None,
    ) -> Instance:
        """``record`` with what the instance type and node class tell about its node."""
        labels = dict(record.labels)
        capacity: dict[str, int] = {}
        allocatable: dict[str, int] = {}
        if it is not None:
            type_labels = it.requirements.labels(exclude=_RESERVATION_LABELS)
            labels = {**type_labels, **labels}
            capacity = {k: v for k, v in it.capacity.items() if v}
            allocatable = {k: v for k, v in it.allocatable.items() if v}
        zone_id = next((s.zone_id for s in nodeclass.status.subnets
                        if s.zone == record.zone and s.zone_id), None)  # fmt: skip
        if zone_id:
            labels[LABEL_AWS_ZONE_ID] = zone_id
        if record.capacity_type == CAPACITY_TYPE_RESERVED:
            reservation_id = (offering.reservation_id if offering else "") or labels.get(
                LABEL_AWS_CAPACITY_RESERVATION_ID, ""
            )
            labels.update(reservation_labels(nodeclass, reservation_id))
        return attrs.evolve(record, labels=labels, capacity=capacity, allocatable=allocatable)

    # -- find, get, list, terminate ----------------------------------------------------

    async def find(self, nodeclaim: NodeClaim) -> Instance | None:
        """The pending or running instance already launched for ``nodeclaim``, if any."""
        filters = tag_filters(
            {TAG_NODECLAIM: nodeclaim.name, cluster_tag_key(self.cluster.name): "owned"}
        )
        state = {"Name": "instance-state-name", "Values": ["pending", "running"]}
        found = await instances.describe(self.clients, Filters=[*filters, state])
        if not found:
            return None
        newest = max(found, key=lambda raw: str(raw.get("LaunchTime", "")))
        log.info("found launched instance", nodeclaim=nodeclaim.name,
                 instance=newest.get("InstanceId"))  # fmt: skip
        return instances.instance_record(newest)

    async def get(self, instance_id: str) -> Instance:
        """The instance; `NodeClaimNotFound` when it is gone or terminated (a shutting-down
        one is returned with ``terminating``)."""
        return await instances.get_instance(self.clients, instance_id)

    async def list(self) -> list[Instance]:
        """Every instance of the cluster that is not terminated."""
        return await instances.list_instances(self.clients, self.cluster.name)

    async def reboot(self, instance_id: str) -> None:
        """Reboot the instance (node repair); `NodeClaimNotFound` when it is gone."""
        await instances.reboot_instance(self.clients, instance_id, cluster_name=self.cluster.name)
        log.info("rebooting instance", instance=instance_id)

    async def terminate(self, instance_id: str) -> None:
        """Begin terminating the instance; `NodeClaimNotFound` when it is already gone."""
        await instances.terminate_instance(
            self.clients, instance_id, cluster_name=self.cluster.name
        )
        log.info("terminating instance", instance=instance_id)
