"""The sandbox cluster as a subprocess, and a small synchronous API client for tests.

`SandboxProcess` runs ``karpy sandbox cluster`` exactly as a user would and waits for its
``kubeconfig: PATH`` line; `Api` speaks plain JSON over HTTP to it (the same requests
kubectl makes), so end-to-end tests drive the cluster only from outside, as karpy is
checked. `running_karpy` starts both the cluster and a ``karpy controller`` with the fake
cloud provider beside it, and stops them again: what every end-to-end test sets up.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import yaml

from tests.e2e.chartrbac import ChartAccount
from tests.e2e.processes import ControllerProcess, clean_env

Obj = dict[str, Any]

RESOURCES = {
    "pods": "/api/v1/namespaces/{ns}/pods",
    "nodes": "/api/v1/nodes",
    "events": "/api/v1/namespaces/{ns}/events",
    "deployments": "/apis/apps/v1/namespaces/{ns}/deployments",
    "daemonsets": "/apis/apps/v1/namespaces/{ns}/daemonsets",
    "pdbs": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "nodepools": "/apis/karpenter.sh/v1/nodepools",
    "nodeclaims": "/apis/karpenter.sh/v1/nodeclaims",
    "ec2nodeclasses": "/apis/karpenter.k8s.aws/v1/ec2nodeclasses",
    "podtemplates": "/api/v1/namespaces/{ns}/podtemplates",
    "capacitybuffers": "/apis/autoscaling.x-k8s.io/v1beta1/namespaces/{ns}/capacitybuffers",
}
EXAMPLES = Path(__file__).resolve().parents[2] / "deploy" / "examples"


class ApiError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"{status}: {body[:300]}")
        self.status = status


class Api:
    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, method: str, path: str, body: Any = None,
                content_type: str = "application/json") -> Any:  # fmt: skip
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": content_type})  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise ApiError(exc.code, exc.read().decode(errors="replace")) from None
        return json.loads(payload) if payload else None

    def path(self, resource: str, name: str | None = None, ns: str = "default") -> str:
        base = RESOURCES[resource].format(ns=ns)
        return base if name is None else f"{base}/{name}"

    def list(self, resource: str, ns: str = "default") -> list[Obj]:
        items: list[Obj] = self.request("GET", self.path(resource, ns=ns))["items"]
        return items

    def get(self, resource: str, name: str, ns: str = "default") -> Obj | None:
        try:
            found: Obj = self.request("GET", self.path(resource, name, ns))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return found

    def create(self, resource: str, obj: Obj, ns: str = "default") -> Obj:
        created: Obj = self.request("POST", self.path(resource, ns=ns), obj)
        return created

    def patch(self, resource: str, name: str, patch: Obj, ns: str = "default") -> Obj:
        patched: Obj = self.request("PATCH", self.path(resource, name, ns), patch,
                                    "application/merge-patch+json")  # fmt: skip
        return patched

    def delete(self, resource: str, name: str, ns: str = "default") -> None:
        try:
            self.request("DELETE", self.path(resource, name, ns))
        except ApiError as exc:
            if exc.status != 404:
                raise

    def fault(self, body: Obj) -> Obj:
        result: Obj = self.request("POST", "/sandbox/v1/faults", body)
        return result

    def apply_examples(self, nodepool: Obj | None = None) -> None:
        nodeclass = yaml.safe_load((EXAMPLES / "ec2nodeclass.yaml").read_text())
        self.create("ec2nodeclasses", nodeclass)
        pool = nodepool or yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text())
        self.create("nodepools", pool)


class SandboxProcess:
    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.kubeconfig = tmp_path / "kubeconfig"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "karpy", "sandbox", "cluster", "--kubeconfig",
             str(self.kubeconfig), "--node-ready-delay", "0.2", "--pod-start-delay", "0.2",
             "--max-pod-grace-seconds", "1", *args],
            env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert self.process.stdout is not None
        first = self.process.stdout.readline().strip()
        if first != f"kubeconfig: {self.kubeconfig}":
            self.stop()
            raise RuntimeError(f"sandbox cluster did not start: {first!r}")
        config = yaml.safe_load(self.kubeconfig.read_text())
        self.api = Api(config["clusters"][0]["cluster"]["server"])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextmanager
def sandbox_process(tmp_path: Path, *args: str) -> Iterator[SandboxProcess]:
    cluster = SandboxProcess(tmp_path, *args)
    try:
        yield cluster
    finally:
        cluster.stop()


def controller(kubeconfig: Path, **env: str) -> ControllerProcess:
    """``karpy controller`` with the fake cloud, fast batching and quick lease timings."""
    settings = {"CLOUD_PROVIDER": "fake", "BATCH_IDLE_DURATION": "500ms",
                "BATCH_MAX_DURATION": "3s", **env}  # fmt: skip
    return ControllerProcess(kubeconfig, env=settings)


@attrs.define
class KarpyRun:
    """A sandbox cluster and the ``karpy controller`` running against it."""

    cluster: SandboxProcess
    env: dict[str, str]
    account: ChartAccount | None = None
    karpy: ControllerProcess | None = None

    @property
    def api(self) -> Api:
        return self.cluster.api

    @property
    def controller(self) -> ControllerProcess:
        assert self.karpy is not None, "karpy was not started"
        return self.karpy

    def start(self, *, wait_for: str = "informers synced", **env: str) -> ControllerProcess:
        """Start ``karpy controller`` (with ``env`` over the run's), as the chart's account
        in an RBAC run, and wait for its ``wait_for`` log line (none: "")."""
        self.env = {**self.env, **env}
        kubeconfig = self.account.kubeconfig_path if self.account else self.cluster.kubeconfig
        self.karpy = controller(kubeconfig, **self.env)
        if wait_for:
            self.karpy.wait_for_message(wait_for, timeout=60)
        return self.karpy

    def restart(self) -> ControllerProcess:
        """Kill karpy (``kill -9``) and start another at once, not waiting for it."""
        self.controller.kill()
        return self.start(wait_for="")


@contextmanager
def running_karpy(
    tmp_path: Path, *sandbox_args: str, nodepool: Obj | None = None, examples: bool = True,
    rbac: str | None = None, start: bool = True, clean_exit: bool = True, **env: str,
) -> Iterator[KarpyRun]:  # fmt: skip
    """``karpy sandbox cluster`` with the example EC2NodeClass and NodePool (``nodepool``
    instead of the example's) applied, and ``karpy controller`` with the fake cloud and
    ``env`` beside it, its informers synced; ``start=False`` leaves starting karpy to the
    test (`KarpyRun.start`), after it has set the cluster up.

    ``rbac`` names the scenario when karpy runs as the chart's ServiceAccount in a
    ``--rbac`` sandbox: its calls are checked when the body is done.

    On leaving, karpy gets SIGTERM and must exit 0 (``clean_exit=False``: it is killed,
    for runs that kill it anyway); when the body failed it is stopped without checks."""
    args = (*sandbox_args, "--rbac") if rbac else sandbox_args
    with sandbox_process(tmp_path, *args) as cluster:
        if examples:
            cluster.api.apply_examples(nodepool)
        run = KarpyRun(cluster, dict(env))
        if rbac:
            run.account = ChartAccount(cluster.kubeconfig)
        try:
            if start:
                run.start()
            yield run
        except BaseException:
            if run.karpy is not None:
                run.karpy.kill()
            raise
        if run.karpy is None:
            return
        if rbac and run.account is not None:
            run.account.check(rbac)
        if not clean_exit:
            run.karpy.kill()
            return
        run.karpy.process.terminate()
        assert run.karpy.finish() == 0, run.karpy.stderr


def deployment(name: str, replicas: int, *, cpu: str = "1", memory: str = "1Gi",
               spec: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:  # fmt: skip
    pod_labels = {"app": name, **(labels or {})}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": pod_labels},
                "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "app", "image": "pause",
                                    "resources": {"requests": {"cpu": cpu, "memory": memory}}}],
                    **(spec or {}),
                },
            },
        },
    }  # fmt: skip


def condition(obj: Obj, type_: str) -> str | None:
    for item in (obj.get("status") or {}).get("conditions") or ():
        if item.get("type") == type_:
            return str(item.get("status"))
    return None


def all_running(api: Api, expected: int) -> str:
    """ "" when exactly ``expected`` pods run, each on a node whose NodeClaim is
    initialized (or on a node karpy does not manage)."""
    pods = [p for p in api.list("pods") if not p["metadata"].get("deletionTimestamp")]
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if len(running) != expected or len(pods) != expected:
        return f"{len(running)}/{expected} running ({len(pods)} pods)"
    claims = {(c.get("status") or {}).get("nodeName"): c for c in api.list("nodeclaims")}
    managed = {n["metadata"]["name"] for n in api.list("nodes")
               if (n.get("spec") or {}).get("providerID", "").startswith("fake://")}  # fmt: skip
    for pod in running:
        node = pod["spec"]["nodeName"]
        if node in managed:
            claim = claims.get(node)
            if claim is None or condition(claim, "Initialized") != "True":
                return f"pod {pod['metadata']['name']} on {node}: its NodeClaim is not initialized"
    return ""
