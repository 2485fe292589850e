"""End to end: what happens to capacity after it is decided — launches that meet
insufficient capacity, and NodeClaims deleted under a PodDisruptionBudget."""

from __future__ import annotations

import time

import pytest

from tests.e2e.cluster import (
    Api,
    Obj,
    all_running,
    deployment,
    running_karpy,
)
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]

ZONE = "topology.kubernetes.io/zone"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
FAMILY = "karpenter.kwok.sh/instance-family"


def labels_of_pods_nodes(api: Api, app: str) -> list[dict[str, str]]:
    nodes = {n["metadata"]["name"]: n["metadata"]["labels"] for n in api.list("nodes")}
    return [nodes[p["spec"]["nodeName"]] for p in api.list("pods")
            if p["metadata"]["labels"].get("app") == app]  # fmt: skip


def events(api: Api, reason: str) -> list[Obj]:
    return [e for e in api.list("events") if e.get("reason") == reason]


def test_insufficient_capacity_falls_to_the_next_offering_or_gives_the_pods_back(tmp_path):
    # The cheapest offerings of every type are spot in test-zone-a (ties go to the
    # first zone); m-family spot has no capacity anywhere.
    with running_karpy(
        tmp_path, FAKE_INSUFFICIENT_CAPACITY="*:test-zone-a:spot, m-*:*:spot"
    ) as run:
        api = run.api
        api.create("deployments", deployment("web", 6, cpu="500m", memory="512Mi"))
        eventually_fine(lambda: all_running(api, 6), within=60)
        for labels in labels_of_pods_nodes(api, "web"):
            assert labels[CAPACITY_TYPE] == "spot"
            assert labels[ZONE] != "test-zone-a", "the refused offering was not launched"

        memory = deployment("memory", 2, cpu="1", memory="6Gi", spec={"nodeSelector": {
            FAMILY: "m", CAPACITY_TYPE: "spot"}})  # fmt: skip
        api.create("deployments", memory)

        def refused() -> str:
            if not events(api, "InsufficientCapacityError"):
                return "no InsufficientCapacityError event yet"
            pending = [p for p in api.list("pods")
                       if p["metadata"]["labels"]["app"] == "memory"
                       and p["status"].get("phase") == "Pending"]  # fmt: skip
            return "" if len(pending) == 2 else f"{len(pending)} memory pods pending"

        eventually_fine(refused, within=60)
        # The NodeClaim that could not launch is gone, and the next rounds know the
        # offerings are out: no NodeClaim is made for them again while they are.
        time.sleep(3)
        claims = [c for c in api.list("nodeclaims")
                  if c["metadata"]["labels"].get(FAMILY) == "m"]  # fmt: skip
        assert [c for c in claims if not c["metadata"].get("deletionTimestamp")] == []
        reasons = {e["message"] for e in events(api, "FailedScheduling")
                   if e["involvedObject"]["name"].startswith("memory-")}  # fmt: skip
        assert reasons, "the pods that cannot be placed say why"


def test_deleting_a_nodeclaim_drains_it_within_its_budget_and_removes_node_and_instance(
    tmp_path,
):
    with running_karpy(tmp_path) as run:
        api = run.api
        api.create("pdbs", {
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        })  # fmt: skip
        api.create("deployments", deployment("web", 4, cpu="500m", memory="512Mi"))
        eventually_fine(lambda: all_running(api, 4), within=60)
        (claim,) = api.list("nodeclaims")
        name, node = claim["metadata"]["name"], claim["status"]["nodeName"]
        api.delete("nodeclaims", name)
        lowest = 4
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            pods = api.list("pods")
            healthy = [p for p in pods if p["status"].get("phase") == "Running"
                       and not p["metadata"].get("deletionTimestamp")]  # fmt: skip
            lowest = min(lowest, len(healthy))
            gone = api.get("nodeclaims", name) is None and api.get("nodes", node) is None
            if gone and len(healthy) == 4 and not all_running(api, 4):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"NodeClaim {name} / Node {node} not gone, or pods not back")
        assert lowest >= 3, f"the PDB allows one unavailable pod; saw {4 - lowest}"
        assert all(p["spec"]["nodeName"] != node for p in api.list("pods"))
        assert not any(n["metadata"]["name"] == node for n in api.list("nodes"))
        assert len(events(api, "Evicted")) == 4, "drained through the Eviction API"
