"""`InstanceStatusController`: EC2's own health checks, polled once a minute.

It runs as a controller (`instance_status_controller`): a `karpy.reconcile.PollingSource`
asks DescribeInstanceStatus (`InstanceStatusController.unhealthy`) a minute after the
last answer was handled, and queues each unhealthy instance; each is a reconcile
(`InstanceStatusController.reconcile`), ten at a time. A failed poll is retried a minute
later, as is an instance whose action failed.

Not every failing instance produces an EventBridge event: an instance whose status check
(its OS stopped answering) or system status check (the host under it failed) fails
simply stays broken. So, queue or no queue, karpy asks DescribeInstanceStatus every
minute, as Karpenter does, with three filter sets ORed by hand (the API ANDs filters):
instance status impaired, system status impaired, and a scheduled event of the codes
that take the instance away (instance-reboot, system-reboot, system-maintenance,
instance-retirement, instance-stop). EBS status checks are ignored: a failed volume may
be a pod's, not the node's.

Per instance it keeps the failed details: a status check that has failed for at least
two minutes (`UNHEALTHY_THRESHOLD`, so a blip does not cost a node) and any scheduled
event of those codes that is not completed or canceled. Each category becomes a message
for `actions.InterruptionActions`: ``instance_status`` and ``system_status`` terminate
the NodeClaim without a graceful drain (the instance is broken already),
``event_status`` deletes it with the ordinary drain. Instances with no NodeClaim are
ignored. ``karpenter_interruption_instance_status_unhealthy_total{category}`` counts each
unhealthy instance and category once while it stays unhealthy (again if it recovers and
fails anew).

Filters are also applied here, on the answer: the server-side filters only narrow what
is fetched.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import attrs
from botocore.exceptions import ClientError

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.interruption.actions import LISTED_FIRST, InterruptionActions
from karpy.cloud.aws.interruption.messages import Interruption, MessageKind
from karpy.kube.backoff import Backoff
from karpy.log import describe_error, get_logger
from karpy.reconcile import DONE, Controller, PollingSource

if TYPE_CHECKING:
    from collections.abc import Iterable

    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.interruption.metrics import InterruptionMetrics
    from karpy.kube.client import KubeClient
    from karpy.kube.events import EventRecorder
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.observability.karpenter_metrics import KarpenterMetrics
    from karpy.reconcile import Result
    from karpy.state.cluster import ClusterState, StateChange
    from karpy.state.snapshot import StateSnapshot

__all__ = [
    "InstanceStatusController",
    "UnhealthyInstance",
    "instance_status_controller",
    "unhealthy_instances",
]

log = get_logger("controller.interruption.instancestatus")

INTERVAL: Final = 60.0  # seconds between polls
UNHEALTHY_THRESHOLD: Final = 120.0  # seconds a status check must have failed
PARALLELISM: Final = 10

INSTANCE_STATUS: Final = "InstanceStatus"
SYSTEM_STATUS: Final = "SystemStatus"
EVENT_STATUS: Final = "EventStatus"
# In this order: an instance both broken and scheduled for maintenance is terminated
# forcefully, not drained first.
CATEGORY_KINDS: Final = {
    INSTANCE_STATUS: MessageKind.INSTANCE_STATUS,
    SYSTEM_STATUS: MessageKind.SYSTEM_STATUS,
    EVENT_STATUS: MessageKind.EVENT_STATUS,
}
EVENT_CODES: Final = (
    "instance-reboot", "system-reboot", "system-maintenance", "instance-retirement",
    "instance-stop",
)  # fmt: skip
_FILTER_SETS: Final = (
    [{"Name": "instance-status.status", "Values": ["impaired"]}],
    [{"Name": "system-status.status", "Values": ["impaired"]}],
    [{"Name": "event.code", "Values": list(EVENT_CODES)}],
)
_FINISHED_EVENT_PREFIXES: Final = ("[Completed]", "[Canceled]")


@attrs.frozen(slots=True)
class UnhealthyInstance:
    """An instance with failed checks: when each failed category first failed. The
    instance status controller's reconcile key."""

    instance_id: str
    failed_since: tuple[tuple[str, datetime], ...]  # (category, since), CATEGORY_KINDS order

    def __str__(self) -> str:
        return self.instance_id


async def unhealthy_instances(
    ec2: Any, now: datetime, threshold: float = UNHEALTHY_THRESHOLD
) -> list[UnhealthyInstance]:
    """The instances DescribeInstanceStatus reports unhealthy (see the module docstring)."""
    statuses: dict[str, dict[str, Any]] = {}
    for filters in _FILTER_SETS:
        async for page in ec2.get_paginator("describe_instance_status").paginate(Filters=filters):
            for status in page.get("InstanceStatuses") or ():
                statuses.setdefault(str(status["InstanceId"]), status)
    found = []
    for instance_id, status in statuses.items():
        failed = _failed_categories(status, now, threshold)
        if failed:
            found.append(UnhealthyInstance(instance_id, failed))
    return found


def _failed_categories(
    status: dict[str, Any], now: datetime, threshold: float
) -> tuple[tuple[str, datetime], ...]:
    failed: dict[str, datetime] = {}
    for category in (INSTANCE_STATUS, SYSTEM_STATUS):
        for detail in (status.get(category) or {}).get("Details") or ():
            if detail.get("Status") != "failed":
                continue
            since = _aware(detail.get("ImpairedSince")) or now
            if (now - since).total_seconds() >= threshold:
                failed[category] = min(since, failed.get(category, since))
    for event in status.get("Events") or ():
        description = str(event.get("Description") or "")
        if event.get("Code") in EVENT_CODES and not description.startswith(
            _FINISHED_EVENT_PREFIXES
        ):
            failed[EVENT_STATUS] = now  # maintenance ahead: vacate now, whatever its date
    return tuple((c, failed[c]) for c in CATEGORY_KINDS if c in failed)


def _aware(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


class InstanceStatusController:
    """The reconciler of one unhealthy instance (see the module docstring)."""

    name = "interruption.instancestatus"
    watches: frozenset[str] = frozenset()  # its work comes from the poll alone

    def __init__(
        self,
        clients: AWSClients,
        *,
        state: ClusterState,
        client: KubeClient,
        recorder: EventRecorder | None,
        metrics: InterruptionMetrics | None,
        clock: Clock = SYSTEM_CLOCK,
        interval: float = INTERVAL,
        threshold: float = UNHEALTHY_THRESHOLD,
        karpenter_metrics: KarpenterMetrics | None = None,
    ) -> None:
        self.clients = clients
        self.state = state
        self.metrics = metrics
        self.clock = clock
        self.interval = interval
        self.threshold = threshold
        self.actions = InterruptionActions(
            client, None, recorder,
            karpenter_metrics=karpenter_metrics, clock=clock,
        )  # fmt: skip
        self._seen: set[tuple[str, str]] = set()  # (instance, category) counted already
        self._current: set[tuple[str, str]] = set()  # ... and found again since the last poll
        self._denied_logged = False

    def keys_for(self, change: StateChange[Any]) -> Iterable[UnhealthyInstance]:
        return ()

    def all_keys(self, snapshot: StateSnapshot) -> Iterable[UnhealthyInstance]:
        return ()

    async def unhealthy(self) -> list[UnhealthyInstance]:
        """One poll (the polling source's): the instances DescribeInstanceStatus reports
        unhealthy. A poll the IAM policy does not allow is reported once and answers
        nothing; other errors raise (the source retries)."""
        self._seen &= self._current  # recovered instances count again if they fail anew
        self._current = set()
        try:
            return await unhealthy_instances(
                await self.clients.ec2(), self.clock.now(), self.threshold
            )
        except ClientError as exc:
            if not _denied(exc):
                raise
            if not self._denied_logged:
                log.error("ec2:DescribeInstanceStatus is not allowed; add it to the "
                          "controller's IAM policy to act on failed status checks",
                          error=describe_error(exc))  # fmt: skip
                self._denied_logged = True
            return []

    async def reconcile(self, key: UnhealthyInstance) -> Result:
        """Act on each failed category of one instance karpy manages."""
        snapshot = self.state.snapshot()
        for category, since in key.failed_since:
            message = Interruption(CATEGORY_KINDS[category], (key.instance_id,), time=since)
            handled = await self.actions.handle(message, snapshot)
            if handled.nodeclaims:
                self._count(key.instance_id, category)
        return DONE

    def _count(self, instance_id: str, category: str) -> None:
        key = (instance_id, category)
        self._current.add(key)
        if key in self._seen:
            return
        self._seen.add(key)
        log.info("detected unhealthy instance owned by cluster", instance=instance_id,
                 category=category)  # fmt: skip
        if self.metrics is not None:
            self.metrics.instance_status_unhealthy.labels(category).inc()


def _denied(exc: ClientError) -> bool:
    code = (exc.response.get("Error") or {}).get("Code", "")
    return code in {"UnauthorizedOperation", "AccessDenied", "AccessDeniedException"}


def instance_status_controller(
    poller: InstanceStatusController, *, metrics: ControllerMetrics | None = None
) -> Controller[UnhealthyInstance]:
    """``poller`` run as a controller: polled every ``interval`` seconds once the last
    answer was handled, ``PARALLELISM`` instances at a time, started once NodeClaims and
    Nodes are listed. A failed poll, and an instance whose action failed, are retried
    after ``interval`` too."""
    interval = poller.interval
    source = PollingSource("describe-instance-status", poller.unhealthy, interval=interval,
                           backoff=Backoff(interval, interval, jitter=0.0, clock=poller.clock),
                           clock=poller.clock)  # fmt: skip
    return Controller(poller, poller.state, workers=PARALLELISM, resync=None,
                      sources=[source], synced_kinds=LISTED_FIRST, clock=poller.clock,
                      metrics=metrics, base_delay=interval, max_delay=interval)  # fmt: skip
