"""docs/scheduler-profile.md hands operators kube-scheduler configuration to paste: every
`KubeSchedulerConfiguration` in it is valid YAML that uses only kube-scheduler's own field
names (``k8s.io/kube-scheduler/config/v1``) and sets NodeResourcesFit's MostAllocated
scoring on CPU and memory; the second scheduler's name is the one the pods are told to
use; and the metrics, outcomes and sandbox flag the page names are karpy's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from karpy.operator.metricsdoc import controller_registry, describe
from karpy.provisioning.nominations import Ended
from karpy.provisioning.outcomes import FIRST, REPLANNED
from karpy.sandbox.cluster.scheduleone import SCORING_STRATEGIES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scheduler-profile.md"
TEXT = PAGE.read_text()

# JSON names of the fields these documents may use, from kube-scheduler's config/v1 types
# (KubeSchedulerConfiguration, KubeSchedulerProfile, PluginConfig, NodeResourcesFitArgs,
# ScoringStrategy, ResourceSpec) and component-base's LeaderElectionConfiguration and
# ClientConnectionConfiguration.
TOP_LEVEL = {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
             "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
             "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
             "delayCacheUntilActive"}  # fmt: skip
LEADER_ELECTION = {"leaderElect", "leaseDuration", "renewDeadline", "retryPeriod",
                   "resourceLock", "resourceName", "resourceNamespace"}  # fmt: skip
CLIENT_CONNECTION = {"kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"}
PROFILE = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
PLUGIN_CONFIG = {"name", "args"}
FIT_ARGS = {"ignoredResources", "ignoredResourceGroups", "scoringStrategy"}
SCORING_STRATEGY = {"type", "resources", "requestedToCapacityRatio"}
RESOURCE_SPEC = {"name", "weight"}


def yaml_blocks() -> list[Any]:
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", TEXT, re.S)]


def configurations() -> list[dict[str, Any]]:
    return [
        doc
        for doc in yaml_blocks()
        if isinstance(doc, dict) and doc.get("kind") == "KubeSchedulerConfiguration"
    ]


def unknown(obj: dict[str, Any], known: set[str]) -> set[str]:
    return set(obj) - known


def test_every_configuration_uses_only_kube_schedulers_fields():
    found = configurations()
    assert len(found) >= 2, "the self-managed and the second-scheduler configurations"
    for config in found:
        assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
        assert unknown(config, TOP_LEVEL) == set()
        assert unknown(config.get("leaderElection", {}), LEADER_ELECTION) == set()
        assert unknown(config.get("clientConnection", {}), CLIENT_CONNECTION) == set()
        for profile in config["profiles"]:
            assert unknown(profile, PROFILE) == set()
            for plugin in profile.get("pluginConfig", []):
                assert unknown(plugin, PLUGIN_CONFIG) == set()


def test_every_profile_scores_node_resources_fit_most_allocated_on_cpu_and_memory():
    for config in configurations():
        for profile in config["profiles"]:
            (fit,) = [p for p in profile["pluginConfig"] if p["name"] == "NodeResourcesFit"]
            assert unknown(fit["args"], FIT_ARGS) == set()
            strategy = fit["args"]["scoringStrategy"]
            assert unknown(strategy, SCORING_STRATEGY) == set()
            assert strategy["type"] == "MostAllocated"
            for resource in strategy["resources"]:
                assert unknown(resource, RESOURCE_SPEC) == set()
                assert 1 <= resource["weight"] <= 100  # kube-scheduler's allowed weights
            assert {r["name"]: r["weight"] for r in strategy["resources"]} == {
                "cpu": 1,
                "memory": 1,
            }


def test_the_second_scheduler_has_its_own_lease_and_the_pods_name_it():
    (second,) = [
        c for c in configurations()
        if c["profiles"][0]["schedulerName"] != "default-scheduler"
    ]  # fmt: skip
    name = second["profiles"][0]["schedulerName"]
    assert second["leaderElection"]["resourceName"] == name != "kube-scheduler"
    pod_specs = [
        doc["spec"]["template"]["spec"]
        for doc in yaml_blocks()
        if isinstance(doc, dict) and "template" in doc.get("spec", {})
    ]
    assert pod_specs == [{"schedulerName": name}]


def test_the_metrics_outcomes_and_plans_named_are_karpys():
    registered = {doc.name for doc in describe(controller_registry())}
    named = set(re.findall(r"\b(karpy_[a-z_]+?)(?:_total)?\b", TEXT))
    assert named, "the page names the metrics to read"
    assert named <= registered, named - registered
    for outcome in Ended:
        assert f"`{outcome.value}`" in TEXT, outcome
    assert f'plan="{FIRST}"' in TEXT
    assert f'plan="{REPLANNED}"' in TEXT


def test_the_sandbox_flag_shown_exists():
    assert "--scheduler-scoring MostAllocated" in TEXT
    assert "MostAllocated" in SCORING_STRATEGIES
