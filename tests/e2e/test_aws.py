"""End to end on the AWS provider: ``karpy sandbox cluster --cloud aws`` (the emulator, a
moto server seeded as an EKS cluster's account, and a kubelet stand-in that registers a
Node for every running instance) and ``karpy controller`` with ``CLOUD_PROVIDER=aws``
beside it, two processes driven only through the Kubernetes API, with EC2 inspected
through its own API, as an operator would.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import pytest

from tests.e2e.chartrbac import ChartAccount, skip_if_run_as_chart_account
from tests.e2e.cluster import Obj, SandboxProcess, condition, deployment
from tests.e2e.processes import ControllerProcess
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]

CLUSTER = "e2e-aws"
NODECLASS: Obj = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "role": f"KarpenterNodeRole-{CLUSTER}",
        "amiSelectorTerms": [{"alias": "al2023@latest"}],
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": CLUSTER}}],
    },
}
NODEPOOL: Obj = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default"},
    "spec": {
        "template": {"spec": {
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-category", "operator": "In",
                 "values": ["c", "m", "r"]},
                {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt",
                 "values": ["4"]},
                {"key": "karpenter.sh/capacity-type", "operator": "In",
                 "values": ["spot", "on-demand"]},
            ],
            "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                             "name": "default"},
        }},
        "limits": {"cpu": "1000"},
    },
}  # fmt: skip


class AwsSandbox(SandboxProcess):
    """``karpy sandbox cluster --cloud aws`` as a subprocess; ``env`` holds the
    ``KEY=VALUE`` lines it prints after its kubeconfig line."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        super().__init__(tmp_path, "--cloud", "aws", "--cluster-name", CLUSTER, *args)
        assert self.process.stdout is not None
        self.env: dict[str, str] = {}
        while "CLUSTER_NAME" not in self.env:
            line = self.process.stdout.readline().strip()
            if not line:
                self.stop()
                raise RuntimeError(f"sandbox printed no AWS settings (got {self.env})")
            key, _, value = line.partition("=")
            self.env[key] = value
        self.ec2 = boto3.client(
            "ec2", endpoint_url=self.env["AWS_ENDPOINT_URL"], region_name=self.env["AWS_REGION"],
            aws_access_key_id="testing", aws_secret_access_key="testing",
        )  # fmt: skip

    def controller(self, kubeconfig: Path | None = None) -> ControllerProcess:
        settings = {
            **self.env, "CLOUD_PROVIDER": "aws", "CLUSTER_ENDPOINT": self.api.url,
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
            "BATCH_IDLE_DURATION": "500ms", "BATCH_MAX_DURATION": "3s",
            "DISABLE_LEADER_ELECTION": "true",
        }  # fmt: skip
        return ControllerProcess(kubeconfig or self.kubeconfig, env=settings)

    def instances(self) -> list[dict[str, Any]]:
        """The cluster's pending and running instances, as EC2 reports them."""
        answer = self.ec2.describe_instances(Filters=[
            {"Name": f"tag:kubernetes.io/cluster/{CLUSTER}", "Values": ["owned"]},
            {"Name": "instance-state-name", "Values": ["pending", "running"]},
        ])  # fmt: skip
        return [i for r in answer["Reservations"] for i in r["Instances"]]

    def wait_for_nodeclass(self, name: str = "default") -> None:
        """Until the EC2NodeClass is Ready (resolved against the seeded account)."""
        eventually_fine(lambda: "" if condition(self.api.get("ec2nodeclasses", name) or {},
                                           "Ready") == "True" else f"{name} not ready",
                   within=60)  # fmt: skip


@contextmanager
def aws_sandbox(tmp_path: Path, *args: str) -> Iterator[AwsSandbox]:
    sandbox = AwsSandbox(tmp_path, *args)
    try:
        yield sandbox
    finally:
        sandbox.stop()


def tag(instance: dict[str, Any], key: str) -> str:
    return next((t["Value"] for t in instance.get("Tags", ()) if t["Key"] == key), "")


def settled(sandbox: AwsSandbox, pods: int) -> str:
    """ "" once ``pods`` pods run on initialized nodes and the cluster's instances and
    live NodeClaims match one to one (nothing leaked, nothing launched twice)."""
    api = sandbox.api
    running = [p for p in api.list("pods") if (p.get("status") or {}).get("phase") == "Running"]
    if len(running) != pods:
        return f"{len(running)}/{pods} pods running"
    claims = [c for c in api.list("nodeclaims") if not c["metadata"].get("deletionTimestamp")]
    if not all(condition(c, "Initialized") == "True" for c in claims):
        return "not every NodeClaim is initialized"
    instances = sandbox.instances()
    by_claim: dict[str, list[str]] = {}
    for instance in instances:
        by_claim.setdefault(tag(instance, "karpenter.sh/nodeclaim"), []).append(
            instance["InstanceId"]
        )
    twice = {name: ids for name, ids in by_claim.items() if len(ids) > 1}
    if twice:
        return f"NodeClaims launched twice: {twice}"
    claim_ids = {c["status"]["providerID"].rsplit("/", 1)[-1] for c in claims}
    instance_ids = {i["InstanceId"] for i in instances}
    if claim_ids != instance_ids:
        return f"instances {sorted(instance_ids)} != NodeClaims' {sorted(claim_ids)}"
    return ""


def test_200_pending_pods_run_on_ec2_instances_launched_through_the_aws_provider(tmp_path):
    with aws_sandbox(tmp_path) as sandbox:
        api = sandbox.api
        api.create("ec2nodeclasses", NODECLASS)
        api.create("nodepools", NODEPOOL)
        karpy = sandbox.controller()
        try:
            sandbox.wait_for_nodeclass()
            api.create("deployments", deployment("web", 200, cpu="500m", memory="512Mi"))
            eventually_fine(lambda: settled(sandbox, 200), within=240, interval=1.0)
            claims = api.list("nodeclaims")
            for claim in claims:
                labels = claim["metadata"]["labels"]
                assert labels["karpenter.k8s.aws/instance-category"] in {"c", "m", "r"}
                assert int(labels["karpenter.k8s.aws/instance-generation"]) > 4
                annotations = claim["metadata"]["annotations"]
                assert annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"]
                assert claim["status"]["imageID"].startswith("ami-")
            for node in api.list("nodes"):
                assert node["spec"]["providerID"].startswith("aws:///us-west-2")
            eventually_fine(lambda: named_after_their_nodes(sandbox), within=120, interval=1.0)
        finally:
            karpy.kill()


def named_after_their_nodes(sandbox: AwsSandbox) -> str:
    """ "" once every NodeClaim is marked tagged and its instance's Name is its node's."""
    claims = sandbox.api.list("nodeclaims")
    names = {i["InstanceId"]: tag(i, "Name") for i in sandbox.instances()}
    for claim in claims:
        annotations = claim["metadata"].get("annotations") or {}
        if annotations.get("karpenter.k8s.aws/tagged") != "true":
            return f"{claim['metadata']['name']} not marked tagged"
        instance_id = claim["status"]["providerID"].rsplit("/", 1)[-1]
        if names.get(instance_id) != claim["status"]["nodeName"]:
            return f"{instance_id} is named {names.get(instance_id)!r}"
    return ""


@pytest.mark.parametrize("seed", [1])
def test_kill_9_during_launches_leaks_no_instance_and_launches_none_twice(tmp_path, seed):
    rng = random.Random(seed)
    with aws_sandbox(tmp_path) as sandbox:
        api = sandbox.api
        api.create("ec2nodeclasses", NODECLASS)
        api.create("nodepools", NODEPOOL)
        karpy = sandbox.controller()
        try:
            sandbox.wait_for_nodeclass()
            api.create("deployments", deployment("web", 120, cpu="500m", memory="512Mi"))
            api.create("deployments", deployment("big", 6, cpu="7", memory="20Gi"))
            for _ in range(2):
                eventually_fine(lambda: "" if api.list("nodeclaims") else "no NodeClaim yet",
                           within=60, interval=0.1)  # fmt: skip
                time.sleep(rng.uniform(0.0, 2.0))
                karpy.kill()
                karpy = sandbox.controller()
            # Instances of NodeClaims that never recorded them are found by their tag, or
            # terminated by garbage collection once 30 s old.
            eventually_fine(lambda: settled(sandbox, 126), within=240, interval=1.0)
        finally:
            karpy.kill()


def test_a_changed_nodeclass_drifts_its_nodes_which_are_replaced(tmp_path, rbac=False):
    """``rbac``: as the chart's ServiceAccount (tests/deploy/test_rbac_from_calls.py)."""
    skip_if_run_as_chart_account(rbac)
    with aws_sandbox(tmp_path, *(["--rbac"] if rbac else [])) as sandbox:
        api = sandbox.api
        api.create("ec2nodeclasses", NODECLASS)
        pool = {**NODEPOOL, "spec": {**NODEPOOL["spec"],
                                     "disruption": {"consolidateAfter": "30s",
                                                   "budgets": [{"nodes": "100%"}]}}}  # fmt: skip
        api.create("nodepools", pool)
        account = ChartAccount(sandbox.kubeconfig, cloud="aws") if rbac else None
        karpy = sandbox.controller(account.kubeconfig_path if account else None)
        try:
            api.create("deployments", deployment("web", 6, cpu="1", memory="1Gi"))
            eventually_fine(lambda: settled(sandbox, 6), within=120, interval=1.0)
            before = {c["metadata"]["name"] for c in api.list("nodeclaims")}
            old_hash = api.get("ec2nodeclasses", "default")["metadata"]["annotations"][  # type: ignore[index]
                "karpenter.k8s.aws/ec2nodeclass-hash"
            ]
            api.patch("ec2nodeclasses", "default", {"spec": {"tags": {"team": "web"}}})

            def replaced() -> str:
                claims = api.list("nodeclaims")
                if {c["metadata"]["name"] for c in claims} & before:
                    return "a drifted NodeClaim is still there"
                hashes = {c["metadata"]["annotations"]["karpenter.k8s.aws/ec2nodeclass-hash"]
                          for c in claims}  # fmt: skip
                if old_hash in hashes:
                    return "a NodeClaim still carries the old hash"
                return settled(sandbox, 6)

            eventually_fine(replaced, within=180, interval=1.0)
            for instance in sandbox.instances():
                assert tag(instance, "team") == "web"
            if account is not None:
                account.check("aws-drift")
        finally:
            karpy.kill()


def test_spot_out_of_capacity_falls_back_to_on_demand(tmp_path):
    with aws_sandbox(tmp_path) as sandbox:
        api = sandbox.api
        api.request("POST", "/sandbox/v1/aws/faults", {"ice": [["*", "*", "spot"]]})
        api.create("ec2nodeclasses", NODECLASS)
        requirements = [
            {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["c5", "m5"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In",
             "values": ["spot", "on-demand"]},
        ]  # fmt: skip
        template = {**NODEPOOL["spec"]["template"]["spec"], "requirements": requirements}
        pool = {**NODEPOOL, "spec": {**NODEPOOL["spec"], "template": {"spec": template}}}
        api.create("nodepools", pool)
        karpy = sandbox.controller()
        try:
            api.create("deployments", deployment("web", 10, cpu="1", memory="1Gi"))
            eventually_fine(lambda: settled(sandbox, 10), within=180, interval=1.0)
            claims = api.list("nodeclaims")
            assert {c["metadata"]["labels"]["karpenter.sh/capacity-type"] for c in claims} == {
                "on-demand"
            }
            reasons = {e.get("reason") for e in api.list("events")}
            assert "InsufficientCapacityError" in reasons, reasons
        finally:
            karpy.kill()
