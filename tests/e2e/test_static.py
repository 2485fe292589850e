"""End to end: a static NodePool (``spec.replicas``) against the sandbox cluster, with
``karpy controller`` and the ``StaticCapacity`` gate, scaled through the NodePool's
``/scale`` subresource as ``kubectl scale nodepool`` does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.e2e.cluster import EXAMPLES, Api, Obj, running_karpy
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]


def static_pool(replicas: int) -> Obj:
    doc: Obj = yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text())
    doc["spec"]["replicas"] = replicas
    return doc


def ready_nodes(api: Api) -> list[str]:
    def ready(node: Obj) -> bool:
        conditions = node.get("status", {}).get("conditions") or ()
        return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

    return sorted(n["metadata"]["name"] for n in api.list("nodes")
                  if ready(n) and not n["metadata"].get("deletionTimestamp"))  # fmt: skip


def exactly(api: Api, count: int) -> Callable[[], str]:
    def check() -> str:
        nodes, claims = ready_nodes(api), api.list("nodeclaims")
        if len(nodes) == count and len(claims) == count:
            return ""
        return f"{len(nodes)} ready nodes, {len(claims)} nodeclaims, want {count}"

    return check


def test_a_static_pool_scales_up_and_down_with_its_scale_subresource(tmp_path: Path) -> None:
    with running_karpy(tmp_path, nodepool=static_pool(2),
                       FEATURE_GATES="StaticCapacity=true") as run:  # fmt: skip
        api = run.api
        eventually_fine(exactly(api, 2), within=60)
        scale = api.path("nodepools", "default") + "/scale"
        assert api.request("GET", scale)["spec"]["replicas"] == 2
        api.request("PATCH", scale, {"spec": {"replicas": 1}}, "application/merge-patch+json")
        eventually_fine(exactly(api, 1), within=60)

        def counted() -> str:
            nodes = (api.get("nodepools", "default") or {}).get("status", {}).get("nodes")
            return "" if nodes == 1 else f"status.nodes is {nodes}"

        eventually_fine(counted, within=30)


def test_a_drifted_static_pool_is_replaced_node_by_node(tmp_path: Path) -> None:
    pool = static_pool(2)
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "0s",
                                  "budgets": [{"nodes": "1"}]}  # fmt: skip
    with running_karpy(tmp_path, nodepool=pool, FEATURE_GATES="StaticCapacity=true") as run:
        api = run.api
        eventually_fine(exactly(api, 2), within=60)
        before = {c["metadata"]["name"] for c in api.list("nodeclaims")}
        relabel = {"spec": {"template": {"metadata": {"labels": {"team": "blue"}}}}}
        api.patch("nodepools", "default", relabel)

        def replaced() -> str:
            names = {c["metadata"]["name"] for c in api.list("nodeclaims")}
            blue = [n for n in api.list("nodes")
                    if n["metadata"]["labels"].get("team") == "blue"]  # fmt: skip
            if names & before or len(blue) < 2:
                return f"{len(names & before)} old nodeclaims left, {len(blue)} relabelled nodes"
            return exactly(api, 2)()

        eventually_fine(replaced, within=120)
