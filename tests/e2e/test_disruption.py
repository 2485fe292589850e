"""End to end: disruption against the sandbox cluster, with ``karpy controller`` as a
separate process driven only through the API (the fake cloud provider)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.chartrbac import skip_if_run_as_chart_account
from tests.e2e.cluster import (
    EXAMPLES,
    Api,
    ApiError,
    Obj,
    all_running,
    condition,
    deployment,
    running_karpy,
)
from tests.e2e.processes import clean_env
from tests.factories import pod_disruption_budget
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]


def pool(**disruption: Any) -> Obj:
    doc: Obj = yaml.safe_load((EXAMPLES / "sandbox" / "nodepool.yaml").read_text())
    doc["spec"]["disruption"] = {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5s",
                                 **disruption}  # fmt: skip
    return doc


def live_nodes(api: Api) -> list[Obj]:
    return [n for n in api.list("nodes") if not n["metadata"].get("deletionTimestamp")]


def managed_claims(api: Api) -> list[Obj]:
    return [c for c in api.list("nodeclaims") if not c["metadata"].get("deletionTimestamp")]


def no_nodes_left(api: Api) -> str:
    nodes, claims = api.list("nodes"), api.list("nodeclaims")
    return "" if not nodes and not claims else f"{len(nodes)} nodes, {len(claims)} nodeclaims"


def one_per_node(app: str) -> Obj:
    term = {"labelSelector": {"matchLabels": {"app": app}},
            "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
    return {"affinity": {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}  # fmt: skip


def claim_names(api: Api) -> list[str]:
    return sorted(c["metadata"]["name"] for c in managed_claims(api))


def wait_until_settled(api: Api, *, quiet: float, timeout: float) -> list[str]:
    """The NodeClaims once they (and the disruption taints) have not changed for
    ``quiet`` seconds."""
    deadline = time.monotonic() + timeout
    last, since = claim_names(api), time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(1)
        names = claim_names(api)
        if names != last or disrupting(api):
            last, since = names, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return names
    raise AssertionError(f"nodeclaims still changing after {timeout:.0f}s: {last}")


def scale(api: Api, name: str, replicas: int) -> None:
    api.patch("deployments", name, {"spec": {"replicas": replicas}})


def test_when_empty_removes_every_emptied_node(tmp_path: Path, rbac: bool = False) -> None:
    """``rbac``: as the chart's ServiceAccount (tests/deploy/test_rbac_from_calls.py)."""
    skip_if_run_as_chart_account(rbac)
    with running_karpy(tmp_path, nodepool=pool(budgets=[{"nodes": "100%"}]),
                       rbac="emptiness" if rbac else None) as run:  # fmt: skip
        api = run.api
        api.create("deployments", deployment("web", 4, cpu="500m", memory="512Mi",
                                             spec=one_per_node("web")))  # fmt: skip
        eventually_fine(lambda: all_running(api, 4), within=90)
        assert len(live_nodes(api)) >= 4
        scale(api, "web", 0)
        started = time.monotonic()
        # consolidateAfter (5 s) + 30 s, as the issue asks, plus the drain and
        # instance deletion of the fake cloud.
        eventually_fine(lambda: no_nodes_left(api), within=5 + 30 + 15)
        print(f"emptied nodes removed in {time.monotonic() - started:.1f}s")
        reasons = {e["reason"] for e in api.list("events")}
        assert "DisruptionTerminating" in reasons


def disrupting(api: Api) -> int:
    """Nodes being disrupted now: tainted for disruption, or deleting."""
    count = 0
    for node in api.list("nodes"):
        taints = node.get("spec", {}).get("taints") or ()
        if node["metadata"].get("deletionTimestamp") or any(
            t.get("key") == "karpenter.sh/disrupted" for t in taints
        ):
            count += 1
    return count


class Sampler:
    """Samples a number in the background; `peak` is the largest seen."""

    def __init__(self, sample: Any, initial: int = 0) -> None:
        self.sample = sample
        self.peak = initial
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(ApiError, OSError):  # a failed sample is no sample
                self.peak = max(self.peak, self.sample())
            time.sleep(0.1)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(5)
        return self.peak


def test_a_budget_of_one_node_disrupts_one_node_at_a_time_even_across_missed_events(
    tmp_path: Path,
) -> None:
    # Two nodes emptied together are enough to show one at a time; each more costs a
    # validation (15 s) and a termination of test time.
    with running_karpy(tmp_path, nodepool=pool(budgets=[{"nodes": "1"}])) as run:
        api = run.api
        api.create("deployments", deployment("web", 2, cpu="500m", memory="512Mi",
                                             spec=one_per_node("web")))  # fmt: skip
        eventually_fine(lambda: all_running(api, 2), within=90)
        sampler = Sampler(lambda: disrupting(api))
        # The pods go while the watch streams drop and history is compacted: the
        # controller relists and must still see every node emptied.
        scale(api, "web", 0)
        api.fault({"action": "compact"})
        api.fault({"action": "drop-watches"})
        eventually_fine(lambda: no_nodes_left(api), within=2 * 30 + 30)
        assert sampler.stop() == 1, "never more than one node disrupting at once"


def test_drift_replaces_every_node_one_budget_at_a_time(tmp_path: Path) -> None:
    never = pool(
        consolidationPolicy="WhenEmpty", consolidateAfter="Never", budgets=[{"nodes": "1"}]
    )
    with running_karpy(tmp_path, nodepool=never) as run:
        api = run.api
        api.create("deployments", deployment("web", 3, cpu="500m", memory="512Mi",
                                             spec=one_per_node("web")))  # fmt: skip
        eventually_fine(lambda: all_running(api, 3), within=90)
        before = {c["metadata"]["name"] for c in managed_claims(api)}
        sampler = Sampler(lambda: disrupting(api))
        relabel = {"spec": {"template": {"metadata": {"labels": {"team": "blue"}}}}}
        api.patch("nodepools", "default", relabel)

        def replaced() -> str:
            claims = managed_claims(api)
            old = [c for c in claims if c["metadata"]["name"] in before]
            blue = [n for n in live_nodes(api) if n["metadata"]["labels"].get("team") == "blue"]
            if old or len(blue) < 3:
                return f"{len(old)} old nodeclaims left, {len(blue)} relabelled nodes"
            return all_running(api, 3)

        eventually_fine(replaced, within=180)
        assert sampler.stop() == 1, "drift replaced one node at a time (budget nodes: 1)"


def test_expired_nodes_are_replaced(tmp_path: Path) -> None:
    expiring = pool(consolidationPolicy="WhenEmpty", consolidateAfter="Never")
    expiring["spec"]["template"]["spec"]["expireAfter"] = "20s"
    with running_karpy(tmp_path, nodepool=expiring) as run:
        api = run.api
        api.create("deployments", deployment("web", 2, cpu="500m", memory="512Mi"))
        eventually_fine(lambda: all_running(api, 2), within=90)
        first = {c["metadata"]["name"] for c in managed_claims(api)}
        started = time.monotonic()

        def renewed() -> str:
            names = {c["metadata"]["name"] for c in managed_claims(api)}
            if names & first:
                return f"still {sorted(names & first)}"
            return all_running(api, 2)

        eventually_fine(renewed, within=20 + 60)
        assert time.monotonic() - started >= 10, "not before they expired"


def test_underused_nodes_consolidate_with_every_pod_running_and_then_hold_still(
    tmp_path: Path,
) -> None:
    underused = pool(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="5s",
                     budgets=[{"nodes": "100%"}])  # fmt: skip
    with running_karpy(tmp_path, nodepool=underused) as run:
        api = run.api
        # Six pods forced one per node, then the constraint is lifted (a new
        # Deployment without it takes over): six half-empty nodes for six small pods.
        api.create("deployments", deployment("spread", 6, cpu="500m", memory="512Mi",
                                             spec=one_per_node("spread")))  # fmt: skip
        eventually_fine(lambda: all_running(api, 6), within=90)
        nodes_before = len(live_nodes(api))
        api.create("pdbs", pod_disruption_budget("web", match_labels={"app": "web"},
                                                 max_unavailable=1))  # fmt: skip
        api.create("deployments", deployment("web", 6, cpu="250m", memory="256Mi"))
        eventually_fine(lambda: all_running(api, 12), within=90)
        scale(api, "spread", 0)
        # The lowest number of web pods running, as a peak of its negative.
        low = Sampler(lambda: -sum(
            1 for p in api.list("pods")
            if p["metadata"]["labels"].get("app") == "web"
            and (p.get("status") or {}).get("phase") == "Running"
            and not p["metadata"].get("deletionTimestamp")), initial=-6)  # fmt: skip

        def fewer() -> str:
            count = len(live_nodes(api))
            if count >= nodes_before or disrupting(api):
                return f"{count} nodes (from {nodes_before}), {disrupting(api)} disrupting"
            return all_running(api, 6)

        eventually_fine(fewer, within=150)
        # Consolidation may take a few steps; once nothing has changed for 25 s (more
        # than two passes), a further 25 s must change nothing either: no churn.
        settled = wait_until_settled(api, quiet=25.0, timeout=150)
        # PDB maxUnavailable 1: never fewer than five web pods running.
        assert -low.stop() >= 5
        assert len(settled) < nodes_before
        time.sleep(25)
        assert claim_names(api) == settled
        assert all_running(api, 6) == ""


def set_ready(api: Api, name: str, status: str, at: str | None = None) -> None:
    """Report the node's Ready condition as ``status`` since ``at`` (default now; its
    kubelet stopped first, so the sandbox does not report it Ready again; started again
    when ``status`` is True)."""
    kubelet = None if status == "True" else "stopped"
    api.patch("nodes", name, {"metadata": {"annotations": {"sandbox.karpy.dev/kubelet": kubelet}}})
    node = api.get("nodes", name)
    assert node is not None
    now = at or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conditions = [c for c in node["status"].get("conditions", []) if c["type"] != "Ready"]
    conditions.append({"type": "Ready", "status": status, "reason": "Test",
                       "lastTransitionTime": now, "lastHeartbeatTime": now})  # fmt: skip
    api.request(
        "PATCH",
        api.path("nodes", name) + "/status",
        {"status": {"conditions": conditions}},
        "application/merge-patch+json",
    )


def five_nodes_two_not_ready(api: Any) -> list[str]:
    """Five pods on five nodes, all Running; then the first two nodes (by name) turn
    NotReady, stamped the same second: were the second a second later, the first would be
    unhealthy alone for that second. Returns the node names, sorted."""
    api.create("deployments", deployment("web", 5, cpu="500m", memory="512Mi",
                                         spec=one_per_node("web")))  # fmt: skip
    eventually_fine(lambda: all_running(api, 5), within=90)
    nodes = sorted(n["metadata"]["name"] for n in live_nodes(api))
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    set_ready(api, nodes[0], "False", at=since)
    set_ready(api, nodes[1], "False", at=since)
    return nodes


def test_node_repair_replaces_unhealthy_nodes_one_at_a_time_replacement_first(
    tmp_path: Path,
) -> None:
    """Repair as a disruption method (Karpenter 1.15): two of five nodes unhealthy, an
    ``Unhealthy`` budget of one: never two repairs at once, each replacement launched while
    the unhealthy node is still there, and both replaced in the end."""
    budgets = [{"nodes": "1", "reasons": ["Unhealthy"]}, {"nodes": "100%"}]
    with running_karpy(
        tmp_path,
        nodepool=pool(consolidationPolicy="WhenEmpty", consolidateAfter="Never",
                      budgets=budgets),
        FEATURE_GATES="NodeRepair=true",
        FAKE_REPAIR_TOLERATION="3s",
    ) as run:  # fmt: skip
        api = run.api
        nodes = five_nodes_two_not_ready(api)
        seen: set[str] = set()

        def repaired() -> str:
            claims = api.list("nodeclaims")
            marked = [c for c in claims if any(
                k["type"] == "DisruptionReason" and k["reason"] == "Unhealthy"
                for k in (c.get("status") or {}).get("conditions") or ())]  # fmt: skip
            assert len(marked) <= 1, "the Unhealthy budget allows one repair at a time"
            by_name = {c["metadata"]["name"]: c for c in claims}
            for claim in marked:
                # Marked first, then its replacement created: it may not exist yet. But
                # the node goes only once its replacement is initialized.
                wanted = claim["metadata"]["annotations"]["disruption.karpy.dev/replacements"]
                ready = all(r in by_name and condition(by_name[r], "Initialized") == "True"
                            for r in filter(None, wanted.split(",")))  # fmt: skip
                deleting = bool(claim["metadata"].get("deletionTimestamp"))
                assert ready or not deleting, "replacement first"
                seen.add(claim["metadata"]["name"])
            left = {n["metadata"]["name"] for n in api.list("nodes")} & set(nodes[:2])
            return f"{sorted(left)} still there" if left else all_running(api, 5)

        eventually_fine(repaired, within=180)
        assert seen, "a repair was seen in progress"


def test_legacy_node_repair_replaces_an_unhealthy_node_unless_too_many_are(
    tmp_path: Path,
) -> None:
    with running_karpy(
        tmp_path,
        nodepool=pool(consolidationPolicy="WhenEmpty", consolidateAfter="Never"),
        FEATURE_GATES="NodeRepair=true",
        LEGACY_NODE_REPAIR="true",
        FAKE_REPAIR_TOLERATION="3s",
    ) as run:
        api = run.api
        # Two of five unhealthy: more than 20% (one, rounded up), so neither is repaired.
        nodes = five_nodes_two_not_ready(api)
        eventually_fine(lambda: "" if any(e["reason"] == "NodeRepairBlocked"
                                     for e in api.list("events")) else "not blocked yet",
                   within=30)  # fmt: skip
        time.sleep(5)
        assert {nodes[0], nodes[1]} <= {n["metadata"]["name"] for n in live_nodes(api)}
        # One of them recovers: one of five is within 20%, and is replaced.
        set_ready(api, nodes[1], "True")

        def repaired() -> str:
            names = {n["metadata"]["name"] for n in api.list("nodes")}
            if nodes[0] in names:
                return f"{nodes[0]} still there"
            return all_running(api, 5)

        eventually_fine(repaired, within=120)


def explain(kubeconfig: Path, node: str) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "karpy", "explain", "node", node, "--kubeconfig", str(kubeconfig)],
        capture_output=True, text=True, timeout=60, env=clean_env(), check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_explain_node_says_what_blocks_a_node_and_what_would_happen_to_the_others(
    tmp_path: Path,
) -> None:
    underused = pool(consolidationPolicy="WhenEmptyOrUnderutilized", consolidateAfter="1h")
    with running_karpy(tmp_path, nodepool=underused) as run:
        api = run.api
        term = {"labelSelector": {"matchLabels": {"group": "x"}},
                "topologyKey": "kubernetes.io/hostname"}  # fmt: skip
        apart = {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [term]}}}  # fmt: skip
        pinned = deployment("pinned", 1, cpu="500m", memory="512Mi", spec=apart,
                            labels={"group": "x"})  # fmt: skip
        pinned["spec"]["template"]["metadata"]["annotations"] = {
            "karpenter.sh/do-not-disrupt": "true"}  # fmt: skip
        api.create("deployments", pinned)
        api.create("deployments", deployment("free", 1, cpu="500m", memory="512Mi",
                                             spec=apart, labels={"group": "x"}))  # fmt: skip
        eventually_fine(lambda: all_running(api, 2), within=90)
        node_of = {p["metadata"]["labels"]["app"]: p["spec"]["nodeName"]
                   for p in api.list("pods")}  # fmt: skip
        blocked = explain(run.cluster.kubeconfig, node_of["pinned"])
        assert "not a candidate" in blocked
        assert "do-not-disrupt" in blocked and "pinned-" in blocked
        free = explain(run.cluster.kubeconfig, node_of["free"])
        assert "candidate:" in free
        assert "consolidatable: in " in free, "consolidateAfter 1h has not passed"
        assert "budget (Underutilized)" in free and "allows 1 of 2" in free
        assert "expiration: in " in free
        missing = subprocess.run(
            [sys.executable, "-m", "karpy", "explain", "node", "nope", "--kubeconfig",
             str(run.cluster.kubeconfig)], capture_output=True, text=True, env=clean_env(),
            timeout=60, check=False)  # fmt: skip
        assert missing.returncode == 1 and "no such Node" in missing.stdout


def test_termination_grace_period_ends_a_drain_a_pdb_would_block_forever(
    tmp_path: Path, rbac: bool = False
) -> None:
    """``rbac``: as the chart's ServiceAccount (tests/deploy/test_rbac_from_calls.py)."""
    skip_if_run_as_chart_account(rbac)
    bounded = pool(consolidationPolicy="WhenEmpty", consolidateAfter="Never")
    bounded["spec"]["template"]["spec"]["terminationGracePeriod"] = "30s"
    with running_karpy(tmp_path, nodepool=bounded,
                       rbac="termination-grace-period" if rbac else None) as run:  # fmt: skip
        api = run.api
        api.create("pdbs", pod_disruption_budget("db", match_labels={"app": "db"},
                                                 max_unavailable=0))  # fmt: skip
        api.create("deployments", deployment("db", 1, cpu="500m", memory="512Mi"))
        eventually_fine(lambda: all_running(api, 1), within=90)
        (claim,) = managed_claims(api)
        name = claim["metadata"]["name"]
        api.delete("nodeclaims", name)
        started = time.monotonic()

        def gone() -> str:
            names = {c["metadata"]["name"] for c in api.list("nodeclaims")}
            return f"{name} still there" if name in names else ""

        eventually_fine(gone, within=30 + 30)
        assert time.monotonic() - started >= 20, "the PDB held the drain until the deadline"
