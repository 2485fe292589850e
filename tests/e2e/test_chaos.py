"""End to end under failure: the controller killed with SIGKILL in the middle of a
scale-up, and the API server dropping watches, compacting history and failing requests.
Whatever happens, the cluster must end where an undisturbed run ends: every pod Running,
every instance matched by a NodeClaim (nothing leaked), and no capacity launched twice.
"""

from __future__ import annotations

import random
import time

import pytest

from tests.e2e.cluster import (
    Api,
    Obj,
    all_running,
    condition,
    deployment,
    running_karpy,
)
from tests.fixtures.waiting import eventually_fine

pytestmark = [pytest.mark.slow]


def one_per_host(app: str) -> Obj:
    term = {"topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": app}}}  # fmt: skip
    return {"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                             [term]}}}  # fmt: skip


WORKLOAD = (
    deployment("web", 120, cpu="500m", memory="512Mi"),
    deployment("solo", 25, cpu="250m", memory="256Mi", spec=one_per_host("solo")),
    deployment("big", 12, cpu="7", memory="20Gi"),
)
PODS = sum(d["spec"]["replicas"] for d in WORKLOAD)


def fake_nodes(api: Api) -> dict[str, Obj]:
    return {n["spec"]["providerID"]: n for n in api.list("nodes")
            if (n.get("spec") or {}).get("providerID", "").startswith("fake://")}  # fmt: skip


def settled_without_leaks(api: Api) -> str:
    """ "" once every pod runs and instances and NodeClaims match one to one."""
    running = all_running(api, PODS)
    if running:
        return running
    claims = {c["status"].get("providerID"): c for c in api.list("nodeclaims")
              if not c["metadata"].get("deletionTimestamp")}  # fmt: skip
    instances = fake_nodes(api)
    if set(claims) != set(instances):
        return f"instances {sorted(instances)} != NodeClaims {sorted(claims)}"
    return ""


def assert_nothing_launched_twice(api: Api) -> None:
    used = {p["spec"]["nodeName"] for p in api.list("pods")}
    empty = [n["metadata"]["name"] for n in fake_nodes(api).values()
             if n["metadata"]["name"] not in used]  # fmt: skip
    assert not empty, f"launched but never used (a pod was provided for twice): {empty}"
    for claim in api.list("nodeclaims"):
        assert condition(claim, "Initialized") == "True", claim["metadata"]["name"]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_during_a_scale_up_leaks_nothing_and_launches_nothing_twice(tmp_path, seed):
    rng = random.Random(seed)
    # The killed one holds no lease to wait out.
    with running_karpy(tmp_path, clean_exit=False, DISABLE_LEADER_ELECTION="true") as run:
        api = run.api
        for workload in WORKLOAD:
            api.create("deployments", workload)
        for _ in range(3):
            # Somewhere between the first batch window and NodeClaims being launched,
            # registered and initialized.
            time.sleep(rng.uniform(0.3, 2.5))
            run.restart()
        eventually_fine(lambda: settled_without_leaks(api), within=120)
        assert_nothing_launched_twice(api)


def test_dropped_watches_compaction_and_server_errors_change_nothing(tmp_path):
    with running_karpy(tmp_path) as run:
        api = run.api
        api.fault(
            {
                "action": "fail",
                "method": "POST",
                "path": "/apis/karpenter.sh/v1/nodeclaims",
                "status": 500,
                "count": 3,
            }
        )
        api.fault({"action": "fail", "method": "PATCH", "path": "/api/v1/nodes/*",
                   "status": 500, "count": 3})  # fmt: skip
        for workload in WORKLOAD:
            api.create("deployments", workload)
        for _ in range(6):
            time.sleep(0.5)
            api.fault({"action": "compact"})
            api.fault({"action": "drop-watches"})
        eventually_fine(lambda: settled_without_leaks(api), within=120)
        assert_nothing_launched_twice(api)


def test_instances_still_booting_when_the_controller_dies_join_after_its_restart(tmp_path):
    with running_karpy(tmp_path, clean_exit=False, DISABLE_LEADER_ELECTION="true",
                       FAKE_REGISTRATION_DELAY="4s") as run:  # fmt: skip
        api = run.api
        api.create("deployments", deployment("web", 30, cpu="1", memory="1Gi"))

        def launched_not_joined() -> str:
            claims = api.list("nodeclaims")
            if not claims or not all(condition(c, "Launched") == "True" for c in claims):
                return "NodeClaims not launched yet"
            return "" if not fake_nodes(api) else "a node joined before the kill"

        eventually_fine(launched_not_joined, within=30, interval=0.05)
        run.restart()
        # Liveness would give up on them only after 15 minutes: well within the
        # time allowed here, the instances must boot and their pods run.
        eventually_fine(lambda: all_running(api, 30), within=60)
        claims = {c["status"]["providerID"] for c in api.list("nodeclaims")}
        assert claims == set(fake_nodes(api)), "no instance lost, none launched twice"
