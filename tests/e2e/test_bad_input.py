"""End to end: input karpy cannot serve is reported where users look (Events, NodePool
conditions) and never stops it from serving everything else."""

from __future__ import annotations

import copy
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from karpy.base.quantity import parse_quantity
from tests.e2e.cluster import (
    EXAMPLES,
    Api,
    Obj,
    all_running,
    condition,
    deployment,
    running_karpy,
)
from tests.e2e.processes import clean_env
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]

FAMILY = "karpenter.kwok.sh/instance-family"
POOL_LABEL = "karpenter.sh/nodepool"


def pool(name: str, *, family: str | None = None, nodeclass: str = "default") -> Obj:
    doc: Obj = copy.deepcopy(yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text()))
    doc["metadata"]["name"] = name
    spec = doc["spec"]["template"]["spec"]
    spec["nodeClassRef"]["name"] = nodeclass
    if family is not None:
        spec["requirements"] = [r for r in spec["requirements"] if r["key"] != FAMILY]
        spec["requirements"].append({"key": FAMILY, "operator": "In", "values": [family]})
    return doc


def explain_pod(kubeconfig: Path, name: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "karpy", "explain", "pod", name, "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=60, env=clean_env(), check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def failed_scheduling(api: Api, prefix: str) -> list[str]:
    return [e["message"] for e in api.list("events")
            if e.get("reason") == "FailedScheduling"
            and e.get("source", {}).get("component") == "karpenter"
            and e["involvedObject"]["name"].startswith(prefix)]  # fmt: skip


def test_unservable_pools_and_pods_are_explained_and_the_rest_is_served(tmp_path):
    with running_karpy(tmp_path, start=False) as run:
        api = run.api
        api.create("nodepools", pool("no-such-family", family="x"))
        api.create("nodepools", pool("orphan", nodeclass="missing"))
        run.start()
        api.create("deployments", deployment("huge", 1, cpu="10000", memory="1Gi"))
        api.create("deployments", deployment("family-x", 2, cpu="1", spec={
            "nodeSelector": {POOL_LABEL: "no-such-family"}}))  # fmt: skip
        api.create("deployments", deployment("orphaned", 2, cpu="1", spec={
            "nodeSelector": {POOL_LABEL: "orphan"}}))  # fmt: skip
        api.create("deployments", deployment("web", 8, cpu="1", memory="1Gi"))

        def explained() -> str:
            for prefix in ("huge-", "family-x-", "orphaned-"):
                if not failed_scheduling(api, prefix):
                    return f"no FailedScheduling event for {prefix}*"
            orphan = api.get("nodepools", "orphan") or {}
            if condition(orphan, "Ready") != "False":
                return f"NodePool orphan Ready={condition(orphan, 'Ready')}"
            return ""

        eventually_fine(explained, within=60)
        # Each round says it again; an early one may have been told before the NodePools'
        # readiness settled, so the messages may differ.
        huge = failed_scheduling(api, "huge-")
        assert any("no instance type has 10000 cpu" in m for m in huge), huge
        skipped_family = ('nodepool "no-such-family" skipped: nodepool requirements filtered '
                          "out all instance types")  # fmt: skip
        assert all(skipped_family in m for m in failed_scheduling(api, "family-x-"))
        skipped_orphan = ('nodepool "orphan" skipped: not ready '
                          '(EC2NodeClass "missing" not found)')  # fmt: skip
        assert all(skipped_orphan in m for m in failed_scheduling(api, "orphaned-"))
        orphan = api.get("nodepools", "orphan") or {}
        ready = next(c for c in orphan["status"]["conditions"] if c["type"] == "Ready")
        assert ready["reason"] == "NodeClassNotFound"
        assert '"missing"' in ready["message"]

        def web_served() -> str:
            pods = [p for p in api.list("pods")
                    if p["metadata"]["labels"]["app"] == "web"]  # fmt: skip
            running = [p for p in pods if p["status"].get("phase") == "Running"]
            return "" if len(running) == 8 else f"{len(running)}/8 web pods running"

        eventually_fine(web_served, within=60)
        pools = {c["metadata"]["labels"][POOL_LABEL] for c in api.list("nodeclaims")}
        assert pools == {"default"}, "nothing launched for the pools that cannot serve"
        assert all_running(api, 13).startswith("8/13"), "the others stay pending"

        # karpy explain pod, against the live cluster, says the same and why.
        names = {p["metadata"]["labels"]["app"]: p["metadata"]["name"] for p in api.list("pods")}
        out = explain_pod(run.cluster.kubeconfig, names["huge"])
        assert "karpy: considers it (marked Unschedulable by kube-scheduler" in out, out
        assert "this round (" in out and "cannot be placed" in out, out
        assert "default: ruled out: no instance type has 10000 cpu" in out, out
        assert "too small: " in out and "cpu 10000 requested" in out, out
        assert "no-such-family: can launch nothing: nodepool requirements filtered" in out, out
        assert "orphan: not ready, so not used" in out, out
        web = explain_pod(run.cluster.kubeconfig, names["web"])
        assert "karpy: does not place it: it is bound to node" in web, web


def test_nodepool_limits_hold_across_rounds_and_the_rest_is_told_why(tmp_path):
    limited = pool("default")
    limited["spec"]["limits"] = {"cpu": "16"}
    with running_karpy(tmp_path, nodepool=limited) as run:
        api = run.api
        api.create("deployments", deployment("web", 10, cpu="1", memory="1Gi"))
        eventually_fine(lambda: all_running(api, 10), within=60)
        # A second wave, in later rounds, with the first wave's capacity counted.
        api.patch("deployments", "web", {"spec": {"replicas": 40}})
        eventually_fine(lambda: "" if failed_scheduling(api, "web-") else "no event yet",
                   within=60)  # fmt: skip
        time.sleep(5)  # more rounds, which must not add past the limit
        launched = [c["status"]["capacity"] for c in api.list("nodeclaims")
                    if (c.get("status") or {}).get("capacity")]  # fmt: skip
        total = sum(parse_quantity(capacity["cpu"]) for capacity in launched)
        assert 0 < total <= 16_000, f"{total / 1000} CPUs launched under a 16-CPU limit"
        reasons = set(failed_scheduling(api, "web-"))
        assert any("limits" in reason for reason in reasons), reasons
