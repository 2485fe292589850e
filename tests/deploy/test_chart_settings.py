"""Every karpy setting is reachable from a chart value named as Karpenter's chart names it
(karpy's own under ``settings.*``), and the values become the controller's environment the
way Karpenter's chart maps them: fixed variables, feature gates in Karpenter's order, false
booleans left out, ``controller.env`` winning over the chart's variable of the same name."""

from __future__ import annotations

import base64
from typing import Any

from karpy.settings.gates import AWSFeatureGates, FeatureGates
from karpy.settings.options import OPTIONS, Option
from tests.deploy.conftest import controller, env_of, helm_template, render_chart


def test_environment_from_karpenters_fixed_mappings(default_objects):
    env = env_of(default_objects)
    assert env["SYSTEM_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert env["CPU_REQUESTS"] == {
        "resourceFieldRef": {
            "containerName": "controller", "divisor": "1m", "resource": "requests.cpu"
        }
    }  # fmt: skip
    assert env["MEMORY_LIMIT"] == {
        "resourceFieldRef": {
            "containerName": "controller", "divisor": "0", "resource": "limits.memory"
        }
    }  # fmt: skip
    assert env["CLUSTER_NAME"] == "test-cluster"
    assert env["METRICS_PORT"] == "8080"
    assert env["HEALTH_PROBE_PORT"] == "8081"


def test_feature_gates_are_always_rendered_in_karpenters_order(default_objects):
    env = env_of(default_objects)
    assert env["FEATURE_GATES"] == (
        "ReservedCapacity=true,SpotToSpotConsolidation=false,NodeRepair=false,"
        "NodeOverlay=false,StaticCapacity=false,CapacityBuffer=false,"
        "TerminateFirstDrift=true,TerminateFirstRepair=true,PodDeletionCostManagement=false"
    )
    assert env["AWS_FEATURE_GATES"] == "NodeClassCEL=false,RebootForRepair=false"


def test_a_gate_karpy_does_not_know_is_passed_on_for_karpy_to_ignore():
    objects = render_chart({"settings": {"featureGates": {"someLaterGate": True}}})
    assert env_of(objects)["FEATURE_GATES"].endswith(",SomeLaterGate=true")


def test_false_booleans_are_omitted_but_ignore_dra_requests_false_is_rendered(default_objects):
    env = env_of(default_objects)
    for name in ("ISOLATED_VPC", "EKS_CONTROL_PLANE", "DISABLE_DRY_RUN", "ENABLE_PROFILING",
                 "COEXIST_WITH_KARPENTER", "DISABLE_LEADER_ELECTION"):  # fmt: skip
        assert name not in env
    assert env["IGNORE_DRA_REQUESTS"] == "true"
    objects = render_chart({"settings": {"ignoreDRARequests": False}})
    assert env_of(objects)["IGNORE_DRA_REQUESTS"] == "false"


def test_zero_is_a_value_not_an_absence():
    objects = render_chart({"settings": {"vmMemoryOverheadPercent": 0}})
    assert env_of(objects)["VM_MEMORY_OVERHEAD_PERCENT"] == "0"


def test_controller_env_replaces_the_charts_variable_of_the_same_name():
    objects = render_chart(
        {"controller": {"env": [{"name": "BATCH_IDLE_DURATION", "value": "2s"}]}}
    )
    assert env_of(objects)["BATCH_IDLE_DURATION"] == "2s"  # and no duplicate (env_of checks)


def test_settings_values_pass_through_tpl():
    objects = render_chart({"settings": {"clusterName": "{{ .Release.Name }}-east"}})
    assert env_of(objects)["CLUSTER_NAME"] == "karpy-east"


def test_scheduler_config_is_refused_at_render_time():
    result = helm_template({"settings": {"clusterName": "c", "schedulerConfig": "x: y"}})
    assert result.returncode != 0
    assert "schedulerConfig is not supported by karpy" in result.stderr


# The settings walk: every option of karpy/settings must be reachable from a chart value.
# Values named by Karpenter's chart outside `settings.*`, and its acronyms in names.
_SPECIAL_PATHS = {
    "log_level": "logLevel",
    "metrics_port": "controller.metrics.port",
    "health_probe_port": "controller.healthProbe.port",
}
_ACRONYMS = {"ca": "CA", "vpc": "VPC", "dra": "DRA", "enis": "ENIs", "qps": "QPS"}
_CA_PEM = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
_CANDIDATES = {  # texts tried in order, the first valid non-default one used
    "true|false": ["true", "false"],
    "DURATION": ["17s", "2m"],
    "N": ["7"],
    "PORT": ["9443"],
    "ADDRESS": ["127.0.0.1"],
    "FRACTION": ["0.1"],
    "NAME": ["karpy-test-1", "fake"],
    "URL": ["https://api.example.com"],
    "BASE64": [_CA_PEM.decode()],
    "PATH": ["/etc/karpy/file"],
    "POLICY": ["Ignore", "BestEffort"],
    "NAMESPACE": ["karpy-system"],
    "OFFERINGS": ["m5.large:*:spot"],
    "LEVEL": ["debug"],
    "FORMAT": ["console"],
}
_BY_ENV_ONLY = {  # checked by their own tests below
    "feature_gates", "aws_feature_gates", "cpu_requests", "memory_limit",
    "log_output_paths", "log_error_output_paths",
}  # fmt: skip


def value_path(option: Option) -> str:
    if option.field in _SPECIAL_PATHS:
        return _SPECIAL_PATHS[option.field]
    head, *rest = option.field.split("_")
    return "settings." + head + "".join(_ACRONYMS.get(w, w.capitalize()) for w in rest)


def non_default_text(option: Option) -> str:
    assert option.metavar in _CANDIDATES, f"no candidate values for {option.metavar}"
    default = option.parse(option.default)
    for text in _CANDIDATES[option.metavar]:
        try:
            value = option.parse(text)
        except ValueError:
            continue
        if value != default:
            return text
    raise AssertionError(f"no non-default value for {option.env}")


def as_value(option: Option, text: str) -> Any:
    if option.metavar == "true|false":
        return text == "true"
    if option.metavar in ("N", "PORT"):
        return int(text)
    return text


def nested(path: str, value: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    node = out
    *parents, leaf = path.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return out


def merge(into: dict[str, Any], more: dict[str, Any]) -> dict[str, Any]:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            merge(into[key], value)
        else:
            into[key] = value
    return into


def test_every_karpy_setting_is_settable_from_a_value():
    """Each option of karpy/settings, set to a non-default value through the value named
    for it, appears in the controller's environment with that value. All options go into
    one values file (one render); a new setting without a chart value fails here."""
    values: dict[str, Any] = {}
    expected: dict[str, str] = {}
    for option in OPTIONS:
        if option.field in _BY_ENV_ONLY:
            continue
        text = non_default_text(option)
        merge(values, nested(value_path(option), as_value(option, text)))
        expected[option.env] = text
    values["replicas"] = 1  # disableLeaderElection=true needs one replica
    env = env_of(render_chart(values))
    assert {name: env.get(name) for name in expected} == expected


def test_every_feature_gate_is_settable_from_a_value():
    for gates, key, env_name in (
        (FeatureGates, "featureGates", "FEATURE_GATES"),
        (AWSFeatureGates, "awsFeatureGates", "AWS_FEATURE_GATES"),
    ):
        flipped = {
            name[0].lower() + name[1:]: not getattr(gates(), field)
            for name, field in gates.NAMES.items()
        }
        rendered = env_of(render_chart({"settings": {key: flipped}}))[env_name]
        parsed = dict(item.split("=") for item in rendered.split(","))
        assert parsed == {
            name: str(not getattr(gates(), field)).lower() for name, field in gates.NAMES.items()
        }


def test_log_paths_are_joined_and_resources_reach_cpu_requests_and_memory_limit():
    objects = render_chart(
        {
            "logOutputPaths": ["stdout", "/var/log/karpy.log"],
            "logErrorOutputPaths": ["stdout"],
            "controller": {"resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "3Gi"}}},
        }
    )
    env = env_of(objects)
    assert env["LOG_OUTPUT_PATHS"] == "stdout,/var/log/karpy.log"
    assert env["LOG_ERROR_OUTPUT_PATHS"] == "stdout"
    resources = controller(objects)["resources"]
    assert resources["requests"]["cpu"] == "500m"  # CPU_REQUESTS reads it (resourceFieldRef)
    assert resources["limits"]["memory"] == "3Gi"  # MEMORY_LIMIT reads it
