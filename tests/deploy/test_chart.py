"""The Helm chart in deploy/charts/karpy, rendered by the real helm: it lints, its values
are Karpenter's (a Karpenter values file renders; a typo in a known key does not), every
object is valid Kubernetes, the controller pod is hardened and placed as Karpenter's is,
and docs/helm.md lists every value. (Settings → environment: test_chart_settings.py;
RBAC: test_chart_rbac.py.)"""

from __future__ import annotations

import json
import tomllib
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from karpy.apis.crdgen import render_all
from karpy.settings.options import OPTIONS
from tests.deploy.conftest import (
    CHART_DIR,
    KARPENTER_STYLE_VALUES,
    ROOT,
    controller,
    deployment,
    env_of,
    find,
    helm,
    helm_template,
    render_chart,
)

CLUSTER_NAME_REQUIRED = "Chart cannot be installed without a valid settings.clusterName!"
SERVICE_MONITOR_API = "monitoring.coreos.com/v1"


# --- the chart as a package -------------------------------------------------------------


def test_chart_version_is_the_projects_version():
    chart = yaml.safe_load((CHART_DIR / "Chart.yaml").read_text())
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert chart["apiVersion"] == "v2"
    assert chart["name"] == "karpy"
    assert chart["version"] == chart["appVersion"] == project["version"]


def test_chart_crds_are_the_generators_output_as_in_deploy_crds():
    generated = render_all()
    assert sorted(p.name for p in (CHART_DIR / "crds").iterdir()) == sorted(generated)
    for name, text in generated.items():
        chart_copy = (CHART_DIR / "crds" / name).read_bytes()
        assert chart_copy == (ROOT / "deploy" / "crds" / name).read_bytes(), name
        assert chart_copy == text.encode(), f"run python -m karpy.apis.crdgen ({name})"


def test_helm_lint_strict_passes_with_the_default_values():
    result = helm("lint", "--strict", str(CHART_DIR), "--set", "settings.clusterName=test-cluster")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_helm_lint_strict_passes_with_karpenter_style_values():
    result = helm("lint", "--strict", str(CHART_DIR), values=KARPENTER_STYLE_VALUES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_rendering_without_a_cluster_name_fails_with_karpenters_message():
    result = helm_template(None)
    assert result.returncode != 0
    assert CLUSTER_NAME_REQUIRED in result.stderr


@pytest.mark.parametrize(
    "typo",
    [
        {"settings": {"clusterName": "c", "interuptionQueue": "q"}},
        {"settings": {"clusterName": "c"}, "controller": {"resorces": {}}},
        {"settings": {"clusterName": "c"}, "serviceMonitor": {"enable": True}},
        {"settings": {"clusterName": "c"}, "serviceAccount": {"anotations": {}}},
        {"settings": {"clusterName": "c"}, "replica": 3},
    ],
    ids=["settings", "controller", "serviceMonitor", "serviceAccount", "top-level"],
)
def test_a_typo_in_a_known_key_fails_the_schema(typo):
    result = helm_template(typo)
    assert result.returncode != 0
    assert "additional properties" in result.stderr


def test_the_values_schema_names_each_key_once():
    """JSON allows a key twice and keeps the last: a second entry for a setting silently
    replaces the first (it happened: a real setting shadowed by its old placeholder)."""

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), sorted(k for k in keys if keys.count(k) > 1)
        return dict(pairs)

    json.loads((CHART_DIR / "values.schema.json").read_text(), object_pairs_hook=unique)


def test_a_value_of_the_wrong_type_fails_the_schema():
    result = helm_template({"settings": {"clusterName": "c", "isolatedVPC": "yes"}})
    assert result.returncode != 0
    assert "isolatedVPC" in result.stderr


# Every value of Karpenter's chart (v1.14) with its default, as that chart documents them.
KARPENTER_DEFAULT_VALUES: dict[str, Any] = {
    "nameOverride": "", "fullnameOverride": "", "additionalLabels": {},
    "additionalAnnotations": {}, "imagePullPolicy": "IfNotPresent", "imagePullSecrets": [],
    "service": {"annotations": {}},
    "serviceAccount": {"create": True, "name": "", "annotations": {}},
    "additionalClusterRoleRules": [],
    "serviceMonitor": {"enabled": False, "additionalLabels": {}, "relabelings": [],
                       "metricRelabelings": [], "endpointConfig": {}, "sampleLimit": None},
    "replicas": 2, "revisionHistoryLimit": 10,
    "strategy": {"rollingUpdate": {"maxUnavailable": 1}},
    "podLabels": {}, "podAnnotations": {},
    "podDisruptionBudget": {"name": "karpenter", "maxUnavailable": 1},
    "podSecurityContext": {"fsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}},
    "priorityClassName": "system-cluster-critical", "terminationGracePeriodSeconds": None,
    "hostNetwork": False, "schedulerName": "default-scheduler", "dnsPolicy": "ClusterFirst",
    "dnsConfig": {}, "initContainers": {}, "nodeSelector": {"kubernetes.io/os": "linux"},
    "extraVolumes": [],
    "controller": {
        "containerName": "controller",
        "image": {"repository": "public.ecr.aws/karpenter/controller", "tag": "1.14.1",
                  "digest": "sha256:" + "0" * 64},
        "env": [], "envFrom": [],
        "securityContext": {"appArmorProfile": {}, "seLinuxOptions": {}, "seccompProfile": {}},
        "resources": {}, "extraVolumeMounts": [], "sidecarContainer": [],
        "sidecarVolumeMounts": [], "metrics": {"port": 8080}, "healthProbe": {"port": 8081},
    },
    "logLevel": "info", "logOutputPaths": ["stdout"], "logErrorOutputPaths": ["stderr"],
    "settings": {
        "batchMaxDuration": "10s", "batchIdleDuration": "1s", "preferencePolicy": "Respect",
        "minValuesPolicy": "Strict", "clusterCABundle": "", "clusterName": "prod",
        "clusterEndpoint": "", "isolatedVPC": False, "eksControlPlane": False,
        "vmMemoryOverheadPercent": 0.075, "interruptionQueue": "", "enableZonalShift": False,
        "reservedENIs": "0", "ignoreDRARequests": True,
        "disableClusterStateObservability": False, "disableDryRun": False,
        "amiRefreshInterval": "1m", "subnetRefreshInterval": "1m",
        "featureGates": {"nodeRepair": False, "nodeOverlay": False, "reservedCapacity": True,
                         "spotToSpotConsolidation": False, "staticCapacity": False,
                         "capacityBuffer": False},
        "awsFeatureGates": {"nodeClassCEL": False},
    },
}  # fmt: skip


def test_karpenters_default_values_file_is_accepted_whole():
    objects = render_chart(KARPENTER_DEFAULT_VALUES)
    assert env_of(objects)["CLUSTER_NAME"] == "prod"
    assert find(objects, "PodDisruptionBudget")["metadata"]["name"] == "karpenter"


def test_a_karpenter_values_file_renders_with_its_settings(default_objects):
    objects = render_chart(KARPENTER_STYLE_VALUES, api_versions=(SERVICE_MONITOR_API,))
    env = env_of(objects)
    assert env["CLUSTER_NAME"] == "prod-east"
    assert env["INTERRUPTION_QUEUE"] == "prod-east-interruptions"
    assert env["BATCH_MAX_DURATION"] == "15s"
    assert env["LOG_LEVEL"] == "debug"
    assert env["AWS_REGION"] == "us-east-1"
    assert "SpotToSpotConsolidation=true" in env["FEATURE_GATES"]
    assert "NodeRepair=true" in env["FEATURE_GATES"]
    account = find(objects, "ServiceAccount")
    assert account["metadata"]["annotations"] == {
        "eks.amazonaws.com/role-arn": "arn:aws:iam::111122223333:role/karpy"
    }
    assert deployment(objects)["spec"]["replicas"] == 3
    pod = deployment(objects)["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"example.com/scrape": "false"}
    assert {"key": "dedicated", "value": "system", "effect": "NoSchedule"} in pod["spec"][
        "tolerations"
    ]
    monitor = find(objects, "ServiceMonitor")
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    assert monitor["spec"]["endpoints"] == [{"port": "http-metrics", "path": "/metrics"}]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["karpy"]}


def test_service_monitor_is_rendered_only_where_the_cluster_serves_its_api():
    enabled = {"serviceMonitor": {"enabled": True}}
    assert not [o for o in render_chart(enabled) if o["kind"] == "ServiceMonitor"]
    assert not [
        o
        for o in render_chart(api_versions=(SERVICE_MONITOR_API,))
        if o["kind"] == "ServiceMonitor"
    ]
    with_api = render_chart(enabled, api_versions=(SERVICE_MONITOR_API,))
    assert find(with_api, "ServiceMonitor")["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "karpy",
        "app.kubernetes.io/instance": "karpy",
    }


# --- every object is valid Kubernetes ---------------------------------------------------


@pytest.mark.parametrize("version", ["1.29.0", kubernetes_validate.latest_version()])
@pytest.mark.parametrize("case", ["default", "karpenter-style"])
def test_every_rendered_object_is_valid_under_strict_validation(case, version):
    values = KARPENTER_STYLE_VALUES if case == "karpenter-style" else None
    objects = render_chart(values, api_versions=(SERVICE_MONITOR_API,), include_crds=True)
    checked = set()
    for obj in objects:
        if obj["kind"] == "ServiceMonitor":
            continue  # prometheus-operator's CRD kind: kubernetes-validate has no schema for it
        kubernetes_validate.validate(obj, version, strict=True)
        checked.add(obj["kind"])
    assert {"Deployment", "CustomResourceDefinition", "ClusterRole", "Role"} <= checked


# --- the controller pod -----------------------------------------------------------------


def test_controller_container_is_hardened(default_objects):
    context = controller(default_objects)["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["runAsUser"] == 65532
    assert context["runAsGroup"] == 65532
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["privileged"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_pod_security_context_sets_fs_group_and_seccomp(default_objects):
    pod = deployment(default_objects)["spec"]["template"]["spec"]
    assert pod["securityContext"]["fsGroup"] == 65532
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_hardening_survives_a_replaced_pod_security_context():
    objects = render_chart({"podSecurityContext": {"fsGroup": 1000}})
    context = controller(objects)["securityContext"]
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert context["runAsUser"] == 65532


def test_the_pod_mounts_its_token_and_the_service_account_does_not(default_objects):
    pod = deployment(default_objects)["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == "karpy"
    account = find(default_objects, "ServiceAccount")
    assert account["automountServiceAccountToken"] is False
    assert "annotations" not in account["metadata"]  # pod identity needs none


def test_an_existing_service_account_can_be_named_instead():
    objects = render_chart({"serviceAccount": {"create": False, "name": "platform-karpy"}})
    assert not [o for o in objects if o["kind"] == "ServiceAccount"]
    assert deployment(objects)["spec"]["template"]["spec"]["serviceAccountName"] == (
        "platform-karpy"
    )
    binding = find(objects, "ClusterRoleBinding", "karpy-core")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "platform-karpy", "namespace": "karpy"}
    ]


def test_controller_pod_is_placed_as_a_critical_spread_pair(default_objects):
    spec = deployment(default_objects)["spec"]
    pod = spec["template"]["spec"]
    selector = {"app.kubernetes.io/name": "karpy", "app.kubernetes.io/instance": "karpy"}
    assert spec["replicas"] == 2
    assert spec["selector"]["matchLabels"] == selector
    assert pod["priorityClassName"] == "system-cluster-critical"
    required = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "DoesNotExist"}]}
    ]
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti == [{"topologyKey": "kubernetes.io/hostname",
                     "labelSelector": {"matchLabels": selector}}]  # fmt: skip
    assert pod["topologySpreadConstraints"] == [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": selector},
        }
    ]
    assert {"key": "CriticalAddonsOnly", "operator": "Exists"} in pod["tolerations"]


def test_probes_ports_and_resources(default_objects):
    container = controller(default_objects)
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["ports"] == [
        {"name": "http-metrics", "containerPort": 8080, "protocol": "TCP"},
        {"name": "http", "containerPort": 8081, "protocol": "TCP"},
    ]
    assert container["resources"]["requests"]["cpu"] == "1"
    assert container["resources"]["limits"]["memory"] == "1Gi"
    assert container["image"] == "karpy:0.1.0"


def test_image_reference_takes_tag_and_digest():
    digest = "sha256:" + "ab" * 32
    image = {"repository": "registry.example/karpy", "tag": "9.9.9", "digest": digest}
    objects = render_chart({"controller": {"image": image}})
    assert controller(objects)["image"] == f"registry.example/karpy:9.9.9@{digest}"


def test_disruption_budget_and_metrics_service(default_objects):
    budget = find(default_objects, "PodDisruptionBudget")
    assert budget["metadata"]["name"] == "karpy"
    assert budget["spec"]["maxUnavailable"] == 1
    assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow", (
        "a controller pod that is not ready must not block a node drain"
    )
    service = find(default_objects, "Service")
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "http-metrics", "port": 8080, "targetPort": "http-metrics", "protocol": "TCP"}
    ]


# --- docs -------------------------------------------------------------------------------

_OPAQUE = {  # values documented as a whole (free-form Kubernetes fields or maps)
    "additionalLabels", "additionalAnnotations", "service.annotations",
    "serviceAccount.annotations", "serviceMonitor.additionalLabels",
    "serviceMonitor.endpointConfig",
    "strategy", "podLabels", "podAnnotations", "podSecurityContext", "dnsConfig", "nodeSelector",
    "affinity", "controller.resources",
}  # fmt: skip


def value_paths(values: dict[str, Any], prefix: str = "") -> list[str]:
    paths = []
    for key, value in values.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and path not in _OPAQUE:
            paths.extend(value_paths(value, path + "."))
        else:
            paths.append(path)
    return paths


def test_docs_list_every_value_and_every_environment_variable(default_objects):
    docs = (ROOT / "docs" / "helm.md").read_text()
    values = yaml.safe_load((CHART_DIR / "values.yaml").read_text())
    missing = [p for p in value_paths(values) if f"`{p}`" not in docs]
    assert not missing, f"values missing from docs/helm.md: {missing}"
    env_names = {option.env for option in OPTIONS} | set(env_of(default_objects))
    assert not [n for n in sorted(env_names) if f"`{n}`" not in docs]
