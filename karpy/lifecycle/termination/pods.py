"""What a drain makes of each pod on the node: wait for it, evict it, delete it, or
leave it alone. Pure functions of a pod record and the time, as Karpenter's
``pkg/utils/pod`` has them.

A drain *ignores* (never waits for, never evicts) a pod that

* tolerates ``karpenter.sh/disrupted:NoSchedule``: it asked to stay on draining nodes
  (most DaemonSets tolerate everything, which is why their pods usually stay);
* is a mirror pod (owned by its Node): the kubelet manages it, the API cannot remove it;
* is terminal (Succeeded or Failed): it holds nothing;
* has been terminating for more than a minute past its deletionTimestamp: the kubelet
  is not finishing it (its node is probably gone), and waiting would only leak the
  instance.

Every other pod is *waited for* until it is gone, in four groups taken one after the
other (`DrainGroup`): Kubernetes' graceful node shutdown order, so a node's logging,
networking and DNS pods outlive the workloads that need them. Within the group being
drained, a pod that is still active is evicted unless an active
``karpenter.sh/do-not-disrupt`` annotation protects it (`do_not_disrupt`); a protected or
already terminating pod is just waited for.

The node's deadline (`karpy.lifecycle.termination.deadline`) overrides all of that for a
pod once ``deadline - terminationGracePeriodSeconds`` has passed (`needs_force_delete`):
the pod is deleted at once with the time left as its grace, in whatever group it is, so
it can still shut down cleanly before the instance goes.
"""

from __future__ import annotations

import enum
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

import attrs

from karpy.apis.core import Taint
from karpy.apis.labels import TAINT_DISRUPTED
from karpy.durations import DurationError, parse_duration, to_timedelta

if TYPE_CHECKING:
    from karpy.state.records import PodInfo

__all__ = [
    "CRITICAL_PRIORITY_CLASSES",
    "DISRUPTED_TAINT",
    "STUCK_TERMINATING_AFTER",
    "DoNotDisrupt",
    "DrainGroup",
    "do_not_disrupt",
    "drain_group",
    "force_delete_grace",
    "is_drainable",
    "is_stuck_terminating",
    "is_waiting_eviction",
    "needs_force_delete",
    "tolerates_disrupted_taint",
]

CRITICAL_PRIORITY_CLASSES: Final = frozenset({"system-cluster-critical", "system-node-critical"})
STUCK_TERMINATING_AFTER: Final = timedelta(minutes=1)
DISRUPTED_TAINT: Final = Taint(key=TAINT_DISRUPTED, effect="NoSchedule")


class DrainGroup(enum.IntEnum):
    """The order pods leave a node in; a group starts only once every pod of the groups
    before it is gone."""

    NON_CRITICAL = 0
    NON_CRITICAL_DAEMON = 1
    CRITICAL = 2
    CRITICAL_DAEMON = 3


def drain_group(pod: PodInfo) -> DrainGroup:
    """Critical = priority class ``system-cluster-critical`` or ``system-node-critical``;
    daemon = owned by an ``apps/v1`` DaemonSet."""
    critical = pod.priority_class_name in CRITICAL_PRIORITY_CLASSES
    daemon = pod.pod.is_daemonset_pod
    if critical:
        return DrainGroup.CRITICAL_DAEMON if daemon else DrainGroup.CRITICAL
    return DrainGroup.NON_CRITICAL_DAEMON if daemon else DrainGroup.NON_CRITICAL


def tolerates_disrupted_taint(pod: PodInfo) -> bool:
    return any(t.tolerates(DISRUPTED_TAINT) for t in pod.pod.tolerations)


def is_stuck_terminating(pod: PodInfo, now: datetime) -> bool:
    """Terminating, and more than a minute past its deletionTimestamp (which is already
    the deletion time plus the pod's grace)."""
    deleted = pod.deletion_timestamp
    return deleted is not None and now - deleted > STUCK_TERMINATING_AFTER


def is_drainable(pod: PodInfo, now: datetime) -> bool:
    """Not tolerating the disrupted taint, not stuck terminating, not a mirror pod."""
    return (
        not tolerates_disrupted_taint(pod)
        and not is_stuck_terminating(pod, now)
        and not pod.pod.is_static_pod
    )


def is_waiting_eviction(pod: PodInfo, now: datetime) -> bool:
    """A pod the drain waits for: not terminal, and drainable."""
    return not pod.pod.is_terminal and is_drainable(pod, now)


@attrs.frozen(slots=True)
class DoNotDisrupt:
    """What a pod's ``karpenter.sh/do-not-disrupt`` annotation means now: ``active``
    protection, until ``until`` for a duration, or ``invalid`` (the reason the value was
    ignored)."""

    active: bool
    until: datetime | None = None
    invalid: str = ""


NOT_PROTECTED: Final = DoNotDisrupt(active=False)


def do_not_disrupt(pod: PodInfo, now: datetime) -> DoNotDisrupt:
    """``"true"`` protects for ever; a positive Go duration (``30m``) protects while the
    pod has run less than that since ``status.startTime`` (and while no start time is
    known); anything else is ignored, as Karpenter ignores it."""
    value = pod.do_not_disrupt
    if value is None:
        return NOT_PROTECTED
    if value == "true":
        return DoNotDisrupt(active=True)
    try:
        nanos = parse_duration(value)
    except DurationError as exc:
        return DoNotDisrupt(active=False, invalid=f"failed to parse {value!r} as a duration: {exc}")
    if nanos <= 0:
        return DoNotDisrupt(active=False, invalid=f"duration {value!r} must be positive")
    if pod.start_time is None:
        return DoNotDisrupt(active=True)
    until = pod.start_time + to_timedelta(nanos)
    return DoNotDisrupt(active=now < until, until=until)


def needs_force_delete(pod: PodInfo, deadline: datetime | None, now: datetime) -> bool:
    """Must ``pod`` be deleted now to be gone by the node's ``deadline``? An active pod:
    once ``deadline - terminationGracePeriodSeconds`` has passed. A terminating one:
    when its own deletionTimestamp falls after the deadline (it is deleted again with
    less grace)."""
    if deadline is None:
        return False
    if pod.deletion_timestamp is not None:
        return pod.deletion_timestamp > deadline
    if pod.termination_grace_seconds is None:
        return False
    return now > deadline - timedelta(seconds=pod.termination_grace_seconds)


def force_delete_grace(deadline: datetime, now: datetime) -> int:
    """The grace a deadline deletion grants: the whole seconds left, at least 1 (0 would
    remove the pod from etcd before its containers stop, and could run two copies of a
    StatefulSet pod at once)."""
    return max(int((deadline - now).total_seconds()), 1)
