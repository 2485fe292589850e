"""The emulator serves core/v1 ReplicationControllers, as kube-apiserver does: the
snapshot command of docs/simulate.md works on the sandbox, and kubectl reads and writes
the kind (Karpenter and kube-scheduler read it for pod owners)."""

from __future__ import annotations

import yaml

from tests.sandbox.apiserver.test_kubectl import kubectl  # noqa: F401 - the fixture

pytestmark = __import__("pytest").mark.kubectl

RC = """
apiVersion: v1
kind: ReplicationController
metadata: {name: legacy}
spec:
  replicas: 2
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: app, image: nginx}]
"""


async def test_the_simulate_snapshot_command_works_on_the_sandbox(kubectl):  # noqa: F811
    status, out, err = await kubectl("apply", "-f", "-", stdin=RC)
    assert status == 0, err
    status, out, err = await kubectl(
        "get", "services,replicasets,statefulsets,replicationcontrollers", "-A", "-o", "yaml"
    )
    assert status == 0, err
    items = yaml.safe_load(out)["items"]
    assert [(i["kind"], i["metadata"]["name"]) for i in items if i["kind"] != "Service"] == [
        ("ReplicationController", "legacy")
    ]


async def test_kubectl_gets_and_scales_a_replicationcontroller(kubectl):  # noqa: F811
    assert (await kubectl("apply", "-f", "-", stdin=RC))[0] == 0
    status, out, err = await kubectl("scale", "rc", "legacy", "--replicas", "3")
    assert status == 0, err
    status, out, err = await kubectl("get", "rc", "legacy")
    assert status == 0, err
    header, row = out.splitlines()
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert row.split()[:2] == ["legacy", "3"]
