"""Switching from Karpenter to karpy, end to end on the sandbox (fake cloud): the cluster
holds NodeClaims and Nodes exactly as Karpenter leaves them (conditions with Karpenter's
reasons, the registered/initialized labels, the termination finalizer, the hash
annotations, pods running on them), a crashed old Karpenter's stale Lease in
``kube-system`` and a live Karpenter renewing its Lease in ``karpenter``.

karpy starts and does nothing while that Karpenter lives (not ready, one warning, an
Event, no lease of its own, no NodeClaim for a pending pod); Karpenter is scaled to zero
(it releases its Lease) and karpy takes over: it launches for the pending pod, and adopts
Karpenter's NodeClaims and instances: none is deleted, relaunched, tainted or drained
across the first garbage-collection pass and several disruption passes.

On the AWS sandbox too: EC2 instances launched as Karpenter launches them (its tags, the
class's AMI, subnet and security groups, AL2023 user data), their Nodes and NodeClaims as
Karpenter leaves them; karpy launches and terminates no instance, and judges none drifted
(a wrong image ID in a NodeClaim's status does make it replace that node: the check is
live).
"""

from __future__ import annotations

import contextlib
import threading
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.apis.ec2nodeclass import EC2NodeClass
from karpy.apis.hashes import (
    EC2NODECLASS_HASH_VERSION,
    NODEPOOL_HASH_VERSION,
    ec2nodeclass_hash,
    nodepool_template_hash,
)
from karpy.apis.nodepool import NodePool
from karpy.apis.resources import format_resource_list
from karpy.cloud.fake.catalog import embedded_catalog
from tests.e2e.cluster import (
    EXAMPLES,
    Api,
    Obj,
    deployment,
    running_karpy,
)
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]

LEASE = "karpenter-leader-election"
APP = "steady"


def template_hash(pool: dict[str, Any]) -> str:
    return nodepool_template_hash(NodePool.from_dict(pool).spec.template)


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now() -> datetime:
    return datetime.now(UTC)


def karpenter_pool() -> Obj:
    pool: Obj = yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text())
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized",
                                  "consolidateAfter": "5s"}  # fmt: skip
    pool["metadata"]["annotations"] = {
        "karpenter.sh/nodepool-hash": nodepool_template_hash(
            NodePool.from_dict(pool).spec.template
        ),
        "karpenter.sh/nodepool-hash-version": NODEPOOL_HASH_VERSION,
    }
    return pool


def cheapest_fit(cpu_milli: int, memory: int) -> tuple[Any, Any]:
    """The (instance type, offering) a launch for one such pod picks: the cheapest."""
    fits = [(o.price, it.name, it, o) for it in embedded_catalog().instance_types
            for o in it.offerings
            if it.allocatable["cpu"] >= cpu_milli and it.allocatable["memory"] >= memory * 1000
            and it.labels()["karpenter.kwok.sh/instance-family"] in ("c", "s", "m")]  # fmt: skip
    _, _, it, offering = min(fits, key=lambda f: (f[0], f[1]))
    return it, offering


def karpenter_node_and_claim(name: str, pool: Obj, nodeclass: Obj, *, age: timedelta,
                             pool_uid: str) -> tuple[Obj, Obj, Obj]:  # fmt: skip
    """A Node, a NodeClaim and the NodeClaim's status as Karpenter leaves a registered,
    initialized node (its instance a fake-cloud instance: the Node, KWOK-style)."""
    it, offering = cheapest_fit(500, 512 * 2**20)
    created = now() - age
    labels = {
        **it.labels(), "topology.kubernetes.io/zone": offering.zone,
        "karpenter.sh/capacity-type": offering.capacity_type, "karpenter.sh/nodepool": "default",
        "karpenter.k8s.aws/ec2nodeclass": "default", "karpenter.sh/registered": "true",
        "karpenter.sh/initialized": "true",
    }  # fmt: skip
    annotations = {
        "karpenter.sh/nodepool-hash": pool["metadata"]["annotations"]["karpenter.sh/nodepool-hash"],
        "karpenter.sh/nodepool-hash-version": NODEPOOL_HASH_VERSION,
        "karpenter.k8s.aws/ec2nodeclass-hash": ec2nodeclass_hash(EC2NodeClass.from_dict(nodeclass)),
        "karpenter.k8s.aws/ec2nodeclass-hash-version": EC2NODECLASS_HASH_VERSION,
    }  # fmt: skip
    provider_id = f"fake://{offering.zone}/{name}"
    capacity, allocatable = format_resource_list(it.capacity), format_resource_list(it.allocatable)
    node = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {**labels, "kubernetes.io/hostname": name,
                                              "kwok.x-k8s.io/node": "fake"},
                     "annotations": {**annotations, "kwok.x-k8s.io/node": "fake"},
                     "finalizers": ["karpenter.sh/termination"]},
        "spec": {"providerID": provider_id},
    }  # fmt: skip
    requirements = [*pool["spec"]["template"]["spec"]["requirements"],
                    {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In",
                     "values": [it.name]}]  # fmt: skip
    claim = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
        "metadata": {"name": name, "labels": labels, "annotations": annotations,
                     "finalizers": ["karpenter.sh/termination"],
                     "ownerReferences": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
                                          "name": "default", "uid": pool_uid,
                                          "blockOwnerDeletion": True}]},
        "spec": {"requirements": requirements, "expireAfter": "720h",
                 "resources": {"requests": {"cpu": "500m", "memory": "512Mi", "pods": "1"}},
                 "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                  "name": "default"}},
    }  # fmt: skip
    at = stamp(created)
    conditions = [{"type": t, "status": "True", "reason": t, "message": "",
                   "lastTransitionTime": at}
                  for t in ("Launched", "Registered", "Initialized", "Ready")]  # fmt: skip
    status = {"providerID": provider_id, "nodeName": name, "imageID": "fake-image",
              "capacity": capacity, "allocatable": allocatable, "conditions": conditions,
              "lastPodEventTime": stamp(created)}  # fmt: skip
    return node, claim, status


class Karpenter:
    """Karpenter's leader as the API sees it: a Lease in ``karpenter`` renewed every two
    seconds until `scale_to_zero` releases it (ReleaseOnCancel)."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.path = f"/apis/coordination.k8s.io/v1/namespaces/karpenter/leases/{LEASE}"
        self.stopped = threading.Event()
        self._write("karpenter-7c9f_0a1b2c", create=True)
        self.thread = threading.Thread(target=self._renew, daemon=True)
        self.thread.start()

    def _write(self, holder: str, *, create: bool = False) -> None:
        spec = {"holderIdentity": holder, "leaseDurationSeconds": 15 if holder else 1,
                "acquireTime": stamp(now()), "renewTime": stamp(now())}  # fmt: skip
        if create:
            meta = {"name": LEASE, "namespace": "karpenter"}
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta,
                    "spec": spec}  # fmt: skip
            self.api.request("POST", self.path.rsplit("/", 1)[0], body)
        else:
            self.api.request("PATCH", self.path, {"spec": spec}, "application/merge-patch+json")

    def _renew(self) -> None:
        while not self.stopped.wait(2.0):
            self._write("karpenter-7c9f_0a1b2c")

    def scale_to_zero(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        self._write("")


def readyz(port: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


def snapshot(api: Api) -> dict[str, Any]:
    """What adoption must leave alone: the NodeClaims and Nodes (uid, deletion, taints)
    and the pods on them."""
    claims = [(c["metadata"]["name"], c["metadata"]["uid"], c["metadata"].get("deletionTimestamp"))
              for c in api.list("nodeclaims")]  # fmt: skip
    nodes = [(n["metadata"]["name"], n["metadata"]["uid"], n["metadata"].get("deletionTimestamp"),
              str((n.get("spec") or {}).get("taints") or []))
             for n in api.list("nodes")]  # fmt: skip
    pods = [(p["metadata"]["name"], p["metadata"]["uid"], p["spec"].get("nodeName"))
            for p in api.list("pods") if p["metadata"]["labels"].get("app") == APP]  # fmt: skip
    return {"claims": sorted(claims), "nodes": sorted(nodes), "pods": sorted(pods)}


def run_two_pods_apart(api: Any) -> None:
    """A Deployment of two pods that may not share a node, Running on Karpenter's two nodes."""
    term = {"labelSelector": {"matchLabels": {"app": APP}},
            "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
    apart = {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}  # fmt: skip
    api.create("deployments", deployment(APP, 2, cpu="500m", memory="512Mi", spec=apart))

    def steady_running() -> str:
        pods = [p for p in api.list("pods") if p["metadata"]["labels"].get("app") == APP]
        running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
        return "" if len(running) == 2 else f"{len(running)}/2 running on Karpenter's nodes"

    eventually_fine(steady_running, within=60)


def test_karpy_waits_for_karpenter_to_go_then_adopts_its_nodeclaims_without_touching_them(
    tmp_path: Path,
) -> None:
    with running_karpy(tmp_path, examples=False, start=False) as run:
        api = run.api
        for ns in ("karpenter", "kube-system"):
            with contextlib.suppress(Exception):  # it may exist already
                api.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        # A crashed old install's Lease: held, last renewed ten minutes ago. Not live.
        old = stamp(now() - timedelta(minutes=10))
        api.request("POST", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases", {
            "metadata": {"name": LEASE, "namespace": "kube-system"},
            "spec": {"holderIdentity": "karpenter-old_ffff", "leaseDurationSeconds": 15,
                     "acquireTime": old, "renewTime": old}})  # fmt: skip
        nodeclass = yaml.safe_load((EXAMPLES / "ec2nodeclass.yaml").read_text())
        api.create("ec2nodeclasses", nodeclass)
        pool = api.create("nodepools", karpenter_pool())
        for i in range(2):
            name = f"default-k{i}abc"
            node, claim, status = karpenter_node_and_claim(
                name, pool, nodeclass, age=timedelta(hours=1), pool_uid=pool["metadata"]["uid"]
            )
            api.create("nodes", node)
            api.create("nodeclaims", claim)
            api.request("PATCH", api.path("nodeclaims", name) + "/status", {"status": status},
                        "application/merge-patch+json")  # fmt: skip
        run_two_pods_apart(api)
        before = snapshot(api)
        karpenter = Karpenter(api)
        karpy = run.start(wait_for="karpenter detected; not acting",
                          SYSTEM_NAMESPACE="kube-system")  # fmt: skip
        try:
            # A pod needing a new node: karpy must not launch for it while Karpenter lives.
            api.create("deployments", deployment("late", 1, cpu="500m", memory="512Mi"))
            time.sleep(8)
            code, body = readyz(karpy.health_port)
            assert code != 200 and "a Karpenter controller is running" in body, body
            assert "karpenter/karpenter-leader-election" in body and "kube-system" not in body
            assert [c["metadata"]["name"] for c in api.list("nodeclaims")] == [
                "default-k0abc",
                "default-k1abc",
            ], "no NodeClaim while Karpenter is live"
            leases = api.request("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/"
                                 "leases")["items"]  # fmt: skip
            assert [x["metadata"]["name"] for x in leases] == [LEASE], "karpy did not campaign"
            warnings = [e for e in api.list("events", "kube-system")
                        if e["reason"] == "KarpenterDetected"]  # fmt: skip
            assert [e["type"] for e in warnings] == ["Warning"]

            karpenter.scale_to_zero()
            karpy.wait_for_message("karpenter no longer running; karpy may act", timeout=30)

            def launched_for_late() -> str:
                late = [p for p in api.list("pods") if p["metadata"]["labels"].get("app") == "late"]
                running = [p for p in late if (p.get("status") or {}).get("phase") == "Running"]
                return "" if running else "the late pod does not run yet"

            eventually_fine(launched_for_late, within=60)
            assert readyz(karpy.health_port)[0] == 200
            # The first GC pass has run since karpy took over; watch disruption passes.
            karpy.wait_for_message("cluster state fresh; controllers starting", timeout=10)
            deadline = time.monotonic() + 25
            while time.monotonic() < deadline:
                after = snapshot(api)
                assert {
                    k: [x for x in v if x[0].startswith(("default-k", APP))]
                    for k, v in after.items()
                } == before, "Karpenter's nodes were touched"
                time.sleep(1)
            reasons = {e["reason"] for e in api.list("events")}
            assert not reasons & {"DisruptionTerminating", "DisruptionLaunching",
                                  "GarbageCollected"}, reasons  # fmt: skip
            assert karpy.messages().count("karpenter detected; not acting") == 1
        finally:
            karpenter.stopped.set()


def karpenter_instance(sandbox: Any, name: str, *, image: str, subnet: str,
                       groups: list[str]) -> dict[str, Any]:  # fmt: skip
    """An EC2 instance as Karpenter launches one for NodeClaim ``name``: its tags, its
    class's AMI, subnet and security groups, AL2023 user data registering it with the
    NodePool's labels and the unregistered taint."""
    from tests.aws.harness.userdata_samples import AL2023
    from tests.e2e.test_aws import CLUSTER

    user_data = (
        AL2023.replace("test-cluster", CLUSTER)
        .replace(
            ',team=blue"', f',karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/nodeclaim={name}"'
        )
        .replace('    - --register-with-taints="dedicated=gpu:NoSchedule"\n', "")
    )
    tags = {f"kubernetes.io/cluster/{CLUSTER}": "owned", "eks:eks-cluster-name": CLUSTER,
            "karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": name,
            "karpenter.k8s.aws/ec2nodeclass": "default"}  # fmt: skip
    answer = sandbox.ec2.run_instances(
        ImageId=image, InstanceType="m5.large", MinCount=1, MaxCount=1, SubnetId=subnet,
        SecurityGroupIds=groups, UserData=user_data,
        TagSpecifications=[{"ResourceType": "instance",
                            "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}],
    )  # fmt: skip
    instance: dict[str, Any] = answer["Instances"][0]
    return instance


def test_on_aws_karpy_adopts_karpenters_instances_and_launches_or_terminates_none(
    tmp_path: Path,
) -> None:
    import boto3

    from karpy.sandbox.apiserver.discovery import KUBERNETES_VERSION
    from tests.e2e.cluster import condition
    from tests.e2e.test_aws import CLUSTER, NODECLASS, NODEPOOL, aws_sandbox

    with aws_sandbox(tmp_path) as sandbox:
        api, ec2 = sandbox.api, sandbox.ec2
        ssm = boto3.client("ssm", endpoint_url=sandbox.env["AWS_ENDPOINT_URL"],
                           region_name=sandbox.env["AWS_REGION"], aws_access_key_id="testing",
                           aws_secret_access_key="testing")  # fmt: skip
        version = f"{KUBERNETES_VERSION['major']}.{KUBERNETES_VERSION['minor']}"
        image = ssm.get_parameter(
            Name=f"/aws/service/eks/optimized-ami/{version}/amazon-linux-"
            "2023/x86_64/standard/recommended/image_id"
        )["Parameter"]["Value"]
        discovery = [{"Name": "tag:karpenter.sh/discovery", "Values": [CLUSTER]}]
        subnet = ec2.describe_subnets(Filters=discovery)["Subnets"][0]
        groups = [g["GroupId"] for g in ec2.describe_security_groups(Filters=discovery)[
            "SecurityGroups"]]  # fmt: skip
        pool = {**NODEPOOL, "spec": {**NODEPOOL["spec"], "disruption": {
            "consolidationPolicy": "WhenEmpty", "consolidateAfter": "5s"}}}  # fmt: skip
        pool["metadata"] = {"name": "default", "annotations": {
            "karpenter.sh/nodepool-hash": template_hash(pool),
            "karpenter.sh/nodepool-hash-version": NODEPOOL_HASH_VERSION}}  # fmt: skip
        api.create("ec2nodeclasses", NODECLASS)
        pool = api.create("nodepools", pool)
        launched = {f"default-a{i}xyz": karpenter_instance(sandbox, f"default-a{i}xyz",
                                                           image=image, subnet=subnet["SubnetId"],
                                                           groups=groups)
                    for i in range(2)}  # fmt: skip
        ids = {i["InstanceId"] for i in launched.values()}

        def registered() -> str:
            names = {n["metadata"]["name"] for n in api.list("nodes")}
            missing = [i["PrivateDnsName"] for i in launched.values()
                       if i["PrivateDnsName"] not in names]  # fmt: skip
            return f"no Node yet for {missing}" if missing else ""

        eventually_fine(registered, within=60)
        nodeclass_hash = ec2nodeclass_hash(EC2NodeClass.from_dict(NODECLASS))
        for name, instance in launched.items():
            node = api.get("nodes", instance["PrivateDnsName"])
            assert node is not None
            labels = {"karpenter.sh/registered": "true", "karpenter.sh/initialized": "true",
                      "karpenter.sh/nodepool": "default"}  # fmt: skip
            api.patch("nodes", node["metadata"]["name"], {
                "metadata": {"labels": labels, "finalizers": ["karpenter.sh/termination"]},
                "spec": {"taints": None}})  # fmt: skip
            zone = instance["Placement"]["AvailabilityZone"]
            node_labels = {**node["metadata"]["labels"], **labels}
            keep = (
                "node.kubernetes.io/instance-type",
                "topology.kubernetes.io/zone",
                "karpenter.sh/capacity-type",
                "kubernetes.io/arch",
                "kubernetes.io/os",
            )
            claim_labels = {**{k: node_labels[k] for k in keep if k in node_labels}, **labels,
                            "karpenter.k8s.aws/ec2nodeclass": "default"}  # fmt: skip
            annotations = {
                "karpenter.sh/nodepool-hash": pool["metadata"]["annotations"][
                    "karpenter.sh/nodepool-hash"],
                "karpenter.sh/nodepool-hash-version": NODEPOOL_HASH_VERSION,
                "karpenter.k8s.aws/ec2nodeclass-hash": nodeclass_hash,
                "karpenter.k8s.aws/ec2nodeclass-hash-version": EC2NODECLASS_HASH_VERSION,
            }  # fmt: skip
            requirements = [*pool["spec"]["template"]["spec"]["requirements"],
                            {"key": "karpenter.sh/nodepool", "operator": "In",
                             "values": ["default"]},
                            {"key": "node.kubernetes.io/instance-type", "operator": "In",
                             "values": ["m5.large"]}]  # fmt: skip
            api.create("nodeclaims", {
                "apiVersion": "karpenter.sh/v1", "kind": "NodeClaim",
                "metadata": {"name": name, "labels": claim_labels, "annotations": annotations,
                             "finalizers": ["karpenter.sh/termination"],
                             "ownerReferences": [{"apiVersion": "karpenter.sh/v1",
                                                  "kind": "NodePool", "name": "default",
                                                  "uid": pool["metadata"]["uid"],
                                                  "blockOwnerDeletion": True}]},
                "spec": {"requirements": requirements, "expireAfter": "720h",
                         "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}},
                         "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass",
                                          "name": "default"}}})  # fmt: skip
            at = stamp(now() - timedelta(hours=1))
            conditions = [{"type": t, "status": "True", "reason": t, "message": "",
                           "lastTransitionTime": at}
                          for t in ("Launched", "Registered", "Initialized", "Ready")]  # fmt: skip
            status = {"providerID": f"aws:///{zone}/{instance['InstanceId']}",
                      "nodeName": node["metadata"]["name"], "imageID": image,
                      "capacity": node["status"]["capacity"],
                      "allocatable": node["status"]["allocatable"],
                      "conditions": conditions, "lastPodEventTime": at}  # fmt: skip
            api.request("PATCH", api.path("nodeclaims", name) + "/status", {"status": status},
                        "application/merge-patch+json")  # fmt: skip
        run_two_pods_apart(api)
        before = snapshot(api)
        karpy = sandbox.controller()
        try:
            sandbox.wait_for_nodeclass()
            karpy.wait_for_message("no running karpenter found", timeout=30)
            # Drift is judged on NodeClaim, Node and pod changes: one after the class has
            # resolved its AMIs, subnets and groups makes it judge Karpenter's instances.
            for instance in launched.values():
                touch = {"metadata": {"annotations": {"example.com/checked": "now"}}}
                api.patch("nodes", instance["PrivateDnsName"], touch)
            deadline = time.monotonic() + 30  # GC's first pass, three disruption passes
            while time.monotonic() < deadline:
                assert {i["InstanceId"] for i in sandbox.instances()} == ids
                assert snapshot(api) == before, "Karpenter's nodes were touched"
                time.sleep(1)
            for claim in api.list("nodeclaims"):
                assert condition(claim, "Drifted") != "True", claim["status"]["conditions"]
            reasons = {e["reason"] for e in api.list("events")}
            assert not reasons & {"DisruptionTerminating", "DisruptionLaunching"}, reasons
        finally:
            karpy.process.terminate()
            assert karpy.finish() == 0, karpy.stderr
