"""``karpy instance-types`` as a user runs it: a subprocess reaching moto (and the Pricing
stub) through the standard botocore environment variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import yaml

from karpy.base.quantity import parse_quantity
from karpy.scheduling.catalog import parse_catalog

if TYPE_CHECKING:
    from pathlib import Path

    from karpy.sandbox.aws.seed import Account
    from karpy.sandbox.aws.server import MotoServer


def karpy(server: MotoServer, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": server.url,
        "AWS_ENDPOINT_URL_PRICING": server.pricing_url,
        "AWS_REGION": "us-west-2",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    for name in (
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "VM_MEMORY_OVERHEAD_PERCENT",
        "RESERVED_ENIS",
    ):
        env.pop(name, None)
    return subprocess.run([sys.executable, "-m", "karpy", "instance-types", *args], env=env,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_explain_answers_why_a_240gi_pod_does_not_fit_an_r5a_8xlarge(
    moto_server: MotoServer,
) -> None:
    done = karpy(moto_server, "--explain", "r5a.8xlarge")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    steps = [
        "r5a.8xlarge: 32 vCPUs, 262144 MiB (256 GiB) advertised, amd64, AMI family AL2023",
        "advertised by EC2 (MemoryInfo.SizeInMiB)",
        "- VM overhead: ceil(262144Mi x 0.075)",
        "-19661Mi",
        "= capacity",
        "242483Mi (236.80Gi)",
        "- kube-reserved: 11Mi x 234 pods + 255Mi",
        "-2829Mi",
        "- eviction threshold (memory.available)",
        "-100Mi",
        "= allocatable",
        "239554Mi (233.94Gi)",
        "capacity 32 - kube-reserved 150m = allocatable 31850m",
        "largest pod that fits alone: cpu 31850m, memory 239554Mi (233.94Gi)",
    ]
    position = 0
    for step in steps:  # each step appears, in this order
        found = out.find(step, position)
        assert found >= 0, f"{step!r} missing after position {position}:\n{out}"
        position = found + len(step)
    assert "discovered instance types" not in out  # logs stay off stdout


def test_json_lists_every_type_with_capacity_overhead_allocatable_and_offerings(
    moto_server: MotoServer, tmp_path: Path
) -> None:
    done = karpy(moto_server, "-o", "json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    types = {t["name"]: t for t in document["instanceTypes"]}
    assert len(types) > 1300
    r5a = types["r5a.8xlarge"]
    assert r5a["labels"]["karpenter.k8s.aws/instance-family"] == "r5a"
    pod_eni = {"vpc.amazonaws.com/pod-eni": "54"}
    assert r5a["capacity"] == {"cpu": "32", "memory": "242483Mi", "pods": "234",
                               "ephemeral-storage": "20Gi", **pod_eni}  # fmt: skip
    assert r5a["overheadBreakdown"]["vmMemory"] == "19661Mi"
    assert r5a["overheadBreakdown"]["kubeReserved"] == {"cpu": "150m", "memory": "2829Mi",
                                                        "ephemeral-storage": "1Gi"}  # fmt: skip
    eviction = r5a["overheadBreakdown"]["evictionThreshold"]
    assert eviction == {"memory": "100Mi", "ephemeral-storage": "2Gi"}
    assert r5a["overhead"] == {"cpu": "150m", "memory": "2929Mi", "ephemeral-storage": "3Gi"}
    assert r5a["allocatable"] == {"cpu": "31850m", "memory": "239554Mi", "pods": "234",
                                  "ephemeral-storage": "17Gi", **pod_eni}  # fmt: skip

    # The output is a catalog as it stands: every allocatable adds up, and simulate
    # answers the 240Gi question from it.
    catalog = parse_catalog(document)
    parsed = {it.name: it for it in catalog.instance_types}
    assert parse_quantity("239554Mi") == parsed["r5a.8xlarge"].allocatable["memory"]
    assert "karpenter.k8s.aws/instance-family" in catalog.well_known_labels
    (tmp_path / "catalog.json").write_text(done.stdout, encoding="utf-8")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big", "namespace": "ml"},
           "spec": {"containers": [{"name": "m", "image": "x", "resources": {
               "requests": {"cpu": "4", "memory": "240Gi"}}}]},
           "status": {"conditions": [{"type": "PodScheduled", "status": "False",
                                      "reason": "Unschedulable"}]}}  # fmt: skip
    pool = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "r5a"},
            "spec": {"template": {"spec": {"requirements": [
                {"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                 "values": ["r5a"]}],
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                 "name": "default"}}}}}  # fmt: skip
    snapshot = _write(tmp_path / "cluster.yaml", pool, pod)
    simulated = subprocess.run(
        [sys.executable, "-m", "karpy", "simulate", "-f", snapshot, "--instance-types",
         str(tmp_path / "catalog.json"), "-o", "json"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert simulated.returncode == 0, simulated.stderr
    (claim,) = json.loads(simulated.stdout)["nodeClaims"]
    assert "r5a.8xlarge" not in claim["instanceTypeOptions"], "239554Mi allocatable < 240Gi"
    assert claim["instanceType"] == "r5a.12xlarge"
    zones = {o["zone"] for o in r5a["offerings"]}
    assert zones == {"us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d"}
    spot = [o for o in r5a["offerings"] if o["capacityType"] == "spot"]
    on_demand = [o for o in r5a["offerings"] if o["capacityType"] == "on-demand"]
    assert all(o["available"] for o in r5a["offerings"])
    assert max(o["price"] for o in spot) < min(o["price"] for o in on_demand)


def _write(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    return str(path)


def test_nodeclass_and_nodepool_files_shape_the_answer(
    aws_account: Account, moto_server: MotoServer, tmp_path: Path
) -> None:
    nodeclass = _write(tmp_path / "nodeclass.yaml", {
        "apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass",
        "metadata": {"name": "small-pods"},
        "spec": {"role": "r", "amiSelectorTerms": [{"alias": "al2023@latest"}],
                 "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "test-cluster"}}],
                 "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "x"}}],
                 "kubelet": {"maxPods": 110}},
    })  # fmt: skip
    nodepool = _write(tmp_path / "nodepool.yaml", {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "memory"},
        "spec": {"template": {"spec": {
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "small-pods"},
            "requirements": [{"key": "karpenter.k8s.aws/instance-family", "operator": "In",
                              "values": ["r5a"]}]}}},
    }, {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-agent", "namespace": "kube-system"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "a", "image": "a", "resources": {
                "requests": {"cpu": "500m", "memory": "1Gi"}}}]}}},
    })  # fmt: skip
    table = karpy(moto_server, "--nodeclass", nodeclass, "--nodepool", nodepool)
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0].split() == ["NAME", "ARCH", "CPU", "MEMORY", "PODS", "STORAGE", "ON-DEMAND",
                               "SPOT", "ZONES"]  # fmt: skip
    assert {r.split()[0] for r in rows[1:]} == {
        "r5a.large", "r5a.xlarge", "r5a.2xlarge", "r5a.4xlarge", "r5a.8xlarge", "r5a.12xlarge",
        "r5a.16xlarge", "r5a.24xlarge"}  # fmt: skip
    r5a = next(r.split() for r in rows if r.startswith("r5a.8xlarge "))
    assert r5a[4] == "110" and r5a[-1] == "2a,2b,2c"  # maxPods; the seeded subnets' zones
    explained = karpy(moto_server, "--nodeclass", nodeclass, "--nodepool", nodepool,
                      "--explain", "r5a.8xlarge")  # fmt: skip
    assert explained.returncode == 0, explained.stderr
    out = explained.stdout
    assert "110 (kubelet maxPods)" in out
    assert "11Mi x 234 pods + 255Mi" in out  # AL2023 reserves memory for ENI-limited pods
    assert "DaemonSets of NodePool memory on this type: node-agent" in out
    assert "they request cpu 500m, memory 1Gi" in out
    assert "largest pod that fits beside them: cpu 31350m, memory 238530Mi (232.94Gi)" in out
