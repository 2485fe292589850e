"""Chaos convergence: objects churn at a steady rate while the server drops watch
streams, compacts its history (410s), throttles and fails requests at random; afterwards
cluster state must equal a fresh LIST of every kind: no lost objects, no phantoms, the
same resourceVersions, and indexes that agree with the objects."""

from __future__ import annotations

import asyncio
import random

import pytest

from karpy.kube import resources
from karpy.kube.informer import InformerOptions, WatchSpec
from karpy.sandbox.apiserver import APIServer
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.fixtures.waiting import eventually
from tests.kube.helpers import running

SPECS = {
    "pods": WatchSpec(resources.PODS, p.pod_info, kind=kinds.POD),
    "nodes": WatchSpec(resources.NODES, p.node_info, kind=kinds.NODE),
    "nodeclaims.karpenter.sh": WatchSpec(resources.NODECLAIMS, p.nodeclaim, kind=kinds.NODECLAIM),
    "poddisruptionbudgets": WatchSpec(resources.PDBS, p.budget_info, kind=kinds.PDB),
}
PATHS = ["/api/v1/pods", "/api/v1/nodes", "/apis/karpenter.sh/v1/nodeclaims",
         "/apis/policy/v1/poddisruptionbudgets"]  # fmt: skip
CHAOS = InformerOptions(page_size=7, backoff_initial=0.005, backoff_max=0.05, max_retry_after=0.05)
CHURN_SECONDS = 2.5
pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


class Churn:
    """Creates, changes and deletes objects of every watched kind, seeded."""

    def __init__(self, server: APIServer, rng: random.Random) -> None:
        self.server = server
        self.store = server.store
        self.rng = rng
        self.serial = 0

    def name(self, prefix: str) -> str:
        self.serial += 1
        return f"{prefix}-{self.serial}"

    def names(self, resource: str) -> list[tuple[str, str | None]]:
        return [(o["metadata"]["name"], o["metadata"].get("namespace"))
                for o in self.store.list(resource)]  # fmt: skip

    def step(self) -> None:
        rng = self.rng
        resource = rng.choice(list(SPECS))
        existing = self.names(resource)
        action = rng.random()
        if action < 0.45 or not existing:
            self.create(resource)
        elif action < 0.8:
            name, namespace = rng.choice(existing)
            self.change(resource, name, namespace)
        else:
            name, namespace = rng.choice(existing)
            self.store.delete(resource, name, namespace, grace_period_seconds=0)

    def create(self, resource: str) -> None:
        rng = self.rng
        nodes = [n for n, _ in self.names("nodes")]
        if resource == "pods":
            node = rng.choice(nodes) if nodes and rng.random() < 0.5 else None
            pod = f.pod(self.name("pod"), requests={"cpu": f"{rng.randint(1, 9)}00m"},
                        node_name=node, labels={"app": rng.choice("abc")})  # fmt: skip
            created = self.store.create("pods", pod)
            if node is None and rng.random() < 0.5:
                condition = f.condition("PodScheduled", "False", reason="Unschedulable")
                self.store.patch("pods", created["metadata"]["name"],
                                 {"status": {"conditions": [condition]}}, "default",
                                 subresource="status")  # fmt: skip
        elif resource == "nodes":
            name = self.name("node")
            self.store.create("nodes", f.node(name, provider_id=f"fake:///{name}"))
        elif resource == "nodeclaims.karpenter.sh":
            name = self.name("claim")
            self.store.create(resource, f.nodeclaim(name, nodepool=rng.choice(["a", "b"])))
            if nodes and rng.random() < 0.7:
                node = rng.choice(nodes)
                self.store.patch(resource, name, {"status": {"providerID": f"fake:///{node}"}},
                                 subresource="status")  # fmt: skip
        else:
            budget = f.pod_disruption_budget(self.name("pdb"), match_labels={"app": "a"},
                                             max_unavailable=rng.randint(0, 2))  # fmt: skip
            self.store.create(resource, budget)

    def change(self, resource: str, name: str, namespace: str | None) -> None:
        patch = {"metadata": {"labels": {"app": self.rng.choice("abc"),
                                         "v": str(self.serial)}}}  # fmt: skip
        self.serial += 1
        self.store.patch(resource, name, patch, namespace)


class Chaos:
    """Every few tens of milliseconds, one fault."""

    def __init__(self, server: APIServer, rng: random.Random) -> None:
        self.server = server
        self.rng = rng
        self.done: dict[str, int] = {}

    def step(self) -> None:
        rng, server = self.rng, self.server
        fault = rng.choice(["drop", "drop-clean", "compact", "429", "500", "cut"])
        path = rng.choice(PATHS)
        if fault == "drop":
            server.drop_watches(abrupt=True)
        elif fault == "drop-clean":
            server.drop_watches(abrupt=False)
        elif fault == "compact":
            server.compact()
            server.drop_watches(abrupt=rng.random() < 0.5)
        elif fault == "429":
            server.faults.throttle("GET", path, retry_after=1, count=rng.randint(1, 3))
        elif fault == "500":
            server.faults.error("GET", path, status=500, count=rng.randint(1, 3),
                                watch=rng.choice([True, False, None]))  # fmt: skip
        else:
            server.faults.drop("GET", path, count=rng.randint(1, 2))
        self.done[fault] = self.done.get(fault, 0) + 1


def expected(server: APIServer) -> dict[str, dict[str, object]]:
    out = {}
    for resource, spec in SPECS.items():
        records = {}
        for obj in server.store.list(resource):
            meta = obj["metadata"]
            key = spec.resource.key(meta.get("namespace"), meta["name"])
            records[key] = spec.project(obj)
        out[spec.name] = records
    return out


def differences(state: ClusterState, server: APIServer) -> list[str]:
    snapshot = state.snapshot()
    problems = []
    for kind, records in expected(server).items():
        have = dict(snapshot.of(kind).items())
        lost = sorted(records.keys() - have.keys())
        phantom = sorted(have.keys() - records.keys())
        stale = sorted(k for k in records.keys() & have.keys() if records[k] != have[k])
        if lost or phantom or stale:
            problems.append(f"{kind}: lost {lost[:5]}, phantom {phantom[:5]}, stale {stale[:5]}")
    return problems


def assert_indexes_agree(state: ClusterState) -> None:
    snap = state.snapshot()
    by_node: dict[str, set[str]] = {}
    for key, info in snap.pods.items():
        if info.pod.node_name:
            by_node.setdefault(info.pod.node_name, set()).add(key)
    assert {n: set(m) for n, m in snap.pods_by_node.items()} == by_node
    assert set(snap.pending) == {k for k, i in snap.pods.items() if i.provisionable}
    assert dict(snap.node_by_provider_id.items()) == {
        n.provider_id: name for name, n in snap.nodes.items() if n.provider_id
    }
    pools: dict[str, set[str]] = {}
    for name, claim in snap.nodeclaims.items():
        pools.setdefault(claim.metadata.labels.get("karpenter.sh/nodepool", ""), set()).add(name)
    assert {k: set(v) for k, v in snap.claims_by_nodepool.items()} == pools
    assert state.unpaired() == []
    for claim_name, node_name in snap.node_of_claim.items():
        claim = snap.nodeclaims[claim_name]
        assert snap.nodes[node_name].provider_id == claim.status.provider_id
        assert snap.claim_of_node[node_name] == claim_name


@pytest.mark.parametrize("apiserver_options", [{"history_size": 40, "bookmark_period": 0.1}])
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
async def test_state_converges_to_a_fresh_list_under_chaos(apiserver, seed):
    rng = random.Random(seed)
    churn, chaos = Churn(apiserver, rng), Chaos(apiserver, rng)
    for _ in range(30):
        churn.create(rng.choice(list(SPECS)))
    async with running(apiserver, list(SPECS.values()), options=CHAOS,
                       rng=random.Random(seed)) as (state, informers):  # fmt: skip
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CHURN_SECONDS
        step = 0
        while loop.time() < deadline:
            churn.step()
            if step % 8 == 0:
                chaos.step()
            step += 1
            await asyncio.sleep(rng.uniform(0.001, 0.01))
        apiserver.faults.clear()
        await eventually(lambda: not differences(state, apiserver), within=15, interval=0.05)
        assert state.synced(), (state.missing_kinds(), state.unpaired())
        assert_indexes_agree(state)
        for informer in informers:
            resource = next(r for r, s in SPECS.items() if s.name == informer.kind)
            listed = {
                informer.spec.resource.key(o["metadata"].get("namespace"), o["metadata"]["name"]):
                o["metadata"]["resourceVersion"] for o in apiserver.store.list(resource)
            }  # fmt: skip
            assert informer.versions == listed
        relists = sum(i.relists for i in informers)
    assert relists > len(informers), "the chaos never forced a relist"
    assert step > 100
