"""Launch template garbage collection: delete the cluster's karpy-made launch templates
that no launch has used for a while, so they do not pile up.

One template exists per distinct launch configuration (each combination of AMI, kubelet
values, capacity reservation, labels and taints, and node class settings:
`karpy.cloud.aws.launch.templates`), so every AMI release, kubelet change or new label
set adds templates, and only a deleted EC2NodeClass used to take its own away; EC2 allows
5,000 per region. Knowing which templates the current classes would still render means
rendering every class against every AMI and instance type's kubelet values, so karpy does
what Karpenter's launch template provider does instead: it keeps the templates it uses in
a cache with a one-minute TTL (filled at start with every template tagged for its cluster)
and deletes a template when its entry expires unused. karpy keeps a wider margin:

* **Only karpy's.** Candidates carry every ownership tag a launch writes on its templates
  (``kubernetes.io/cluster/<cluster>=owned``, ``eks:eks-cluster-name=<cluster>`` and the
  EC2NodeClass tag key) and karpy's ``karpenter.k8s.aws/`` name prefix. Another cluster's
  templates and templates made by hand or tagged only in part are never touched.
* **Never in use.** A template named by a launch in flight, or by a request that may still
  be resent (`LaunchAttempts.templates_in_use`), is kept however old.
* **Idle for `IDLE_AFTER`** (ten minutes) before it goes: idle since the last launch that
  used it, or, for a template this process never used (another replica's, or from before
  a restart), since this collector first saw it, so nothing goes in the first ten minutes
  of a process.

A template of an old AMI or of a kubelet configuration that no longer exists is never used
again and goes once idle. A template the current configuration still needs but that sat
idle goes too, and the next launch that needs it creates it again (one
DescribeLaunchTemplates and one CreateLaunchTemplate), as in Karpenter. Deleting the
template an instance was launched from does not affect the instance; a launch that races
a deletion finds its template missing in CreateFleet and recreates it
(`InstanceLauncher.create`). Each deletion is logged and counted.

Runs every `INTERVAL` (a minute, Karpenter's cache cleanup interval).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Final

from botocore.exceptions import ClientError
from prometheus_client import CollectorRegistry, Counter

from karpy.base.clock import SYSTEM_CLOCK
from karpy.cloud.aws.launch.tags import tags_of
from karpy.cloud.aws.launch.templates import is_owned_template, owned_template_filters
from karpy.cloud.aws.launch.waiting import unless_stopped
from karpy.log import describe_error, get_logger

if TYPE_CHECKING:
    import asyncio
    from collections.abc import Callable
    from datetime import datetime

    from karpy.base.clock import Clock
    from karpy.cloud.aws.clients import AWSClients
    from karpy.cloud.aws.launch.launcher import InstanceLauncher

__all__ = ["IDLE_AFTER", "INTERVAL", "LaunchTemplateGC"]

log = get_logger("aws.launchtemplates")

INTERVAL: Final = 60.0  # seconds between passes
IDLE_AFTER: Final = timedelta(minutes=10)
_NOT_FOUND: Final = frozenset(
    {"InvalidLaunchTemplateName.NotFoundException", "InvalidLaunchTemplateId.NotFound",
     "InvalidLaunchTemplateId.NotFoundException"}
)  # fmt: skip


class LaunchTemplateGC:
    """Deletes idle karpy launch templates of the cluster (module docstring).

    ``launcher`` returns the provider's `InstanceLauncher` once it exists (None before the
    first launch), whose templates' last uses and pending requests say what is in use."""

    name = "aws.launchtemplates.gc"

    def __init__(
        self,
        clients: AWSClients,
        cluster_name: str,
        *,
        launcher: Callable[[], InstanceLauncher | None],
        clock: Clock = SYSTEM_CLOCK,
        interval: float = INTERVAL,
        idle_after: timedelta = IDLE_AFTER,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self.launcher = launcher
        self.clock = clock
        self.interval = interval
        self.idle_after = idle_after
        self._first_seen: dict[str, datetime] = {}
        self.deleted = Counter(
            "karpy_aws_launch_templates_deleted_total",
            "Launch templates deleted by karpy's garbage collection after going unused.",
            registry=registry if registry is not None else CollectorRegistry(),
        )

    async def run(self, stop: asyncio.Event) -> None:
        if not self.cluster_name:
            log.warning("not collecting launch templates: no cluster name")
            return
        while not stop.is_set():
            try:
                await self.collect()
            except Exception as exc:  # the collector must outlive any AWS error
                log.error("failed collecting launch templates", error=describe_error(exc))
            await unless_stopped(self.clock.sleep(self.interval), stop)

    async def collect(self) -> list[str]:
        """One pass: delete the idle templates; their names."""
        listed = await self._owned_templates()
        now = self.clock.now()
        self._first_seen = {name: self._first_seen.get(name, now) for name in listed}
        launcher = self.launcher()
        # Requests pending when the pass starts; a launch begun during it has just used
        # its templates, which `_idle` reads afresh for each template.
        in_use = launcher.attempts.templates_in_use() if launcher is not None else set()
        deleted: list[str] = []
        for name, template_id in sorted(listed.items()):
            if name in in_use or not self._idle(name, self.clock.now()):
                continue
            launcher = self.launcher()
            if launcher is not None:
                launcher.templates.forget(name)
            if await self._delete(name, template_id):
                deleted.append(name)
            self._first_seen.pop(name, None)
        return deleted

    def _idle(self, name: str, now: datetime) -> bool:
        """Unused for `idle_after`: since this process's last launch with it, or, if it has
        none, since this collector first saw it."""
        launcher = self.launcher()
        used = launcher.templates.last_used(name) if launcher is not None else None
        last = used if used is not None else self._first_seen[name]
        return now - last >= self.idle_after

    async def _owned_templates(self) -> dict[str, str]:
        """Name -> id of every template `is_owned_template` accepts."""
        ec2 = await self.clients.ec2()
        out: dict[str, str] = {}
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "Filters": owned_template_filters(self.cluster_name),
                "MaxResults": 200,
            }
            if token:
                kwargs["NextToken"] = token
            page = await ec2.describe_launch_templates(**kwargs)
            for template in page.get("LaunchTemplates") or ():
                name = str(template.get("LaunchTemplateName", ""))
                if is_owned_template(name, tags_of(template.get("Tags")), self.cluster_name):
                    out[name] = str(template["LaunchTemplateId"])
            token = page.get("NextToken")
            if not token:
                return out

    async def _delete(self, name: str, template_id: str) -> bool:
        ec2 = await self.clients.ec2()
        try:
            await ec2.delete_launch_template(LaunchTemplateId=template_id)
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code in _NOT_FOUND:
                return False
            log.error("failed deleting launch template", launchTemplate=name, id=template_id,
                      error=describe_error(exc))  # fmt: skip
            return False
        self.deleted.inc()
        log.info("deleted unused launch template", launchTemplate=name, id=template_id,
                 idleAfter=str(self.idle_after))  # fmt: skip
        return True
