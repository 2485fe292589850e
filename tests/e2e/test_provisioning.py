"""End to end: ``karpy sandbox cluster`` and ``karpy controller`` (fake cloud) as separate
processes, driven only through the Kubernetes API, as karpy runs in a real cluster."""

from __future__ import annotations

import time

import pytest

from tests.e2e.chartrbac import skip_if_run_as_chart_account
from tests.e2e.cluster import (
    Obj,
    all_running,
    condition,
    deployment,
    running_karpy,
)
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]


def spread(key: str, max_skew: int = 1) -> Obj:
    return {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule"}


def one_per_host(app: str) -> Obj:
    term = {"topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": app}}}  # fmt: skip
    required = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    return {"affinity": {"podAntiAffinity": required}}


def test_pending_deployments_end_running_on_initialized_nodeclaims(tmp_path, rbac=False):
    """``rbac``: karpy runs as the chart's ServiceAccount against a ``--rbac`` sandbox
    (tests/deploy/test_rbac_from_calls.py runs it so)."""
    skip_if_run_as_chart_account(rbac)
    with running_karpy(tmp_path, rbac="provisioning" if rbac else None, start=False) as run:
        api = run.api
        existing = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "static-1", "labels": {
                "kubernetes.io/hostname": "static-1", "topology.kubernetes.io/zone": "test-zone-a",
                "kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "tier": "static"}},
            "status": {"capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                       "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"}},
        }  # fmt: skip
        api.create("nodes", existing)
        run.start()
        api.create("deployments", deployment("fits-existing", 10, cpu="1"))
        eventually_fine(lambda: all_running(api, 10), within=60)
        assert api.list("nodeclaims") == [], "pods that fit an existing node launch nothing"
        workloads = [
            deployment("generic", 200, cpu="500m", memory="512Mi"),
            deployment("zonal", 120, cpu="250m", memory="256Mi", spec={
                "topologySpreadConstraints": [
                    {**spread("topology.kubernetes.io/zone"),
                     "labelSelector": {"matchLabels": {"app": "zonal"}}}]}),
            deployment("arm", 100, cpu="1", memory="2Gi",
                       spec={"nodeSelector": {"kubernetes.io/arch": "arm64"}}),
            deployment("spread-host", 40, cpu="100m", memory="128Mi",
                       spec=one_per_host("spread-host")),
            deployment("ondemand", 30, cpu="2", memory="4Gi",
                       spec={"nodeSelector": {"karpenter.sh/capacity-type": "on-demand"}}),
        ]  # fmt: skip
        for workload in workloads:
            api.create("deployments", workload)
        started = time.monotonic()
        eventually_fine(lambda: all_running(api, 500), within=240)
        print(f"490 pods running after {time.monotonic() - started:.1f}s")
        pods = api.list("pods")
        nodes = {n["metadata"]["name"]: n for n in api.list("nodes")}
        for pod in pods:
            labels = nodes[pod["spec"]["nodeName"]]["metadata"]["labels"]
            app = pod["metadata"]["labels"]["app"]
            if app == "arm":
                assert labels["kubernetes.io/arch"] == "arm64"
            if app == "ondemand":
                assert labels["karpenter.sh/capacity-type"] == "on-demand"
            if app == "fits-existing":
                assert pod["spec"]["nodeName"] == "static-1"
        hosts = [
            p["spec"]["nodeName"] for p in pods if p["metadata"]["labels"]["app"] == "spread-host"
        ]
        assert len(set(hosts)) == 40, "hostname anti-affinity: one per node"
        zones: dict[str, int] = {}
        for pod in pods:
            if pod["metadata"]["labels"]["app"] == "zonal":
                zone = nodes[pod["spec"]["nodeName"]]["metadata"]["labels"][
                    "topology.kubernetes.io/zone"
                ]
                zones[zone] = zones.get(zone, 0) + 1
        assert max(zones.values()) - min(zones.values()) <= 1, zones
        claims = api.list("nodeclaims")
        fake_nodes = [
            n for n in nodes.values()
            if (n.get("spec") or {}).get("providerID", "").startswith("fake://")
        ]  # fmt: skip
        assert len(claims) == len(fake_nodes)
        assert all(condition(c, "Initialized") == "True" for c in claims)
        used = {p["spec"]["nodeName"] for p in pods}
        assert all(n["metadata"]["name"] in used for n in fake_nodes), (
            "every node karpy launched got pods: nothing launched twice"
        )
