"""`karpy.settings`: every setting's default, env var, flag, and the one-line errors."""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import subprocess
import sys
import threading

import orjson
import pytest
import structlog

from karpy.durations import HOUR, MICROSECOND, MILLISECOND, MINUTE, SECOND
from karpy.errors import UsageError
from karpy.log import configure_logging
from karpy.settings import (
    OPTIONS,
    AWSFeatureGates,
    FeatureGates,
    Settings,
    SettingsError,
    add_arguments,
    apply_to_process,
    read_service_account_namespace,
)
from karpy.settings.inert import inert_settings
from karpy.settings.process import worker_threads

PEM = b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
CA_BUNDLE = base64.b64encode(PEM).decode()
OTHER_CA_BUNDLE = base64.b64encode(PEM + PEM).decode()


def flags(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(list(argv))


def settings_from(env: dict[str, str] | None = None, *argv: str, **kwargs: object) -> Settings:
    env = {"CLUSTER_NAME": "test"} | (env or {})
    return Settings.from_env_and_args(env, flags(*argv), **kwargs)  # type: ignore[arg-type]


def errors_of(env: dict[str, str] | None = None, *argv: str) -> list[str]:
    with pytest.raises(SettingsError) as caught:
        settings_from(env, *argv)
    return caught.value.errors


EKS_NAME_RULE = (
    "must be an EKS cluster name: 1 to 100 letters, digits, - and _, starting "
    "with a letter or digit"
)

# field, env text, value it gives, flag text, value it gives
CASES = [
    ("cluster_name", "prod", "prod", "staging", "staging"),
    ("cluster_endpoint", "https://a.example.com", "https://a.example.com",
     "https://10.0.0.1:6443", "https://10.0.0.1:6443"),
    ("cluster_ca_bundle", CA_BUNDLE, CA_BUNDLE, OTHER_CA_BUNDLE, OTHER_CA_BUNDLE),
    ("kubeconfig", "/etc/kube/config", "/etc/kube/config", "/tmp/k", "/tmp/k"),
    ("eks_control_plane", "true", True, "false", False),
    ("isolated_vpc", "true", True, "false", False),
    ("batch_max_duration", "1m30s", 90 * SECOND, "2h45m", 2 * HOUR + 45 * MINUTE),
    ("batch_idle_duration", "500ms", 500 * MILLISECOND, "0", 0),
    ("scheduling_timeout", "1.5h", 90 * MINUTE, "300µs", 300 * MICROSECOND),
    ("preference_policy", "Ignore", "Ignore", "Respect", "Respect"),
    ("min_values_policy", "BestEffort", "BestEffort", "Strict", "Strict"),
    ("ignore_dra_requests", "false", False, "true", True),
    ("feature_gates", "NodeOverlay=true", FeatureGates(node_overlay=True),
     "SpotToSpotConsolidation=true, ReservedCapacity=false",
     FeatureGates(spot_to_spot_consolidation=True, reserved_capacity=False)),
    ("nominated_node_names", "true", True, "false", False),
    ("legacy_node_repair", "true", True, "false", False),
    ("aws_feature_gates", "NodeClassCEL=true", AWSFeatureGates(node_class_cel=True),
     "NodeClassCEL=false, RebootForRepair=true",
     AWSFeatureGates(node_class_cel=False, reboot_for_repair=True)),
    ("cloud_provider", "fake", "fake", "aws", "aws"),
    ("fake_instance_types", "/etc/karpy/catalog.yaml", "/etc/karpy/catalog.yaml", "x.yaml",
     "x.yaml"),
    ("fake_registration_delay", "2s", 2 * SECOND, "0", 0),
    ("fake_repair_toleration", "30s", 30 * SECOND, "10m", 600 * SECOND),
    ("fake_insufficient_capacity", "c-2x-amd64-linux:test-zone-a:spot",
     (("c-2x-amd64-linux", "test-zone-a", "spot"),), "*:test-zone-b:*, m-4x-arm64-linux:*:*",
     (("*", "test-zone-b", "*"), ("m-4x-arm64-linux", "*", "*"))),
    ("vm_memory_overhead_percent", "0.1", 0.1, "0", 0.0),
    ("reserved_enis", "2", 2, "0", 0),
    ("interruption_queue", "karpy-interruptions", "karpy-interruptions", "q_1.fifo", "q_1.fifo"),
    ("disable_dry_run", "true", True, "false", False),
    ("enable_zonal_shift", "true", True, "false", False),
    ("ami_refresh_interval", "5m", 5 * MINUTE, "1h", HOUR),
    ("subnet_refresh_interval", "90s", 90 * SECOND, "1m", MINUTE),
    ("security_group_refresh_interval", "10m", 10 * MINUTE, "1m30s", 90 * SECOND),
    ("metrics_port", "9090", 9090, "65535", 65535),
    ("health_probe_port", "9091", 9091, "1", 1),
    ("metrics_bind_address", "127.0.0.1", "127.0.0.1", "::", "::"),
    ("health_probe_bind_address", "10.0.0.7", "10.0.0.7", "::1", "::1"),
    ("enable_profiling", "true", True, "false", False),
    ("disable_leader_election", "true", True, "false", False),
    ("leader_election_name", "my-lease", "my-lease", "karpenter-leader-election",
     "karpenter-leader-election"),
    ("leader_election_namespace", "karpy", "karpy", "ops", "ops"),
    ("coexist_with_karpenter", "false", False, "true", True),
    ("disable_controller_warmup", "false", False, "true", True),
    ("disable_cluster_state_observability", "true", True, "false", False),
    ("kube_client_qps", "50", 50, "-1", -1),
    ("kube_client_burst", "100", 100, "1", 1),
    ("memory_limit", "1073741824", 1073741824, "0", 0),
    ("cpu_requests", "2000", 2000, "-5", 1000),
    ("log_level", "debug", "debug", "warn", "warn"),
    ("log_format", "console", "console", "json", "json"),
    ("log_output_paths", "stdout,/var/log/karpy.log", ("stdout", "/var/log/karpy.log"),
     "stderr", ("stderr",)),
    ("log_error_output_paths", "stdout", ("stdout",), " stderr , /tmp/x ", ("stderr", "/tmp/x")),
]  # fmt: skip
OPTION = {option.field: option for option in OPTIONS}


def test_every_setting_has_a_case():
    assert sorted(case[0] for case in CASES) == sorted(OPTION)


def test_defaults_are_karpenters():
    settings = Settings.from_env_and_args({"CLUSTER_NAME": "c"}, flags())
    assert settings == Settings(cluster_name="c")
    assert (settings.batch_max_duration, settings.batch_idle_duration) == (10 * SECOND, SECOND)
    assert settings.vm_memory_overhead_percent == 0.075
    assert (settings.metrics_port, settings.health_probe_port) == (8080, 8081)
    assert (settings.kube_client_qps, settings.kube_client_burst) == (200, 300)
    assert (settings.memory_limit, settings.cpu_requests) == (-1, 1000)
    assert settings.ami_refresh_interval == settings.subnet_refresh_interval == MINUTE
    assert settings.security_group_refresh_interval == MINUTE
    assert settings.scheduling_timeout == 30 * SECOND
    assert settings.feature_gates == FeatureGates(
        node_repair=False,
        reserved_capacity=True,
        spot_to_spot_consolidation=False,
        node_overlay=False,
        static_capacity=False,
        capacity_buffer=False,
    )
    assert settings.aws_feature_gates.node_class_cel is False
    assert (settings.preference_policy, settings.min_values_policy) == ("Respect", "Strict")
    assert settings.ignore_dra_requests is True
    assert settings.disable_controller_warmup is False
    assert (settings.log_level, settings.log_format) == ("info", "json")
    assert settings.log_output_paths == ("stdout",)
    assert settings.leader_election_name == "karpy-leader-election"
    assert settings.leader_election_namespace == "kube-system"
    assert settings.kubeconfig is None
    assert (settings.cloud_provider, settings.fake_registration_delay) == ("aws", 0)


@pytest.mark.parametrize(("field", "env_text", "env_value"), [c[:3] for c in CASES])
def test_env_var_sets_the_setting(field, env_text, env_value):
    settings = settings_from({OPTION[field].env: env_text})
    assert getattr(settings, field) == env_value


@pytest.mark.parametrize(("field", "env_text", "flag_text", "flag_value"),
                         [(c[0], c[1], c[3], c[4]) for c in CASES])  # fmt: skip
def test_flag_wins_over_env_var(field, env_text, flag_text, flag_value):
    settings = settings_from({OPTION[field].env: env_text}, f"{OPTION[field].flag}={flag_text}")
    assert getattr(settings, field) == flag_value


@pytest.mark.parametrize("field", [o.field for o in OPTIONS if o.metavar == "true|false"])
def test_boolean_flag_alone_means_true(field):
    default = getattr(Settings(), field)
    settings = settings_from({OPTION[field].env: str(default).lower()}, OPTION[field].flag)
    assert getattr(settings, field) is True


def test_flag_given_as_separate_word():
    assert settings_from({}, "--batch-max-duration", "20s").batch_max_duration == 20 * SECOND


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"BATCH_MAX_DURATION": "-1s"},
         'BATCH_MAX_DURATION (--batch-max-duration) = "-1s": must not be negative'),
        ({"BATCH_MAX_DURATION": "10"},
         'BATCH_MAX_DURATION (--batch-max-duration) = "10": must be a duration such as 10s, '
         "1m30s or 500ms"),
        ({"BATCH_IDLE_DURATION": "1 s"},
         'BATCH_IDLE_DURATION (--batch-idle-duration) = "1 s": must be a duration such as 10s, '
         "1m30s or 500ms"),
        ({"BATCH_IDLE_DURATION": "5m"},
         'BATCH_IDLE_DURATION (--batch-idle-duration) = "5m": must not exceed '
         "BATCH_MAX_DURATION (10s)"),
        ({"BATCH_IDLE_DURATION": "2m", "BATCH_MAX_DURATION": "1m30s"},
         'BATCH_IDLE_DURATION (--batch-idle-duration) = "2m": must not exceed '
         "BATCH_MAX_DURATION (1m30s)"),
        ({"SCHEDULING_TIMEOUT": "0"},
         'SCHEDULING_TIMEOUT (--scheduling-timeout) = "0": must be greater than 0s'),
        ({"AMI_REFRESH_INTERVAL": "30s"},
         'AMI_REFRESH_INTERVAL (--ami-refresh-interval) = "30s": must be at least 1m'),
        ({"SUBNET_REFRESH_INTERVAL": "59.9s"},
         'SUBNET_REFRESH_INTERVAL (--subnet-refresh-interval) = "59.9s": must be at least 1m'),
        ({"SECURITY_GROUP_REFRESH_INTERVAL": "30s"},
         'SECURITY_GROUP_REFRESH_INTERVAL (--security-group-refresh-interval) = "30s": must be '
         "at least 1m"),
        ({"FEATURE_GATES": "NodeOverlay"},
         'FEATURE_GATES (--feature-gates) = "NodeOverlay": "NodeOverlay" is not Name=true|false'),
        ({"FEATURE_GATES": "=true"},
         'FEATURE_GATES (--feature-gates) = "=true": "=true" is not Name=true|false'),
        ({"FEATURE_GATES": "NodeOverlay=yes"},
         'FEATURE_GATES (--feature-gates) = "NodeOverlay=yes": feature gate NodeOverlay must be '
         'true or false, not "yes"'),
        ({"FEATURE_GATES": "FutureGate=maybe"},
         'FEATURE_GATES (--feature-gates) = "FutureGate=maybe": feature gate FutureGate must be '
         'true or false, not "maybe"'),
        ({"AWS_FEATURE_GATES": "NodeClassCEL"},
         'AWS_FEATURE_GATES (--aws-feature-gates) = "NodeClassCEL": "NodeClassCEL" is not '
         "Name=true|false"),
        ({"METRICS_BIND_ADDRESS": "localhost"},
         'METRICS_BIND_ADDRESS (--metrics-bind-address) = "localhost": must be an IP address: '
         "0.0.0.0 or :: for every interface, 127.0.0.1 for loopback only"),
        ({"HEALTH_PROBE_BIND_ADDRESS": ":8081"},
         'HEALTH_PROBE_BIND_ADDRESS (--health-probe-bind-address) = ":8081": must be an IP '
         "address: 0.0.0.0 or :: for every interface, 127.0.0.1 for loopback only"),
        ({"ENABLE_PROFILING": "True"},
         'ENABLE_PROFILING (--enable-profiling) = "True": must be true or false'),
        ({"ISOLATED_VPC": "1"}, 'ISOLATED_VPC (--isolated-vpc) = "1": must be true or false'),
        ({"CLOUD_PROVIDER": "gcp"},
         'CLOUD_PROVIDER (--cloud-provider) = "gcp": must be one of aws, fake'),
        ({"FAKE_INSUFFICIENT_CAPACITY": "c-2x-amd64-linux:test-zone-a"},
         'FAKE_INSUFFICIENT_CAPACITY (--fake-insufficient-capacity) = '
         '"c-2x-amd64-linux:test-zone-a": \'c-2x-amd64-linux:test-zone-a\' is not '
         "TYPE:ZONE:CAPACITY-TYPE (use * for any)"),
        ({"DISABLE_LEADER_ELECTION": ""},
         'DISABLE_LEADER_ELECTION (--disable-leader-election) = "": must be true or false'),
        ({"VM_MEMORY_OVERHEAD_PERCENT": "1"},
         'VM_MEMORY_OVERHEAD_PERCENT (--vm-memory-overhead-percent) = "1": must be a fraction '
         "in [0, 1), e.g. 0.075"),
        ({"VM_MEMORY_OVERHEAD_PERCENT": "-0.1"},
         'VM_MEMORY_OVERHEAD_PERCENT (--vm-memory-overhead-percent) = "-0.1": must be a '
         "fraction in [0, 1), e.g. 0.075"),
        ({"VM_MEMORY_OVERHEAD_PERCENT": "7.5%"},
         'VM_MEMORY_OVERHEAD_PERCENT (--vm-memory-overhead-percent) = "7.5%": must be a '
         "fraction in [0, 1), e.g. 0.075"),
        ({"VM_MEMORY_OVERHEAD_PERCENT": "nan"},
         'VM_MEMORY_OVERHEAD_PERCENT (--vm-memory-overhead-percent) = "nan": must be a '
         "fraction in [0, 1), e.g. 0.075"),
        ({"METRICS_PORT": "0"},
         'METRICS_PORT (--metrics-port) = "0": must be a port number in 1..65535'),
        ({"METRICS_PORT": "65536"},
         'METRICS_PORT (--metrics-port) = "65536": must be a port number in 1..65535'),
        ({"HEALTH_PROBE_PORT": "80a"},
         'HEALTH_PROBE_PORT (--health-probe-port) = "80a": must be a port number in 1..65535'),
        ({"HEALTH_PROBE_PORT": "8080"},
         'HEALTH_PROBE_PORT (--health-probe-port) = "8080": must differ from METRICS_PORT '
         "(8080)"),
        ({"RESERVED_ENIS": "-1"},
         'RESERVED_ENIS (--reserved-enis) = "-1": must be an integer >= 0'),
        ({"KUBE_CLIENT_QPS": "0"},
         'KUBE_CLIENT_QPS (--kube-client-qps) = "0": must not be 0 (a positive rate, or negative '
         "for no client-side limit)"),
        ({"KUBE_CLIENT_QPS": "1.5"},
         'KUBE_CLIENT_QPS (--kube-client-qps) = "1.5": must be an integer'),
        ({"KUBE_CLIENT_BURST": "0"},
         'KUBE_CLIENT_BURST (--kube-client-burst) = "0": must be an integer >= 1'),
        ({"MEMORY_LIMIT": "1Gi"}, 'MEMORY_LIMIT (--memory-limit) = "1Gi": must be an integer'),
        ({"MEMORY_LIMIT": "9223372036854775808"},
         'MEMORY_LIMIT (--memory-limit) = "9223372036854775808": must be an integer'),
        ({"CPU_REQUESTS": "1.5"},
         'CPU_REQUESTS (--cpu-requests) = "1.5": must be an integer number of millicores'),
        ({"LOG_LEVEL": "trace"},
         'LOG_LEVEL (--log-level) = "trace": must be one of debug, info, warn, error'),
        ({"LOG_LEVEL": "INFO"},
         'LOG_LEVEL (--log-level) = "INFO": must be one of debug, info, warn, error'),
        ({"LOG_FORMAT": "text"},
         'LOG_FORMAT (--log-format) = "text": must be one of json, console'),
        ({"PREFERENCE_POLICY": "respect"},
         'PREFERENCE_POLICY (--preference-policy) = "respect": must be one of Respect, Ignore'),
        ({"MIN_VALUES_POLICY": "bestEffort"},
         'MIN_VALUES_POLICY (--min-values-policy) = "bestEffort": must be one of Strict, '
         "BestEffort"),
        ({"CLUSTER_ENDPOINT": "api.example.com"},
         'CLUSTER_ENDPOINT (--cluster-endpoint) = "api.example.com": must be an absolute URL '
         "with a host, e.g. https://api.example.com"),
        ({"CLUSTER_ENDPOINT": "https://"},
         'CLUSTER_ENDPOINT (--cluster-endpoint) = "https://": must be an absolute URL with a '
         "host, e.g. https://api.example.com"),
        ({"CLUSTER_ENDPOINT": "https://api.example.com/a b"},
         'CLUSTER_ENDPOINT (--cluster-endpoint) = "https://api.example.com/a b": must be an '
         "absolute URL with a host, e.g. https://api.example.com"),
        ({"CLUSTER_ENDPOINT": "https://host:port"},
         'CLUSTER_ENDPOINT (--cluster-endpoint) = "https://host:port": must be an absolute URL '
         "with a host, e.g. https://api.example.com"),
        ({"CLUSTER_CA_BUNDLE": PEM.decode()},
         f"CLUSTER_CA_BUNDLE (--cluster-ca-bundle) = <{len(PEM)} chars>: must be "
         "base64-encoded PEM, as EKS DescribeCluster returns it"),
        ({"CLUSTER_CA_BUNDLE": base64.b64encode(b"hello").decode()},
         "CLUSTER_CA_BUNDLE (--cluster-ca-bundle) = <8 chars>: must decode to PEM certificates "
         "(-----BEGIN CERTIFICATE-----)"),
        ({"INTERRUPTION_QUEUE": "https://sqs.us-west-2.amazonaws.com/123456789012/q"},
         'INTERRUPTION_QUEUE (--interruption-queue) = "https://sqs.us-west-2.amazonaws.com/'
         '123456789012/q": must be an SQS queue name (letters, digits, - and _; at most 80), '
         "not a URL"),
        ({"LEADER_ELECTION_NAME": "Karpy_Lease"},
         'LEADER_ELECTION_NAME (--leader-election-name) = "Karpy_Lease": must be a DNS '
         "subdomain name (lower-case letters, digits, - and .)"),
        ({"LEADER_ELECTION_NAMESPACE": "Kube-System"},
         'LEADER_ELECTION_NAMESPACE (--leader-election-namespace) = "Kube-System": must be a '
         "namespace name (lower-case letters, digits and -)"),
        ({"LOG_OUTPUT_PATHS": " , "},
         'LOG_OUTPUT_PATHS (--log-output-paths) = " , ": must name at least one of stdout, '
         "stderr or a file path"),
        ({"CLUSTER_NAME": ""}, 'CLUSTER_NAME (--cluster-name) = "": required, must not be empty'),
        ({"CLUSTER_NAME": " prod"},
         'CLUSTER_NAME (--cluster-name) = " prod": ' + EKS_NAME_RULE),
        ({"CLUSTER_NAME": "-prod"}, 'CLUSTER_NAME (--cluster-name) = "-prod": ' + EKS_NAME_RULE),
        ({"CLUSTER_NAME": "prod.eu"},
         'CLUSTER_NAME (--cluster-name) = "prod.eu": ' + EKS_NAME_RULE),
        ({"CLUSTER_NAME": "prod/eu"},
         'CLUSTER_NAME (--cluster-name) = "prod/eu": ' + EKS_NAME_RULE),
        ({"CLUSTER_NAME": "a" * 101},
         f'CLUSTER_NAME (--cluster-name) = "{"a" * 101}": ' + EKS_NAME_RULE),
        ({"CLUSTER_NAME": "prod\n"},
         'CLUSTER_NAME (--cluster-name) = "prod\\n": ' + EKS_NAME_RULE),
        ({"SYSTEM_NAMESPACE": "Not A Namespace"},
         'SYSTEM_NAMESPACE = "Not A Namespace": must be a namespace name'),
        ({"SCHEDULER_CONFIG": "podTopologySpread: {}"},
         'SCHEDULER_CONFIG = "podTopologySpread: {}": not supported by karpy yet '
         "(kube-scheduler default spread constraints are not mirrored); unset it"),
    ],
)  # fmt: skip
def test_invalid_value_is_named_with_its_flag_value_and_rule(env, message):
    assert errors_of(env) == [message]


def test_unset_cluster_name_is_required():
    with pytest.raises(UsageError) as caught:
        Settings.from_env_and_args({}, flags())
    assert str(caught.value) == (
        "CLUSTER_NAME (--cluster-name) is not set: required, the name of the cluster"
    )


def test_cluster_name_not_required_when_the_caller_says_so():
    settings = Settings.from_env_and_args({}, flags(), require_cluster_name=False)
    assert settings.cluster_name == ""


def test_bad_flag_is_reported_like_a_bad_env_var():
    assert errors_of({"BATCH_IDLE_DURATION": "1s"}, "--batch-idle-duration=5m") == [
        'BATCH_IDLE_DURATION (--batch-idle-duration) = "5m": must not exceed '
        "BATCH_MAX_DURATION (10s)"
    ]


def test_a_good_flag_repairs_a_bad_env_var():
    assert settings_from({"METRICS_PORT": "http"}, "--metrics-port=9000").metrics_port == 9000


def test_all_errors_are_reported_on_one_line_in_table_order():
    with pytest.raises(SettingsError) as caught:
        Settings.from_env_and_args(
            {"METRICS_PORT": "x", "CLUSTER_NAME": "", "BATCH_MAX_DURATION": "forever"}, flags()
        )
    assert caught.value.errors == [
        'BATCH_MAX_DURATION (--batch-max-duration) = "forever": must be a duration such as '
        "10s, 1m30s or 500ms",
        'METRICS_PORT (--metrics-port) = "x": must be a port number in 1..65535',
        'CLUSTER_NAME (--cluster-name) = "": required, must not be empty',
    ]
    assert str(caught.value) == "; ".join(caught.value.errors)


def test_a_value_with_a_newline_stays_on_one_line():
    (message,) = errors_of({"LOG_FORMAT": "json\nconsole"})
    assert "\n" not in message
    assert message == 'LOG_FORMAT (--log-format) = "json\\nconsole": must be one of json, console'


@pytest.mark.parametrize(
    ("text", "nanos"),
    [("0", 0), ("1s", SECOND), ("1m30s", 90 * SECOND), ("500ms", 500 * MILLISECOND),
     ("1h", HOUR), ("2h45m", 2 * HOUR + 45 * MINUTE), ("1.5h", 90 * MINUTE),
     ("300us", 300 * MICROSECOND), ("300µs", 300 * MICROSECOND), ("1500ns", 1500)],
)  # fmt: skip
def test_durations_take_go_syntax(text, nanos):
    settings = settings_from({"BATCH_MAX_DURATION": text, "BATCH_IDLE_DURATION": "0"})
    assert settings.batch_max_duration == nanos


def test_feature_gates_take_go_boolean_spellings_and_keep_unnamed_defaults():
    settings = settings_from({"FEATURE_GATES": " NodeRepair=True,,NodeOverlay = 1 "})
    assert settings.feature_gates == FeatureGates(node_repair=True, node_overlay=True)


def test_unknown_feature_gates_are_set_aside_not_refused():
    settings = settings_from(
        {
            "FEATURE_GATES": "NodeOverlay=true,Drift=true,Future=false,Drift=1",
            "AWS_FEATURE_GATES": "NodeClassCEL=true,LaterGate=true",
        }
    )
    assert settings.feature_gates == FeatureGates(node_overlay=True, unknown=("Drift", "Future"))
    assert settings.aws_feature_gates == AWSFeatureGates(
        node_class_cel=True, unknown=("LaterGate",)
    )
    assert "unknown" not in settings.as_log_fields()["featureGates"]


@pytest.mark.parametrize(
    "name", ["prod", "p", "0", "my_cluster-2", "a" * 100, "demo", "karpy-sandbox", "Test-Cluster"]
)
def test_eks_cluster_names_are_accepted(name):
    assert settings_from({"CLUSTER_NAME": name}).cluster_name == name


def test_a_later_feature_gate_wins():
    settings = settings_from({"FEATURE_GATES": "NodeOverlay=true,NodeOverlay=false"})
    assert settings.feature_gates.node_overlay is False


def test_empty_log_level_means_info_as_in_karpenter():
    assert settings_from({"LOG_LEVEL": ""}).log_level == "info"


def test_empty_kubeconfig_means_in_cluster():
    assert settings_from({"KUBECONFIG": ""}).kubeconfig is None


# --- leader-election namespace --------------------------------------------------------------


def test_lease_namespace_defaults_to_system_namespace_before_the_service_account_file():
    settings = settings_from({"SYSTEM_NAMESPACE": "karpy"}, service_account_namespace="other")
    assert settings.leader_election_namespace == "karpy"


def test_lease_namespace_defaults_to_the_service_account_namespace():
    settings = settings_from({}, service_account_namespace="autoscaling")
    assert settings.leader_election_namespace == "autoscaling"


def test_explicit_lease_namespace_wins_over_the_pod_namespace():
    settings = settings_from(
        {"SYSTEM_NAMESPACE": "karpy", "LEADER_ELECTION_NAMESPACE": "leases"},
        service_account_namespace="other",
    )
    assert settings.leader_election_namespace == "leases"


def test_lease_namespace_falls_back_to_kube_system():
    assert settings_from({"LEADER_ELECTION_NAMESPACE": ""}).leader_election_namespace == (
        "kube-system"
    )


def test_service_account_namespace_is_read_from_its_file(tmp_path):
    path = tmp_path / "namespace"
    path.write_text("karpy\n")
    assert read_service_account_namespace(str(path)) == "karpy"
    assert read_service_account_namespace(str(tmp_path / "missing")) is None


# --- the start-up log fields ----------------------------------------------------------------


def test_log_fields_never_hold_the_ca_bundle_or_url_credentials():
    settings = settings_from(
        {"CLUSTER_CA_BUNDLE": CA_BUNDLE, "CLUSTER_ENDPOINT": "https://admin:hunter2@api.example"}
    )
    fields = settings.as_log_fields()
    rendered = orjson.dumps(fields).decode()
    assert CA_BUNDLE not in rendered
    assert "hunter2" not in rendered
    assert fields["clusterCA"]["length"] == len(CA_BUNDLE)
    assert len(fields["clusterCA"]["sha256"]) == 16
    assert fields["clusterEndpoint"] == "https://<redacted>@api.example"


def test_log_fields_spell_values_as_they_are_configured():
    fields = settings_from({"BATCH_MAX_DURATION": "90s", "FEATURE_GATES": "NodeOverlay=true"})
    logged = fields.as_log_fields()
    assert logged["batchMaxDuration"] == "1m30s"
    assert logged["amiRefreshInterval"] == "1m0s"
    assert logged["featureGates"]["NodeOverlay"] is True
    assert logged["awsFeatureGates"] == {"NodeClassCEL": False, "RebootForRepair": False}
    assert logged["clusterCA"] is None
    assert logged["logOutputPaths"] == ("stdout",)
    assert len(logged) == len(OPTIONS)


# --- what settings do to the process --------------------------------------------------------


@pytest.mark.parametrize(("millicores", "threads"),
                         [(1000, 5), (250, 5), (1001, 6), (2500, 7), (64000, 32)])  # fmt: skip
def test_cpu_requests_size_the_worker_threads_as_python_sizes_them_from_cores(millicores, threads):
    assert worker_threads(millicores) == threads


def test_the_controllers_loop_runs_threads_from_a_pool_sized_by_cpu_requests():
    async def in_the_loop() -> set[str]:
        apply_to_process(settings_from({"CPU_REQUESTS": "2000"}))
        barrier = threading.Barrier(6, timeout=5)  # 2 cores + 4 threads, all needed at once
        names = await asyncio.gather(*(asyncio.to_thread(_meet, barrier) for _ in range(6)))
        return set(names)

    names = asyncio.run(in_the_loop())
    assert len(names) == 6
    assert all(name.startswith("karpy-worker") for name in names)


def _meet(barrier: threading.Barrier) -> str:
    barrier.wait()
    return threading.current_thread().name


def test_unknown_feature_gates_are_one_warning_line_naming_them():
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    try:
        settings = settings_from({"FEATURE_GATES": "Drift=true,NodeOverlay=true,Future=false"})
        asyncio.run(_apply(settings))
    finally:
        structlog.reset_defaults()
    (line,) = [orjson.loads(text) for text in stream.getvalue().splitlines()]
    assert line["level"] == "WARN"
    assert line["message"] == "ignoring unknown feature gates"
    assert (line["setting"], line["gates"]) == ("FEATURE_GATES", ["Drift", "Future"])


def test_known_feature_gates_log_nothing():
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    try:
        asyncio.run(_apply(settings_from({"FEATURE_GATES": "NodeOverlay=true"})))
    finally:
        structlog.reset_defaults()
    assert stream.getvalue() == ""


async def _apply(settings: Settings) -> None:
    apply_to_process(settings)


def test_the_controller_process_gives_its_loop_the_gil_back_within_a_millisecond():
    """Solver threads must not hold the event loop off for the default 5 ms after each of
    its I/O operations (karpy.base.gil); checked in a fresh interpreter so this test
    process keeps its own setting."""
    code = (
        "import asyncio, sys\n"
        "from karpy.settings import Settings\n"
        "from karpy.settings.process import apply_to_process\n"
        "async def main():\n"
        "    apply_to_process(Settings(cluster_name='test', cloud_provider='fake'))\n"
        "    print(sys.getswitchinterval())\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    assert float(out.stdout.strip().splitlines()[-1]) <= 0.001


def test_settings_asking_for_what_karpy_lacks_are_one_warning_each_and_defaults_are_quiet():
    assert inert_settings(settings_from({})) == {}
    asking = settings_from({"ENABLE_ZONAL_SHIFT": "true", "IGNORE_DRA_REQUESTS": "false",
                            "FEATURE_GATES": "StaticCapacity=true,CapacityBuffer=true",
                            "AWS_FEATURE_GATES": "NodeClassCEL=true",
                            "DISABLE_DRY_RUN": "true"})  # fmt: skip
    assert set(inert_settings(asking)) == {
        "ENABLE_ZONAL_SHIFT=true", "IGNORE_DRA_REQUESTS=false",
        "AWS_FEATURE_GATES NodeClassCEL=true",
    }, "StaticCapacity and CapacityBuffer are acted on"  # fmt: skip
    stream = io.StringIO()
    configure_logging("info", stream=stream)
    try:
        asyncio.run(_apply(settings_from({"ENABLE_ZONAL_SHIFT": "true"})))
    finally:
        structlog.reset_defaults()
    (line,) = [orjson.loads(text) for text in stream.getvalue().splitlines()]
    assert (line["level"], line["message"]) == ("WARN", "setting has no effect in karpy yet")
    assert line["setting"] == "ENABLE_ZONAL_SHIFT=true"
    assert "stay in use" in line["instead"]
