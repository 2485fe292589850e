"""The drain's decisions, as pure functions of the pods and the time: which pods are
ignored, which group goes first, who is protected, who is deleted at the deadline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from karpy.apis.core import format_time
from karpy.lifecycle.termination.drain import DrainStatus, plan_drain
from karpy.lifecycle.termination.eviction import Attempt, Outcome
from karpy.lifecycle.termination.pods import (
    DrainGroup,
    do_not_disrupt,
    drain_group,
    force_delete_grace,
    is_waiting_eviction,
    needs_force_delete,
)
from karpy.state.records import PodInfo, pod_info
from tests import factories as f

NOW = datetime(2025, 1, 1, 12, tzinfo=UTC)
DAEMONSET = f.owner_reference("DaemonSet", "agent")
MIRROR = f.owner_reference("Node", "n1", api_version="v1")


def pod(name: str, *, phase: str = "Running", do_not_disrupt: str | None = None,
        critical: bool = False, priority_class: str | None = None,
        owner: dict[str, Any] | None = None, deleted: datetime | None = None,
        started: datetime | None = NOW - timedelta(hours=1), grace: int | None = 30,
        **kw: Any) -> PodInfo:  # fmt: skip
    data = f.pod(
        name, node_name="n1", phase=phase,
        annotations={"karpenter.sh/do-not-disrupt": do_not_disrupt} if do_not_disrupt else None,
        priority_class_name="system-node-critical" if critical else priority_class,
        owner_references=[owner] if owner else (),
        deletion_timestamp=format_time(deleted) if deleted else None, **kw,
    )  # fmt: skip
    if grace is not None:
        data["spec"]["terminationGracePeriodSeconds"] = grace
    if started is not None:
        data["status"]["startTime"] = format_time(started)
    return pod_info(data)


def names(pods: tuple[PodInfo, ...]) -> list[str]:
    return [p.pod.name for p in pods]


# --- which pods the drain waits for -------------------------------------------------------


def test_pods_tolerating_the_disrupted_taint_mirror_pods_and_finished_pods_are_ignored():
    ignored = [
        pod("tolerates", tolerations=[f.toleration("karpenter.sh/disrupted", operator="Exists")]),
        pod("tolerates-everything", owner=DAEMONSET, tolerations=[f.toleration(operator="Exists")]),
        pod("mirror", owner=MIRROR),
        pod("succeeded", phase="Succeeded"),
        pod("failed", phase="Failed"),
        pod("stuck", deleted=NOW - timedelta(seconds=61)),
    ]
    assert [p.pod.name for p in ignored if is_waiting_eviction(p, NOW)] == []
    plan = plan_drain(ignored, None, NOW)
    assert plan.drained
    assert plan.group is None


def test_a_pod_tolerating_only_another_effect_is_drained():
    only_noexecute = f.toleration("karpenter.sh/disrupted", operator="Exists", effect="NoExecute")
    other = pod("noexecute", tolerations=[only_noexecute])
    assert is_waiting_eviction(other, NOW)


def test_a_pod_terminating_for_less_than_a_minute_past_its_deletion_is_waited_for():
    assert is_waiting_eviction(pod("slow", deleted=NOW - timedelta(seconds=59)), NOW)


def test_pods_fall_into_four_groups_critical_daemons_last():
    assert drain_group(pod("web")) is DrainGroup.NON_CRITICAL
    assert drain_group(pod("logs", owner=DAEMONSET)) is DrainGroup.NON_CRITICAL_DAEMON
    assert drain_group(pod("dns", critical=True)) is DrainGroup.CRITICAL
    assert drain_group(pod("cni", owner=DAEMONSET, critical=True)) is DrainGroup.CRITICAL_DAEMON
    assert drain_group(pod("api", priority_class="system-cluster-critical")) is DrainGroup.CRITICAL
    assert drain_group(pod("high", priority_class="high-priority")) is DrainGroup.NON_CRITICAL


def test_only_the_first_group_with_pods_is_evicted():
    pods = [pod("cni", owner=DAEMONSET, critical=True), pod("dns", critical=True),
            pod("logs", owner=DAEMONSET)]  # fmt: skip
    plan = plan_drain(pods, None, NOW)
    assert plan.group is DrainGroup.NON_CRITICAL_DAEMON
    assert names(plan.evict) == ["logs"]
    assert plan.waiting == 3


def test_a_terminating_pod_holds_back_the_next_group():
    pods = [pod("web", deleted=NOW + timedelta(seconds=20)), pod("logs", owner=DAEMONSET)]
    plan = plan_drain(pods, None, NOW)
    assert plan.group is DrainGroup.NON_CRITICAL
    assert names(plan.terminating) == ["web"]
    assert plan.evict == ()


# --- do-not-disrupt ------------------------------------------------------------------------


def test_do_not_disrupt_true_protects_and_holds_back_the_next_group():
    pods = [pod("batch", do_not_disrupt="true"), pod("web"), pod("logs", owner=DAEMONSET)]
    plan = plan_drain(pods, None, NOW)
    assert names(plan.protected) == ["batch"]
    assert names(plan.evict) == ["web"]
    assert plan.waiting == 3


def test_a_do_not_disrupt_duration_protects_until_it_has_run_since_the_pod_started():
    young = pod("young", do_not_disrupt="2h", started=NOW - timedelta(hours=1))
    old = pod("old", do_not_disrupt="30m", started=NOW - timedelta(hours=1))
    unstarted = pod("unstarted", do_not_disrupt="30m", started=None)
    assert do_not_disrupt(young, NOW).active
    assert do_not_disrupt(young, NOW).until == NOW + timedelta(hours=1)
    assert not do_not_disrupt(old, NOW).active
    assert do_not_disrupt(unstarted, NOW).active
    plan = plan_drain([young, old], None, NOW)
    assert names(plan.protected) == ["young"]
    assert names(plan.evict) == ["old"]
    assert sorted(e.reason for e in plan.events) == ["DoNotDisruptGracePeriodElapsed",
                                                     "DoNotDisruptUntil"]  # fmt: skip


def test_an_invalid_do_not_disrupt_value_is_ignored_with_a_warning():
    for value in ("yes", "-5m", "0s"):
        bad = pod("bad", do_not_disrupt=value)
        assert not do_not_disrupt(bad, NOW).active
        plan = plan_drain([bad], None, NOW)
        assert names(plan.evict) == ["bad"]
        assert [(e.type, e.reason) for e in plan.events] == [
            ("Warning", "InvalidDoNotDisruptAnnotation")
        ]


# --- the deadline ----------------------------------------------------------------------------


def test_a_pod_is_deleted_once_deadline_minus_its_grace_has_passed():
    deadline = NOW + timedelta(seconds=60)
    assert not needs_force_delete(pod("web", grace=30), deadline, NOW)
    assert needs_force_delete(pod("web", grace=90), deadline, NOW)
    assert not needs_force_delete(pod("web", grace=90), None, NOW)
    assert force_delete_grace(deadline, NOW) == 60
    assert force_delete_grace(deadline, deadline + timedelta(seconds=5)) == 1


def test_a_terminating_pod_is_deleted_again_only_if_it_would_outlive_the_deadline():
    deadline = NOW + timedelta(seconds=60)
    assert needs_force_delete(pod("slow", deleted=NOW + timedelta(seconds=300)), deadline, NOW)
    assert not needs_force_delete(pod("quick", deleted=NOW + timedelta(seconds=30)), deadline, NOW)


def test_at_the_deadline_protected_pods_of_every_group_are_deleted_at_once():
    deadline = NOW + timedelta(seconds=10)
    pods = [pod("batch", do_not_disrupt="true"), pod("cni", owner=DAEMONSET, critical=True),
            pod("web", grace=5)]  # fmt: skip
    plan = plan_drain(pods, deadline, NOW)
    assert names(plan.delete) == ["batch", "cni"]
    assert names(plan.evict) == ["web"]


# --- what a person reads ------------------------------------------------------------------


def test_the_status_message_says_what_blocks_the_drain():
    a, b, c = pod("a"), pod("b"), pod("c", do_not_disrupt="true")
    status = DrainStatus(
        waiting=4,
        attempts=(Attempt(a, Outcome.REFUSED, "evicting pod violates a PDB"),
                  Attempt(b, Outcome.PACED, "evicting pod violates a PDB")),
        protected=(c,), terminating=(pod("d"),),
    )  # fmt: skip
    assert status.message() == (
        "4 pods are waiting to be evicted: 2 refused (evicting pod violates a PDB: "
        "default/a, default/b), 1 protected by karpenter.sh/do-not-disrupt (default/c), "
        "1 terminating"
    )
    assert DrainStatus(waiting=0).drained
