"""`explain_pod` on snapshots: who places the pod, what a round does with it, and what each
NodePool makes of it, with the arithmetic of the instance types it does not fit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from karpy.explain.pod import explain_pod
from karpy.scheduling.catalog import parse_catalog
from karpy.settings import Settings
from tests.e2e.processes import clean_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "deploy" / "examples" / "simulate"
CATALOG = parse_catalog(yaml.safe_load((EXAMPLE / "catalog.yaml").read_text()))
CLUSTER = [d for d in yaml.safe_load_all((EXAMPLE / "cluster.yaml").read_text()) if d]
UNSCHEDULABLE = {"conditions": [{"type": "PodScheduled", "status": "False",
                                 "reason": "Unschedulable",
                                 "lastTransitionTime": "2026-11-27T10:00:00Z"}]}  # fmt: skip


def pod(name: str, *, cpu: str = "1", memory: str = "1Gi", metadata: dict[str, Any] | None = None,
        status: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", **(metadata or {})},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {
                "requests": {"cpu": cpu, "memory": memory}}}], **spec},
            "status": UNSCHEDULABLE if status is None else status}  # fmt: skip


def explained(*extra: dict[str, Any], ref: str) -> str:
    return "\n".join(explain_pod([*CLUSTER, *extra], CATALOG, ref))


def test_a_pod_that_fits_names_its_nodeclaim_and_the_cheapest_types_of_each_pool() -> None:
    out = explained(ref="shop/web-1")
    assert "karpy: considers it (marked Unschedulable by kube-scheduler" in out
    assert 'this round (4 pending pods): a new NodeClaim of nodepool "default"' in out
    assert "m5.large, spot in us-west-2a at $0.0312/h" in out
    assert "default: could launch it: 2 instance types fit; cheapest m5.large $0.0312/h" in out
    assert "gpu: ruled out: did not tolerate taint nvidia.com/gpu:NoSchedule" in out


def test_a_pod_too_big_for_every_type_shows_the_arithmetic_of_the_largest() -> None:
    out = explained(ref="shop/cache")
    assert "this round (4 pending pods): cannot be placed:" in out
    assert "default: ruled out: no instance type has 300Gi memory after overhead" in out
    assert "too small: m5.xlarge: memory 300Gi requested > 15Gi allocatable" in out
    lines = out.splitlines()
    gpu = lines.index("  gpu: ruled out: did not tolerate taint nvidia.com/gpu:NoSchedule")
    assert gpu == len(lines) - 1, "a pool ruled out by a taint lists no sizes"


def test_the_daemonsets_count_in_the_arithmetic_and_explain_why_not_a_cheaper_type() -> None:
    agent = {"apiVersion": "apps/v1", "kind": "DaemonSet",
             "metadata": {"name": "agent", "namespace": "kube-system"},
             "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x",
                      "resources": {"requests": {"cpu": "500m"}}}]}}}}  # fmt: skip
    out = explained(agent, pod("api", cpu="1500m"), ref="shop/api")
    assert "default: could launch it: 1 instance type fit; cheapest m5.xlarge" in out
    assert ("cheaper, too small: m5.large: cpu 1500m requested + 500m DaemonSets > 1920m "
            "allocatable") in out  # fmt: skip


def test_pods_karpy_does_not_place_say_who_does() -> None:
    bound = pod("bound", nodeName="worker-1", status={"phase": "Running"})
    nominated = pod("waiting", status={**UNSCHEDULABLE, "nominatedNodeName": "worker-2"})
    fresh = pod("fresh", status={"phase": "Pending"})
    daemon = pod("agent-x", metadata={"ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u",
         "controller": True}]})  # fmt: skip
    cases = {
        "shop/bound": "karpy: does not place it: it is bound to node worker-1",
        "shop/waiting": "it is nominated to node worker-2",
        "shop/fresh": "kube-scheduler has not marked it Unschedulable (yet)",
        "shop/agent-x": "a DaemonSet pod: its DaemonSet places it",
    }
    for ref, expected in cases.items():
        out = explained(bound, nominated, fresh, daemon, ref=ref)
        assert expected in out, out
        assert "this round" not in out
    assert explained(bound, ref="shop/bound").startswith("pod shop/bound: Running on node worker-1")


def test_a_missing_pod_says_so() -> None:
    assert explain_pod(CLUSTER, CATALOG, "shop/nope") == ["pod shop/nope: no such Pod"]


def test_the_controllers_settings_change_the_answer_as_they_change_a_round() -> None:
    term = {"matchExpressions": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                  "values": ["m5.xlarge"]}]}  # fmt: skip
    preferred = [{"weight": 1, "preference": term}]
    prefers = pod("picky", affinity={"nodeAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": preferred}})  # fmt: skip
    respected = "\n".join(explain_pod([*CLUSTER, prefers], CATALOG, "shop/picky"))
    ignored = "\n".join(explain_pod([*CLUSTER, prefers], CATALOG, "shop/picky",
                                    Settings(preference_policy="Ignore")))  # fmt: skip
    assert "default: could launch it: 1 instance type fit; cheapest m5.xlarge" in respected
    assert "default: could launch it: 2 instance types fit; cheapest m5.large" in ignored


def test_the_command_reads_the_controllers_settings_from_the_environment() -> None:
    args = [sys.executable, "-m", "karpy", "explain", "pod", "shop/web-1",
            "-f", str(EXAMPLE / "cluster.yaml"),
            "--instance-types", str(EXAMPLE / "catalog.yaml")]  # fmt: skip
    bad = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False,
                         env=clean_env(PREFERENCE_POLICY="Sometimes"))  # fmt: skip
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [
        'karpy explain: PREFERENCE_POLICY (--preference-policy) = "Sometimes": must be one of '
        "Respect, Ignore"]  # fmt: skip
    fine = subprocess.run(args, capture_output=True, text=True, timeout=60, check=False,
                          env=clean_env(FEATURE_GATES="SomethingNew=true"))  # fmt: skip
    assert fine.returncode == 0, fine.stderr
    assert "karpy: considers it" in fine.stdout
