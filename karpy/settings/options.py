"""The table of settings: one `Option` per setting with its env var, flag, default and
parser, in the order `--help` lists them and errors are reported."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.durations import MINUTE
from karpy.settings.gates import AWSFeatureGates, FeatureGates, _gates
from karpy.settings.parsers import (
    LOG_FORMATS,
    _bind_address,
    _bool,
    _ca_bundle,
    _choice,
    _cluster_endpoint,
    _cluster_name,
    _cpu_requests,
    _duration,
    _int,
    _lease_name,
    _log_level,
    _namespace,
    _non_negative,
    _offering_patterns,
    _paths,
    _percent,
    _port,
    _positive,
    _qps,
    _queue_name,
)

if TYPE_CHECKING:
    from collections.abc import Callable


@attrs.frozen(slots=True)
class Option:
    """One setting: where its text comes from, its default, how the text becomes a value."""

    field: str
    default: str
    parse: Callable[[str], Any]
    help: str
    group: str
    metavar: str = "VALUE"
    shown_default: str | None = None  # for --help, when the default is worked out at start
    echo_value: bool = True  # False: an error gives the value's length, not the value

    @property
    def env(self) -> str:
        return self.field.upper()

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    @property
    def label(self) -> str:
        return f"{self.env} ({self.flag})"


_DURATION, _BOOL = "DURATION", "true|false"
# fmt: off
OPTIONS: tuple[Option, ...] = (
    Option("cluster_name", "", _cluster_name, "Name of the cluster, for discovery and tags.",
           "cluster", "NAME", shown_default='"" (required)'),
    Option("cluster_endpoint", "", _cluster_endpoint, "API server URL that nodes join; found "
           "with EKS DescribeCluster when empty.", "cluster", "URL"),
    Option("cluster_ca_bundle", "", _ca_bundle, "Base64 PEM CA bundle that nodes trust; "
           "karpy's own when empty.", "cluster", "BASE64", echo_value=False),
    Option("kubeconfig", "", lambda text: text or None, "karpy: kubeconfig file for the API "
           "server; unset means, in a pod, its service account, else ~/.kube/config.",
           "cluster", "PATH"),
    Option("eks_control_plane", "false", _bool, "Discover cluster details with EKS "
           "DescribeCluster.", "cluster", _BOOL),
    Option("isolated_vpc", "false", _bool, "No public AWS endpoints: static prices, no "
           "instance-profile garbage collection.", "cluster", _BOOL),
    Option("batch_max_duration", "10s", _duration(0, "must not be negative"), "Longest a "
           "provisioning batch window stays open.", "provisioning", _DURATION),
    Option("batch_idle_duration", "1s", _duration(0, "must not be negative"), "A batch window "
           "closes after this long without a new pending pod.", "provisioning", _DURATION),
    Option("scheduling_timeout", "30s", _duration(1, "must be greater than 0s"), "karpy: the "
           "time bound on one scheduling round.", "provisioning", _DURATION),
    Option("preference_policy", "Respect", _choice("Respect", "Ignore"), "Respect or Ignore "
           "preferred affinities and ScheduleAnyway spreads.", "provisioning", "POLICY"),
    Option("min_values_policy", "Strict", _choice("Strict", "BestEffort"), "Strict, or "
           "BestEffort to relax minValues that cannot be met.", "provisioning", "POLICY"),
    Option("ignore_dra_requests", "true", _bool, "No effect in karpy yet: pods with DRA "
           "resource claims are always left to other autoscalers (false is accepted and "
           "warned about).", "provisioning", _BOOL),
    Option("feature_gates", "NodeRepair=false,ReservedCapacity=true,SpotToSpotConsolidation="
           "false,NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,"
           "TerminateFirstDrift=true,TerminateFirstRepair=true,"
           "PodDeletionCostManagement=false",
           _gates(FeatureGates), "Core gates, Name=true|false,...; unknown names are "
           "ignored with a warning.", "provisioning", "GATES"),
    Option("nominated_node_names", "false", _bool, "karpy: write status.nominatedNodeName "
           "on the pods planned onto a node, so kube-scheduler (1.35+) binds them where karpy "
           "planned and keeps their room (fewer nodes bought; slower at tens of thousands "
           "of pods).", "provisioning", _BOOL),
    Option("legacy_node_repair", "false", _bool, "With gate NodeRepair, keep the pre-1.15 "
           "node.health controller (forceful replacement, 20% breaker) instead of repair as "
           "a budgeted disruption method.", "provisioning", _BOOL),
    Option("aws_feature_gates", "NodeClassCEL=false,RebootForRepair=false",
           _gates(AWSFeatureGates), "AWS gates, Name=true|false,...", "provisioning", "GATES"),
    Option("cloud_provider", "aws", _choice("aws", "fake"), "karpy: aws launches EC2 "
           "instances; fake makes each instance a Node object (KWOK-style, for sandboxes "
           "and tests).", "cloud", "NAME"),
    Option("fake_instance_types", "", lambda text: text or None, "karpy: with "
           "CLOUD_PROVIDER=fake, a catalog file in karpy simulate's format; unset means the "
           "embedded KWOK-style catalog.", "cloud", "PATH"),
    Option("fake_registration_delay", "0s", _duration(0, "must not be negative"), "karpy: with "
           "CLOUD_PROVIDER=fake, how long after a launch its Node object appears.", "cloud",
           _DURATION),
    Option("fake_repair_toleration", "10m", _duration(0, "must not be negative"), "karpy: with "
           "CLOUD_PROVIDER=fake, how long a node's Ready condition may be False or Unknown "
           "before node repair (gate NodeRepair) replaces it.", "cloud", _DURATION),
    Option("fake_insufficient_capacity", "", _offering_patterns, "karpy: with "
           "CLOUD_PROVIDER=fake, offerings whose launches fail with insufficient capacity: "
           "TYPE:ZONE:CAPACITY-TYPE,... (* matches anything).", "cloud", "OFFERINGS"),
    Option("vm_memory_overhead_percent", "0.075", _percent, "Fraction of memory taken as "
           "hypervisor overhead when none is measured.", "AWS", "FRACTION"),
    Option("reserved_enis", "0", _non_negative, "ENIs left out of ENI-limited max-pods.",
           "AWS", "N"),
    Option("interruption_queue", "", _queue_name, "SQS queue name of interruption events; "
           "empty turns interruption handling off.", "AWS", "NAME"),
    Option("disable_dry_run", "false", _bool, "No effect in karpy yet: karpy runs no EC2 "
           "dry-run authorization checks of node classes, so there are none to skip.", "AWS",
           _BOOL),
    Option("enable_zonal_shift", "false", _bool, "No effect in karpy yet: zones under an ARC "
           "zonal shift are not treated as unavailable (true is accepted and warned about).",
           "AWS", _BOOL),
    Option("ami_refresh_interval", "1m", _duration(MINUTE, "must be at least 1m"), "How often "
           "AMIs are resolved again.", "AWS", _DURATION),
    Option("subnet_refresh_interval", "1m", _duration(MINUTE, "must be at least 1m"), "How "
           "often subnets are resolved again.", "AWS", _DURATION),
    Option("security_group_refresh_interval", "1m", _duration(MINUTE, "must be at least 1m"),
           "How often security groups are resolved again.", "AWS", _DURATION),
    Option("metrics_port", "8080", _port, "Port of /metrics.", "operator", "PORT"),
    Option("health_probe_port", "8081", _port, "Port of /healthz and /readyz.", "operator",
           "PORT"),
    Option("metrics_bind_address", "0.0.0.0", _bind_address, "karpy: IP address /metrics "
           "listens on (0.0.0.0: every interface, as in a pod).", "operator", "ADDRESS"),
    Option("health_probe_bind_address", "0.0.0.0", _bind_address, "karpy: IP address "
           "/healthz and /readyz listen on.", "operator", "ADDRESS"),
    Option("enable_profiling", "false", _bool, "Serve profiling endpoints on the metrics "
           "port, one profile at a time and rate-limited.", "operator", _BOOL),
    Option("disable_leader_election", "false", _bool, "Run without a leader-election lease "
           "(one replica only).", "operator", _BOOL),
    Option("leader_election_name", "karpy-leader-election", _lease_name, "Name of the "
           "leader-election Lease.", "operator", "NAME"),
    Option("leader_election_namespace", "", _namespace, "Namespace of the leader-election "
           "Lease.", "operator", "NAMESPACE", shown_default="the pod's namespace "
           "(SYSTEM_NAMESPACE, else the service-account file), else kube-system"),
    Option("coexist_with_karpenter", "false", _bool, "karpy: act even while a Karpenter "
           "controller holds its leader Lease (karpenter-leader-election, any namespace); "
           "false waits until that Lease is stale.", "operator", _BOOL),
    Option("disable_controller_warmup", "false", _bool, "When true, followers wait until they "
           "win the lease before starting informers (slower fail-over, less memory on "
           "standbys).", "operator", _BOOL),
    Option("disable_cluster_state_observability", "false", _bool, "Turn off cluster-state "
           "and status-condition metrics.", "operator", _BOOL),
    Option("kube_client_qps", "200", _qps, "Sustained API requests per second (negative: no "
           "limit).", "operator", "N"),
    Option("kube_client_burst", "300", _positive, "API request burst.", "operator", "N"),
    Option("memory_limit", "-1", _int, "Container memory limit in bytes; accepted for the "
           "chart's sake and unused (Python has no soft heap limit).", "operator", "BYTES"),
    Option("cpu_requests", "1000", _cpu_requests, "Container CPU request in millicores; sizes "
           "the worker thread pool (<= 0 counts as 1000).", "operator", "MILLICORES"),
    Option("log_level", "info", _log_level, "debug, info, warn or error (empty: "
           "info).", "logging", "LEVEL"),
    Option("log_format", "json", _choice(*LOG_FORMATS), "karpy: json, one object per line, or "
           "console, for people.", "logging", "FORMAT"),
    Option("log_output_paths", "stdout", _paths, "Where logs go: stdout, stderr or file paths, "
           "comma-separated.", "logging", "PATHS"),
    Option("log_error_output_paths", "stderr", _paths, "Where failures to write a log line are "
           "reported.", "logging", "PATHS"),
)
# fmt: on
OPTIONS_BY_FIELD = {option.field: option for option in OPTIONS}

# Karpenter settings karpy does not implement and will not silently ignore when set.
UNSUPPORTED = {
    "SCHEDULER_CONFIG": "not supported by karpy yet (kube-scheduler default spread "
    "constraints are not mirrored); unset it",
}
