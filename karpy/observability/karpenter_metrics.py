"""Karpenter's own metrics (``karpenter_*``) for provisioning, the NodeClaim lifecycle
and termination, under Karpenter's names and labels so its dashboards and alerts work on
karpy unchanged. A few that Karpenter has since renamed are kept under their historical
names as well (``karpenter_nodeclaims_launched_total``, ``..._registered_total``,
``..._initialized_total``, ``karpenter_provisioner_scheduling_duration_seconds``),
because users asked for exactly those.

Gauges that describe the whole cluster (``karpenter_pods_state``, NodePool usage and
limits, each node's allocatable and requests) are not here:
`karpy.state.metrics` computes them from cluster state at scrape time
instead of tracking every change. The two summaries Karpenter's Performance dashboard
reads by quantile are `WindowedSummary` (`karpy.observability.quantiles`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from karpy.observability.quantiles import WindowedSummary

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["KarpenterMetrics"]

_DURATION_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300,
)  # fmt: skip
_TERMINATION_BUCKETS: Final = tuple(float(2**i) for i in range(12))  # 1 s .. 2048 s
_SCORE_BUCKETS: Final = (0.1, 0.25, 0.33, 0.5, 1.0, 2.0, 5.0, 10.0)  # Karpenter's
_LIFETIME_BUCKETS: Final = (
    900, 1800, 3600, 7200, 14400, 28800, 57600, 86400, 172800, 345600, 604800, 1209600,
    2592000,
)  # fmt: skip


class KarpenterMetrics:
    def __init__(
        self, registry: CollectorRegistry, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        r = registry
        # --- NodeClaims ---------------------------------------------------------------
        self.nodeclaims_created = Counter(
            "karpenter_nodeclaims_created_total",
            "NodeClaims created, by reason (provisioned, or a disruption reason), "
            "nodepool and whether minValues were relaxed.",
            ["reason", "nodepool", "min_values_relaxed"],
            registry=r,
        )
        self.nodeclaims_launched = Counter(
            "karpenter_nodeclaims_launched_total",
            "NodeClaims whose instance was launched.",
            ["nodepool"],
            registry=r,
        )
        self.nodeclaims_registered = Counter(
            "karpenter_nodeclaims_registered_total",
            "NodeClaims whose node registered.",
            ["nodepool"],
            registry=r,
        )
        self.nodeclaims_initialized = Counter(
            "karpenter_nodeclaims_initialized_total",
            "NodeClaims whose node initialized.",
            ["nodepool"],
            registry=r,
        )
        self.nodeclaims_terminated = Counter(
            "karpenter_nodeclaims_terminated_total",
            "NodeClaims whose termination finished (finalizer removed).",
            ["nodepool", "capacity_type", "zone"],
            registry=r,
        )
        self.nodeclaims_disrupted = Counter(
            "karpenter_nodeclaims_disrupted_total",
            "NodeClaims karpy deleted, by reason (insufficient_capacity, "
            "registration_timeout, launch_timeout, garbage_collected, ...).",
            ["reason", "nodepool", "capacity_type", "consolidation_policy",
             "termination_mode"],
            registry=r,
        )  # fmt: skip
        self.pods_disruption_initiated = Counter(
            "karpenter_pods_disruption_initiated_total",
            "Pods whose node karpy began to disrupt: each disrupted NodeClaim adds its "
            "reschedulable pods (DaemonSet and mirror pods excluded), by the same labels as "
            "karpenter_nodeclaims_disrupted_total.",
            ["reason", "nodepool", "capacity_type", "consolidation_policy",
             "termination_mode"],
            registry=r,
        )  # fmt: skip
        self.nodeclaims_termination_duration = Histogram(
            "karpenter_nodeclaims_termination_duration_seconds",
            "Seconds from a NodeClaim's deletion to its finalizer's removal.",
            ["nodepool"],
            buckets=_TERMINATION_BUCKETS,
            registry=r,
        )
        self.instance_termination_duration = Histogram(
            "karpenter_nodeclaims_instance_termination_duration_seconds",
            "Seconds from asking the cloud to terminate an instance to its being gone.",
            ["nodepool"],
            buckets=_TERMINATION_BUCKETS[:11],
            registry=r,
        )
        # --- nodes ----------------------------------------------------------------------
        self.nodes_created = Counter(
            "karpenter_nodes_created_total", "Nodes registered.", ["nodepool", "zone"],
            registry=r,
        )  # fmt: skip
        self.nodes_terminated = Counter(
            "karpenter_nodes_terminated_total",
            "Nodes whose termination finished (finalizer removed).",
            ["nodepool", "zone"],
            registry=r,
        )
        self.nodes_termination_duration = WindowedSummary(
            "karpenter_nodes_termination_duration_seconds",
            "Seconds from a node's deletion to its finalizer's removal (quantiles over the "
            "last 10 minutes).",
            ["nodepool"],
            registry=r,
            clock=clock,
        )
        self.nodes_lifetime = Histogram(
            "karpenter_nodes_lifetime_duration_seconds",
            "Age of nodes when they terminated.",
            ["nodepool"],
            buckets=_LIFETIME_BUCKETS,
            registry=r,
        )
        self.nodes_drained = Counter(
            "karpenter_nodes_drained_total", "Nodes drained.", ["nodepool"], registry=r
        )
        # --- pods -------------------------------------------------------------------------
        self.pods_startup_duration = WindowedSummary(
            "karpenter_pods_startup_duration_seconds",
            "Seconds from a pod's creation until it is running and ready, for pods karpy saw "
            "pending (quantiles over the last 10 minutes).",
            registry=r,
            clock=clock,
        )
        self.eviction_requests = Counter(
            "karpenter_pods_eviction_requests_total",
            "Eviction API requests, by HTTP status code.",
            ["code"],
            registry=r,
        )
        self.pods_drained = Counter(
            "karpenter_pods_drained_total",
            "Pods evicted or deleted by a drain, by the node's disruption reason.",
            ["reason"],
            registry=r,
        )
        self.pod_decision_duration = Histogram(
            "karpenter_pods_scheduling_decision_duration_seconds",
            "Seconds from first seeing a pending pod to the first scheduling decision on it.",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        # --- the scheduler --------------------------------------------------------------
        self.scheduling_duration = Histogram(
            "karpenter_scheduler_scheduling_duration_seconds",
            "Length of a scheduling simulation, per controller.",
            ["controller"],
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.provisioner_scheduling_duration = Histogram(
            "karpenter_provisioner_scheduling_duration_seconds",
            "Length of a provisioning round's scheduling simulation (historical name).",
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.scheduler_queue_depth = Gauge(
            "karpenter_scheduler_queue_depth",
            "Pods left to schedule in the running (or last) simulation.",
            ["controller", "scheduling_id"],
            registry=r,
        )
        self.unschedulable_pods = Gauge(
            "karpenter_scheduler_unschedulable_pods_count",
            "Pods the last simulation could not place.",
            ["controller"],
            registry=r,
        )
        self.ignored_pods = Gauge(
            "karpenter_scheduler_ignored_pods_count",
            "Pending pods karpy does not provision for (invalid constraints).",
            registry=r,
        )
        # --- the cloud provider ---------------------------------------------------------
        self.cloudprovider_duration = Histogram(
            "karpenter_cloudprovider_duration_seconds",
            "Length of cloud provider calls.",
            ["controller", "method", "provider"],
            buckets=_DURATION_BUCKETS,
            registry=r,
        )
        self.cloudprovider_errors = Counter(
            "karpenter_cloudprovider_errors_total",
            "Cloud provider calls that failed, by error type.",
            ["controller", "method", "provider", "error"],
            registry=r,
        )
        # --- disruption -----------------------------------------------------------------
        self.disruption_decisions = Counter(
            "karpenter_voluntary_disruption_decisions_total",
            "Disruption decisions started, by decision (delete, replace, reboot), reason "
            "and consolidation type.",
            ["decision", "reason", "consolidation_type"],
            registry=r,
        )
        self.disruption_eligible_nodes = Gauge(
            "karpenter_voluntary_disruption_eligible_nodes",
            "Nodes a disruption method could act on in its last evaluation, by reason.",
            ["reason"],
            registry=r,
        )
        self.disruption_blocked_nodes = Gauge(
            "karpy_disruption_blocked_nodes",
            "Managed nodes disruption may not touch, at its last pass, by NodePool and what "
            "blocks them (NotRegistered, NotInitialized, Deleting, Nominated, "
            "DoNotDisruptNode, NodePoolNotFound, DoNotDisruptPod, PodDisruptionBudget, "
            "MultiplePodDisruptionBudgets).",
            ["nodepool", "reason"],
            registry=r,
        )
        self.pod_deletion_cost_runs = Counter(
            "karpy_pod_deletion_cost_runs_total",
            "Runs of the pod-deletion-cost controller (gate PodDeletionCostManagement), by "
            "outcome: ranked, or unchanged (nothing changed since the last complete run).",
            ["outcome"],
            registry=r,
        )
        self.pod_deletion_cost_writes = Counter(
            "karpy_pod_deletion_cost_writes_total",
            "Pod patches of controller.kubernetes.io/pod-deletion-cost, by result (updated; "
            "conflict: the pod changed first, retried next run; gone: the pod was deleted).",
            ["result"],
            registry=r,
        )
        self.disruption_evaluation_duration = Histogram(
            "karpenter_voluntary_disruption_decision_evaluation_duration_seconds",
            "Time to evaluate one disruption method, by reason and consolidation type.",
            ["reason", "consolidation_type"],
            registry=r,
        )
        self.disruption_consolidation_timeouts = Counter(
            "karpenter_voluntary_disruption_consolidation_timeouts_total",
            "Consolidation evaluations that ran out of time, by consolidation type.",
            ["consolidation_type"],
            registry=r,
        )
        self.disruption_failed_validations = Counter(
            "karpenter_voluntary_disruption_failed_validations_total",
            "Decisions abandoned because they no longer held after the validation delay, "
            "and candidates an emptiness decision went ahead without.",
            ["consolidation_type"],
            registry=r,
        )
        self.disruption_queue_failures = Counter(
            "karpenter_voluntary_disruption_queue_failures_total",
            "Decisions rolled back while being carried out (a replacement failed or timed out).",
            ["decision", "reason", "consolidation_type"],
            registry=r,
        )
        self.nodepools_allowed_disruptions = Gauge(
            "karpenter_nodepools_allowed_disruptions",
            "Nodes a NodePool's budgets allow to be disrupted at once, by reason.",
            ["nodepool", "reason"],
            registry=r,
        )
        self.nodepools_nodes_consuming_budgets = Gauge(
            "karpenter_nodepools_nodes_consuming_budgets",
            "A NodePool's nodes being disrupted (or not Ready), which use up its budgets.",
            ["nodepool", "reason"],
            registry=r,
        )
        self.consolidation_score = Histogram(
            "karpenter_consolidation_score",
            "Scores of consolidation moves in Balanced NodePools (savings over disruption, "
            "each a share of the pool; taken at 1/k = 0.5 and above), by decision "
            "(approved, rejected), NodePool and consolidation policy.",
            ["decision", "nodepool", "policy"],
            buckets=_SCORE_BUCKETS,
            registry=r,
        )
        self.consolidation_moves = Counter(
            "karpenter_consolidation_moves_total",
            "Consolidation moves judged, by decision (approved, rejected), NodePool and "
            "consolidation policy; only Balanced pools reject.",
            ["decision", "nodepool", "policy"],
            registry=r,
        )
        self.nodeclaims_unhealthy_disrupted = Counter(
            "karpenter_nodeclaims_unhealthy_disrupted_total",
            "NodeClaims deleted by node repair, by the condition that made them unhealthy.",
            ["condition", "nodepool", "capacity_type", "image_id"],
            registry=r,
        )
        for kind in ("single", "multi"):
            self.disruption_consolidation_timeouts.labels(kind)
        # --- karpy's own --------------------------------------------------------------
        self.rounds = Counter(
            "karpy_provisioning_rounds_total",
            "Provisioning rounds, by outcome (launched, nothing_to_do, no_nodepools, "
            "deferred, failed, abandoned).",
            ["outcome"],
            registry=r,
        )
        self.round_pods = Gauge(
            "karpy_provisioning_round_pods",
            "Pods in the last provisioning round, by what became of them (pending, "
            "nominated_new, nominated_existing, unschedulable, deferred).",
            ["state"],
            registry=r,
        )
        self.nominations_ended = Counter(
            "karpy_nominations_ended_total",
            "Nominations of pods to planned capacity that ended, by outcome (bound_to_target, "
            "bound_elsewhere, no_room, expired, target_gone, pod_gone).",
            ["outcome"],
            registry=r,
        )
        self.provisioning_nodeclaims = Counter(
            "karpy_provisioning_nodeclaims_total",
            "NodeClaims the provisioner created, by plan: replanned when one of its pods had "
            "a nomination that ended with the pod still unbound, else first.",
            ["plan"],
            registry=r,
        )
        for outcome in ("bound_to_target", "bound_elsewhere", "no_room", "expired",
                        "target_gone", "pod_gone"):  # fmt: skip
            self.nominations_ended.labels(outcome)
        for plan in ("first", "replanned"):
            self.provisioning_nodeclaims.labels(plan)
        self.nominated_node_names = Counter(
            "karpy_nominated_node_names_total",
            "Writes of pods' status.nominatedNodeName (NOMINATED_NODE_NAMES), by action (set, "
            "cleared) and result (written; conflict: the pod changed or carries another "
            "component's nomination; gone: the pod was deleted).",
            ["action", "result"],
            registry=r,
        )
        for action in ("set", "cleared"):
            for result in ("written", "conflict", "gone"):
                self.nominated_node_names.labels(action, result)
        self.events_sent = Counter(
            "karpy_events_sent_total", "Kubernetes Events written, by reason.", ["reason"],
            registry=r,
        )  # fmt: skip
        self.events_dropped = Counter(
            "karpy_events_dropped_total",
            "Events not written, by reason and why (duplicate, spam, queue_full, not_leading, "
            "send_failed).",
            ["reason", "why"],
            registry=r,
        )
        self.garbagecollection_terminated = Counter(
            "karpy_garbagecollection_terminated_total",
            "Instances garbage collection terminated, by reason (orphan: no NodeClaim names "
            "it; duplicate: its NodeClaim records another instance).",
            ["reason"],
            registry=r,
        )

    def disrupted(self, reason: str, nodepool: str, capacity_type: str, *, pods: int,
                  consolidation_policy: str = "", termination_mode: str = "") -> None:  # fmt: skip
        """One NodeClaim disrupted (deleted on purpose), and ``pods``, its reschedulable
        pods, with it: ``karpenter_nodeclaims_disrupted_total`` and
        ``karpenter_pods_disruption_initiated_total`` by the same labels."""
        labels = (reason, nodepool, capacity_type, consolidation_policy, termination_mode)
        self.nodeclaims_disrupted.labels(*labels).inc()
        self.pods_disruption_initiated.labels(*labels).inc(pods)
