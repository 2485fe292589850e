"""The Grafana dashboards (``deploy/dashboards/``) read only what karpy exports.

Every PromQL expression of every panel and variable is scanned for metric names
(identifiers that are not PromQL functions, keywords, label names or ``$variables``);
a controller then runs against the sandbox cluster with the fake cloud, pods start on
the nodes it launches and the nodes are consolidated away, and each of those names must
have samples on the controller's ``/metrics`` (a histogram's as ``_bucket``/``_count``).
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.cluster import EXAMPLES, Api, deployment, running_karpy
from tests.fixtures.waiting import eventually_fine

DASHBOARDS = sorted((Path(__file__).resolve().parents[2] / "deploy" / "dashboards").glob("*.json"))

PROMQL_WORDS = {
    # aggregation operators
    "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values", "bottomk",
    "topk", "quantile", "limitk", "limit_ratio",
    # keywords and set operators
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "atan2", "inf", "nan",
}  # fmt: skip
GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
IDENTIFIER = re.compile(r"(?<![$\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\()?")


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # label values and strings
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # range and subquery windows
    text = GROUPING.sub(" ", text)  # label lists
    names = set()
    for match in IDENTIFIER.finditer(text):
        word, call = match.group(1), match.group(2)
        if call or word in PROMQL_WORDS:
            continue  # a function (rate, histogram_quantile, label_values ...) or keyword
        names.add(word)
    return names


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def expressions(dashboard: dict[str, Any]) -> list[str]:
    found = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", ())]
    variables = dashboard["templating"]["list"]
    found.extend(v["query"]["query"] for v in variables if v["type"] == "query")
    return found


def test_the_scanner_finds_metrics_and_skips_functions_labels_and_variables():
    expr = ('histogram_quantile(0.99, sum by (le, controller) (rate(controller_runtime_'
            'reconcile_time_seconds_bucket{job=~"$job", controller=~"a|b"}[10m]))) '
            '/ on (controller) group_left count(karpenter_pods_state{phase="R"})')  # fmt: skip
    assert metric_names(expr) == {"controller_runtime_reconcile_time_seconds_bucket",
                                  "karpenter_pods_state"}  # fmt: skip
    assert metric_names("label_values(karpenter_nodes_allocatable, nodepool)") == {
        "karpenter_nodes_allocatable",
        "nodepool",
    }  # the label is filtered against /metrics
    assert metric_names("sum by ($distribution_filter) (karpenter_pods_state)") == {
        "karpenter_pods_state"}  # fmt: skip


def scanned(dashboard: dict[str, Any]) -> set[str]:
    names: set[str] = set()
    for expr in expressions(dashboard):
        # label_values(metric{...}, label): only the first argument is a metric
        read = expr.removeprefix("label_values(").rsplit(",", 1)[0] if expr.startswith(
            "label_values(") else expr  # fmt: skip
        names |= metric_names(read)
    return names


@pytest.mark.parametrize("path", DASHBOARDS, ids=lambda p: p.name)
def test_dashboard_is_importable_with_a_prometheus_datasource_variable(path):
    dashboard = load(path)
    assert dashboard["uid"] and dashboard["title"].startswith("karpy ")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["description"], panel["title"]
        for target in panel["targets"]:
            used = set(re.findall(r"\$(\w+)", target["expr"]))
            assert used <= set(variables), (panel["title"], used - set(variables))
            assert target["expr"].count("(") == target["expr"].count(")"), panel["title"]


def test_capacity_dashboard_reads_the_metrics_karpenter_names():
    (capacity,) = [load(p) for p in DASHBOARDS if p.name == "karpy-capacity.json"]
    assert {"karpenter_nodes_allocatable", "karpenter_nodes_total_pod_requests",
            "karpenter_nodes_total_daemon_requests", "karpenter_pods_state",
            "karpenter_nodepools_usage", "karpenter_nodepools_limit",
            } <= scanned(capacity)  # fmt: skip
    (performance,) = [load(p) for p in DASHBOARDS if p.name == "karpy-performance.json"]
    assert {"karpenter_pods_startup_duration_seconds",
            "karpenter_nodes_termination_duration_seconds"} <= scanned(performance)  # fmt: skip


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> its samples."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def daemonset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": name}}, "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"terminationGracePeriodSeconds": 0, "containers": [{
                "name": "agent", "image": "pause",
                "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}},
    }  # fmt: skip


def pool() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text())
    doc["spec"]["limits"] = {"cpu": "1000", "memory": "4000Gi"}  # the summary shows limits
    doc["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "2s",
                                 "budgets": [{"nodes": "100%"}]}  # fmt: skip
    return doc


def running_web_pods(api: Api, expected: int) -> str:
    pods = [p for p in api.list("pods") if p["metadata"]["name"].startswith("web-")]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    return "" if len(running) == expected else f"{len(running)}/{expected} web pods running"


def no_managed_nodes(api: Api) -> str:
    claims = api.list("nodeclaims")
    return "" if not claims else f"{len(claims)} nodeclaims left"


@pytest.mark.slow
def test_every_metric_the_dashboards_read_is_exported_by_a_running_controller(tmp_path):
    wanted = set().union(*(scanned(load(p)) for p in DASHBOARDS))
    with running_karpy(tmp_path, nodepool=pool()) as run:
        api, karpy = run.api, run.controller
        api.create("daemonsets", daemonset("agent"))
        api.create("deployments", deployment("web", 3, cpu="1", memory="1Gi"))
        eventually_fine(lambda: running_web_pods(api, 3), within=90)

        def startup_observed() -> str:
            counts = scrape(karpy.metrics_port).get(
                "karpenter_pods_startup_duration_seconds_count", []
            )
            return "" if counts and counts[0][1] >= 3 else f"startup counts {counts}"

        eventually_fine(startup_observed, within=30)
        while_running = scrape(karpy.metrics_port)
        api.patch("deployments", "web", {"spec": {"replicas": 0}})
        eventually_fine(lambda: no_managed_nodes(api), within=60)

        def terminations_observed() -> str:
            found = scrape(karpy.metrics_port).get(
                "karpenter_nodes_termination_duration_seconds_count", []
            )
            return "" if found and sum(v for _, v in found) >= 1 else "no termination yet"

        eventually_fine(terminations_observed, within=30)
        after = scrape(karpy.metrics_port)

    exported = {name for name, samples in (*while_running.items(), *after.items()) if samples}
    missing = sorted(name for name in wanted if name not in exported)
    assert missing == [], f"dashboards read metrics /metrics does not have: {missing}"

    # the new per-node gauges describe the nodes and pods that ran
    def per_node(name: str, resource: str) -> list[float]:
        return [v for labels, v in while_running[name]
                if labels["resource_type"] == resource and labels["managed"] == "true"]  # fmt: skip

    assert per_node("karpenter_nodes_allocatable", "cpu")
    assert sum(per_node("karpenter_nodes_total_pod_requests", "cpu")) >= 3.0
    daemon_cpu = per_node("karpenter_nodes_total_daemon_requests", "cpu")
    assert daemon_cpu and all(v == pytest.approx(0.1) for v in daemon_cpu)
    quantiles = {labels["quantile"]: v for labels, v in
                 after["karpenter_pods_startup_duration_seconds"]}  # fmt: skip
    assert set(quantiles) == {"0", "0.5", "0.9", "0.99", "1"}
    # Startups are whole seconds (creationTimestamp to the Ready condition's time), the
    # DaemonSet's pods start the moment their node is there, and in the sandbox a web pod
    # can be Running within its creation second: a run may measure every startup as 0 s.
    # What must hold is that they were measured and are sane.
    assert 0 <= quantiles["0"] <= quantiles["0.5"] <= quantiles["1"] < 120
