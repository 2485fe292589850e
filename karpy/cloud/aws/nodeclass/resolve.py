"""Resolving an EC2NodeClass against the AWS account: what its selectors match, as a new
status with one condition per step.

`NodeClassResolver.resolve` is the whole job of the node class controller short of
writing: it is a plain coroutine over an `AWSClients`, so the ``karpy instance-types``
CLI resolves a class read from a file the same way (`resolve`, with
``manage_instance_profile=False`` so that looking never creates IAM resources).

The steps are independent and run concurrently: AMIs, capacity reservations (only with
the ReservedCapacity gate), placement group, subnets, security groups, instance profile.
Validation comes last, because it judges the others: the class's tags must not claim
keys karpy sets itself (``nodeclass.validate_runtime()``), and it is False while AMIs,
instance profile, security groups or subnets are False (Unknown while one is Unknown),
as Karpenter's is. Karpenter's DryRun authorization calls (CreateFleet, RunInstances,
CreateLaunchTemplate) are not made: they need a rendered launch template, and moto
answers DryRun for few calls; with or without ``DISABLE_DRY_RUN``, validation passes
once its dependencies do.

A step that fails with an AWS error (throttling beyond botocore's retries, a network
fault) leaves its part of the status and its condition as they were — a class that was
Ready stays Ready through a passing AWS hiccup — and is reported in
`Resolution.errors`; the controller then retries with backoff. A step that succeeds but
matches nothing is not an error: its condition turns False with a message that shows
the selector.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

import attrs

from karpy.apis.conditions import ConditionStatus, ConditionUpdate
from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.nodeclass.amis import AMIResolver
from karpy.cloud.aws.nodeclass.conditions import (
    AMIS_READY,
    CAPACITY_RESERVATIONS_READY,
    INSTANCE_PROFILE_READY,
    PLACEMENT_GROUP_READY,
    SECURITY_GROUPS_READY,
    SUBNETS_READY,
    VALIDATION_SUCCEEDED,
    Unresolved,
    apply_outcomes,
    nodeclass_conditions,
)
from karpy.cloud.aws.nodeclass.instanceprofile import InstanceProfiles
from karpy.cloud.aws.nodeclass.placementgroup import check_placement_group
from karpy.cloud.aws.nodeclass.reservations import (
    find_reservations,
    reservation_reads,
    reservation_statuses,
    reservations_requeue,
)
from karpy.cloud.aws.nodeclass.securitygroups import (
    find_security_groups,
    security_group_statuses,
)
from karpy.cloud.aws.nodeclass.selectors import show_terms
from karpy.cloud.aws.nodeclass.ssm import ParameterCache
from karpy.cloud.aws.nodeclass.subnets import find_subnets, subnet_statuses
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from karpy.apis.ec2nodeclass import EC2NodeClass
    from karpy.apis.ec2nodeclass_status import EC2NodeClassStatus
    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.reservationcounts import ReservationCounts

__all__ = ["NodeClassResolver", "Resolution", "resolve"]

log = get_logger("aws.nodeclass.resolve")

NOT_FOUND_RETRY: Final = 60.0  # seconds: a selector that matched nothing is tried again
VALIDATION_REFRESH: Final = 600.0
_REQUIRED: Final = (AMIS_READY, INSTANCE_PROFILE_READY, SECURITY_GROUPS_READY, SUBNETS_READY)
_AWAITING: Final = "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"


@attrs.frozen(slots=True)
class Resolution:
    """A node class's new status (resolved fields and conditions), each step's
    `ConditionUpdate`, the steps that failed (condition type → error text) and when to look
    again (seconds)."""

    status: EC2NodeClassStatus
    outcomes: tuple[ConditionUpdate, ...]
    errors: tuple[tuple[str, str], ...]
    requeue_after: float

    @property
    def ready(self) -> bool:
        ready = self.status.condition("Ready")
        return ready is not None and ready.is_true

    def outcome(self, type_: str) -> ConditionUpdate | None:
        return next((o for o in self.outcomes if o.type == type_), None)


@attrs.frozen(slots=True)
class _Step:
    outcome: ConditionUpdate
    fields: dict[str, Any] = attrs.field(factory=dict)
    requeue_after: float | None = None


class NodeClassResolver:
    """Resolves node classes for one cluster and region, keeping SSM, DescribeImages and
    instance-profile state across calls (one per process). ``manage_instance_profile``
    False never creates a profile for ``spec.role``; ``verify_instance_profile`` False
    trusts a ``spec.instanceProfile`` without asking IAM (``ISOLATED_VPC``)."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        cluster_name: str,
        region: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
        reserved_capacity: bool = True,
        manage_instance_profile: bool = True,
        verify_instance_profile: bool = True,
        ami_refresh: float = 60.0,
        subnet_refresh: float = 60.0,
        security_group_refresh: float = 60.0,
        profiles: InstanceProfiles | None = None,
        amis: AMIResolver | None = None,
        reservation_counts: ReservationCounts | None = None,
    ) -> None:
        self.clients = clients
        self.reservation_counts = reservation_counts
        self.cluster_name = cluster_name
        self.region = region or clients.region
        self.clock = clock
        self.reserved_capacity = reserved_capacity
        self.manage_instance_profile = manage_instance_profile
        self.verify_instance_profile = verify_instance_profile
        self.ami_refresh = ami_refresh
        self.subnet_refresh = subnet_refresh
        self.security_group_refresh = security_group_refresh
        self.conditions = nodeclass_conditions(reserved_capacity=reserved_capacity)
        self.profiles = profiles or InstanceProfiles(
            clients, cluster_name=cluster_name, region=self.region, clock=clock
        )
        self.amis = amis or AMIResolver(clients, ParameterCache(clients, clock=clock), clock=clock)

    async def resolve(self, nodeclass: EC2NodeClass, k8s_version: str) -> Resolution:
        """Resolve every step; see the module docstring."""
        steps: list[tuple[str, Callable[[], Awaitable[_Step]]]] = [
            (AMIS_READY, lambda: self._amis(nodeclass, k8s_version)),
            (PLACEMENT_GROUP_READY, lambda: self._placement_group(nodeclass)),
            (SUBNETS_READY, lambda: self._subnets(nodeclass)),
            (SECURITY_GROUPS_READY, lambda: self._security_groups(nodeclass)),
            (INSTANCE_PROFILE_READY, lambda: self._instance_profile(nodeclass)),
        ]
        if self.reserved_capacity:
            steps.insert(1, (CAPACITY_RESERVATIONS_READY, lambda: self._reservations(nodeclass)))
        results = await asyncio.gather(*(run() for _, run in steps), return_exceptions=True)
        outcomes: list[ConditionUpdate] = []
        errors: list[tuple[str, str]] = []
        fields: dict[str, Any] = {}
        requeues: list[float] = []
        for (type_, _), result in zip(steps, results, strict=True):
            if isinstance(result, asyncio.CancelledError):
                raise result
            if isinstance(result, BaseException):
                errors.append((type_, describe_error(result)))
                log.warning("nodeclass step failed", step=type_, error=describe_error(result),
                            EC2NodeClass={"name": nodeclass.name})  # fmt: skip
                continue
            outcomes.append(result.outcome)
            fields.update(result.fields)
            if result.requeue_after is not None:
                requeues.append(result.requeue_after)
        validation = self._validation(nodeclass, outcomes, errors)
        outcomes.append(validation)
        requeues.append(VALIDATION_REFRESH)
        status = attrs.evolve(nodeclass.status, **fields)
        conditions = apply_outcomes(
            status.conditions, outcomes, generation=nodeclass.metadata.generation,
            now=self.clock.now(), types=self.conditions,
        )  # fmt: skip
        return Resolution(
            status=attrs.evolve(status, conditions=conditions),
            outcomes=tuple(outcomes),
            errors=tuple(errors),
            requeue_after=min(requeues),
        )

    # --- the steps ---------------------------------------------------------------------

    async def _amis(self, nodeclass: EC2NodeClass, k8s_version: str) -> _Step:
        try:
            amis = await self.amis.resolve(nodeclass, k8s_version)
        except Unresolved as exc:
            return _Step(ConditionUpdate.false(AMIS_READY, exc.reason, exc.message), {"amis": ()},
                         NOT_FOUND_RETRY)  # fmt: skip
        return _Step(ConditionUpdate.true(AMIS_READY), {"amis": amis}, self.ami_refresh)

    async def _reservations(self, nodeclass: EC2NodeClass) -> _Step:
        terms = nodeclass.spec.capacity_reservation_selector_terms
        now = self.clock.now()
        found = await find_reservations(await self.clients.ec2(), terms, now) if terms else []
        if self.reservation_counts is not None:
            self.reservation_counts.sync(reservation_reads(found), read_at=now)
        return _Step(
            ConditionUpdate.true(CAPACITY_RESERVATIONS_READY),
            {"capacity_reservations": reservation_statuses(found, now)},
            reservations_requeue(found, now),
        )

    async def _placement_group(self, nodeclass: EC2NodeClass) -> _Step:
        selector = nodeclass.spec.placement_group_selector
        ec2 = await self.clients.ec2() if selector is not None else None
        return _Step(await check_placement_group(ec2, selector))

    async def _subnets(self, nodeclass: EC2NodeClass) -> _Step:
        terms = nodeclass.spec.subnet_selector_terms
        found = await find_subnets(await self.clients.ec2(), terms)
        if not found:
            message = f"SubnetSelector did not match any Subnets: {show_terms(terms)}"
            return _Step(ConditionUpdate.false(SUBNETS_READY, "SubnetsNotFound", message),
                         {"subnets": ()}, NOT_FOUND_RETRY)  # fmt: skip
        return _Step(ConditionUpdate.true(SUBNETS_READY), {"subnets": subnet_statuses(found)},
                     self.subnet_refresh)  # fmt: skip

    async def _security_groups(self, nodeclass: EC2NodeClass) -> _Step:
        terms = nodeclass.spec.security_group_selector_terms
        found = await find_security_groups(await self.clients.ec2(), terms)
        if not found:
            message = (f"SecurityGroupSelector did not match any SecurityGroups: "
                       f"{show_terms(terms)}")  # fmt: skip
            not_found = ConditionUpdate.false(SECURITY_GROUPS_READY, "SecurityGroupsNotFound",
                                              message)  # fmt: skip
            return _Step(not_found, {"security_groups": ()}, NOT_FOUND_RETRY)
        return _Step(ConditionUpdate.true(SECURITY_GROUPS_READY),
                     {"security_groups": security_group_statuses(found)},
                     self.security_group_refresh)  # fmt: skip

    async def _instance_profile(self, nodeclass: EC2NodeClass) -> _Step:
        spec = nodeclass.spec
        try:
            if spec.instance_profile:
                if self.verify_instance_profile:
                    await self.profiles.check(spec.instance_profile)
                name = spec.instance_profile
            elif not self.manage_instance_profile:
                return _Step(ConditionUpdate.unknown(
                    INSTANCE_PROFILE_READY, "NotManaged",
                    f'the instance profile for role "{spec.role}" is managed by the controller',
                ))  # fmt: skip
            else:
                name = await self.profiles.ensure(nodeclass)
        except Unresolved as exc:
            return _Step(ConditionUpdate.false(INSTANCE_PROFILE_READY, exc.reason, exc.message))
        return _Step(ConditionUpdate.true(INSTANCE_PROFILE_READY), {"instance_profile": name})

    def _validation(
        self,
        nodeclass: EC2NodeClass,
        outcomes: list[ConditionUpdate],
        errors: list[tuple[str, str]],
    ) -> ConditionUpdate:
        problems = nodeclass.validate_runtime()
        if problems:
            kubelet = problems[0].path.startswith("spec.kubelet")
            reason = "KubeletValidationFailed" if kubelet else "TagValidationFailed"
            return ConditionUpdate.false(VALIDATION_SUCCEEDED, reason, problems[0].detail)
        statuses = {o.type: o.status for o in outcomes}
        for type_, _ in errors:  # a failed step keeps the verdict it had
            previous = nodeclass.status.condition(type_)
            statuses[type_] = previous.status if previous is not None else ConditionStatus.UNKNOWN
        required = [statuses.get(t, ConditionStatus.UNKNOWN) for t in _REQUIRED]
        if ConditionStatus.FALSE in required:
            return ConditionUpdate.false(VALIDATION_SUCCEEDED, "DependenciesNotReady", _AWAITING)
        if ConditionStatus.UNKNOWN in required:
            return ConditionUpdate.unknown(VALIDATION_SUCCEEDED, "DependenciesNotReady", _AWAITING)
        return ConditionUpdate.true(VALIDATION_SUCCEEDED)


async def resolve(
    nodeclass: EC2NodeClass,
    clients: AWSClients,
    *,
    cluster_name: str,
    k8s_version: str,
    reserved_capacity: bool = True,
    manage_instance_profile: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    reservation_counts: ReservationCounts | None = None,
) -> Resolution:
    """Resolve ``nodeclass`` once, without a cluster (the ``karpy instance-types`` CLI).
    By default the instance profile is only checked, never created."""
    resolver = NodeClassResolver(
        clients, cluster_name=cluster_name, clock=clock, reserved_capacity=reserved_capacity,
        manage_instance_profile=manage_instance_profile, reservation_counts=reservation_counts,
    )  # fmt: skip
    return await resolver.resolve(nodeclass, k8s_version)
