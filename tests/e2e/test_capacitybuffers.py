"""End to end with the CapacityBuffer gate on: a PodTemplate and a buffer of two chunks
make karpy launch nodes while no pod is pending, and the buffer's status says the room
is there once they are up."""

from __future__ import annotations

import pytest

from tests.e2e.cluster import Api, condition, running_karpy
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]

CHUNK = {"cpu": "3", "memory": "4Gi"}


def template(name: str) -> dict[str, object]:
    container = {"name": "app", "image": "app:1", "resources": {"requests": CHUNK}}
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [container]}}}  # fmt: skip


def room_ready(api: Api) -> str:
    buffer = api.get("capacitybuffers", "spare") or {}
    if condition(buffer, "ReadyForProvisioning") != "True":
        return f"not resolved: {buffer.get('status')}"
    if (buffer.get("status") or {}).get("replicas") != 2:
        return f"replicas: {buffer.get('status')}"
    if condition(buffer, "Provisioning") != "True":
        return f"room not there yet: {buffer.get('status')}"
    return ""


def test_a_buffer_launches_nodes_with_no_pod_pending(tmp_path):
    with running_karpy(tmp_path, FEATURE_GATES="CapacityBuffer=true") as run:
        api = run.api
        api.create("podtemplates", template("web"))
        api.create("capacitybuffers", {
            "apiVersion": "autoscaling.x-k8s.io/v1beta1", "kind": "CapacityBuffer",
            "metadata": {"name": "spare"},
            "spec": {"podTemplateRef": {"name": "web"}, "replicas": 2},
        })  # fmt: skip
        eventually_fine(lambda: "" if api.list("nodeclaims") else "no nodeclaim yet", within=60)
        eventually_fine(lambda: room_ready(api), within=120)
        assert api.list("pods") == [], "no real pod asked for the room"
        nodes = [n for n in api.list("nodes") if "karpenter.sh/nodepool" in
                 n["metadata"].get("labels", {})]  # fmt: skip
        assert nodes, "the room is on nodes karpy launched"
