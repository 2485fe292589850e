"""Properties of every round on random clusters (hypothesis).

Each example builds a small random cluster (instance types, one or two NodePools, existing
nodes with bound pods, DaemonSets, pending pods with selectors, tolerations, hostname
anti-affinity and spread constraints), runs one round through ``simulate`` and checks what
must hold whatever the input: placed pods fit, hard constraints hold, limits hold, the
output is deterministic, and more instance types never strand more pods.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.base.quantity import parse_quantity
from karpy.scheduling.solver import Scheduler
from karpy.simulate import simulate
from karpy.simulate.render import to_document
from karpy.simulate.snapshot import build_input
from tests import factories as f

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ARCH = "kubernetes.io/arch"
ZONES = ("z1", "z2", "z3")
APPS = ("a", "b", "c")
Obj = dict[str, Any]

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def instance_types(draw: st.DrawFn) -> list[Obj]:
    count = draw(st.integers(1, 5))
    out = []
    for i in range(count):
        cpu = draw(st.sampled_from([1, 2, 4, 8]))
        memory = draw(st.sampled_from([2, 4, 8, 16]))
        zones = draw(st.lists(st.sampled_from(ZONES), min_size=1, max_size=3, unique=True))
        out.append(
            {
                "name": f"t{i}",
                "capacity": {
                    "cpu": str(cpu),
                    "memory": f"{memory}Gi",
                    "pods": str(draw(st.integers(2, 12))),
                },
                "overhead": {"cpu": "100m", "memory": "100Mi"},
                "labels": {ARCH: draw(st.sampled_from(["amd64", "arm64"]))},
                "offerings": [
                    {
                        "zone": z,
                        "capacityType": "on-demand",
                        "price": round(cpu * 0.05 + memory * 0.01 + i * 0.001, 4),
                    }
                    for z in sorted(zones)
                ],
            }
        )
    return out


def _pod(draw: st.DrawFn, i: int, spread_key: str) -> Obj:
    app = draw(st.sampled_from(APPS))
    options: dict[str, Any] = {
        "labels": {"app": app},
        "requests": {
            "cpu": draw(st.sampled_from(["100m", "500m", "1", "1500m", "3"])),
            "memory": draw(st.sampled_from(["128Mi", "1Gi", "3Gi"])),
        },
    }
    if draw(st.booleans()):
        options["node_selector"] = {
            draw(st.sampled_from([ZONE, ARCH])): draw(st.sampled_from([*ZONES, "amd64"]))
        }
    if draw(st.booleans()):
        options["tolerations"] = [f.toleration("dedicated", value="x")]
    if app == "a":
        options["pod_anti_affinity"] = [f.pod_affinity_term(HOSTNAME, match_labels={"app": "a"})]
    if app == "b":
        # Every "b" pod carries the same constraint, so each placement is checked by it.
        options["topology_spread_constraints"] = [
            f.topology_spread(spread_key, match_labels={"app": "b"})
        ]
    if draw(st.integers(0, 9)) == 0:
        options["host_ports"] = [8080]
    return f.pod(f"p{i}", **options)


@st.composite
def clusters(draw: st.DrawFn, topology: bool = True, limits: bool = True) -> tuple[list[Obj], Obj]:
    types = draw(instance_types())
    pools = [
        f.nodepool(
            "main",
            limits={"cpu": str(draw(st.integers(4, 40)))}
            if limits and draw(st.booleans())
            else None,
        )
    ]
    if draw(st.booleans()):
        pools.append(
            f.nodepool(
                "tainted", weight=10, taints=[f.taint("dedicated", "x")], labels={"team": "x"}
            )
        )
    objects: list[Obj] = list(pools)
    for n in range(draw(st.integers(0, 2))):
        name = f"existing-{n}"
        objects.append(
            f.node(
                name,
                labels={ZONE: draw(st.sampled_from(ZONES)), ARCH: "amd64"},
                allocatable={"cpu": "2", "memory": "4Gi", "pods": "5"},
            )
        )
        if draw(st.booleans()):
            objects.append(
                f.pod(f"bound-{n}", labels={"app": "c"}, requests={"cpu": "500m"}, node_name=name)
            )
    if draw(st.booleans()):
        objects.append(
            f.daemonset("agent", template=f.pod(requests={"cpu": "100m", "memory": "64Mi"}))
        )
    spread_key = draw(st.sampled_from([ZONE, HOSTNAME]))
    for i in range(draw(st.integers(1, 14))):
        pod = _pod(draw, i, spread_key)
        if not topology:
            pod["spec"].pop("affinity", None)
            pod["spec"].pop("topologySpreadConstraints", None)
        objects.append(pod)
    return objects, {"instanceTypes": types}


def _landings(doc: Obj) -> dict[str, tuple[str, bool]]:
    out = {}
    for claim in doc["nodeClaims"]:
        for key in claim["pods"]:
            out[key] = (claim["name"], True)
    for node in doc["existingNodes"]:
        for key in node["pods"]:
            out[key] = (node["name"], False)
    return out


def _requests(pod: Obj) -> Counter[str]:
    total: Counter[str] = Counter()
    for container in pod["spec"]["containers"]:
        for name, value in (container.get("resources", {}).get("requests") or {}).items():
            total[name] += parse_quantity(value)
    total["pods"] += 1000
    return total


@SETTINGS
@given(clusters())
def test_placed_pods_fit_and_their_hard_constraints_hold(cluster: tuple[list[Obj], Obj]) -> None:
    objects, catalog = cluster
    doc = simulate(objects, catalog)
    pods = {f"default/{o['metadata']['name']}": o for o in objects if o["kind"] == "Pod"}
    types = {t["name"]: t for t in catalog["instanceTypes"]}
    pools = {o["metadata"]["name"]: o for o in objects if o["kind"] == "NodePool"}
    nodes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Node"}
    for claim in doc["nodeClaims"]:
        entry = types[claim["instanceType"]]
        allocatable = {
            k: parse_quantity(v) - parse_quantity(entry["overhead"].get(k, "0"))
            for k, v in entry["capacity"].items()
        }
        for name, value in claim["requests"].items():
            assert parse_quantity(value) <= allocatable.get(name, 0), (claim["name"], name)
        placed: Counter[str] = Counter()
        for key in claim["pods"]:
            placed.update(_requests(pods[key]))
        for name, value in placed.items():
            assert value <= parse_quantity(claim["requests"][name])
        taints = pools[claim["nodePool"]]["spec"]["template"]["spec"].get("taints") or []
        for key in claim["pods"]:
            _assert_constraints(pods[key], claim["labels"], taints)
    for existing in doc["existingNodes"]:
        node = nodes[existing["name"]]
        used: Counter[str] = Counter()
        for pod in pods.values():
            if pod["spec"].get("nodeName") == node["metadata"]["name"]:
                used.update(_requests(pod))
        for key in existing["pods"]:
            used.update(_requests(pods[key]))
            _assert_constraints(
                pods[key], node["metadata"]["labels"], node["spec"].get("taints") or []
            )
        for name, value in used.items():
            assert value <= parse_quantity(node["status"]["allocatable"].get(name, "0"))
    _assert_topology(doc, pods, nodes, catalog)


def _assert_constraints(pod: Obj, labels: dict[str, str], taints: list[Obj]) -> None:
    for key, value in (pod["spec"].get("nodeSelector") or {}).items():
        assert labels.get(key) == value
    tolerated = {(t.get("key"), t.get("value")) for t in pod["spec"].get("tolerations") or []}
    for taint in taints:
        assert (taint["key"], taint.get("value")) in tolerated


def _assert_topology(doc: Obj, pods: dict[str, Obj], nodes: dict[str, Obj], catalog: Obj) -> None:
    landings = _landings(doc)
    zone_of = {c["name"]: c["labels"][ZONE] for c in doc["nodeClaims"]}
    zone_of.update({name: n["metadata"]["labels"][ZONE] for name, n in nodes.items()})
    per_host: Counter[tuple[str, str]] = Counter()
    per_zone: Counter[str] = Counter()
    spread_key = None
    for key, (node, _) in landings.items():
        app = pods[key]["metadata"]["labels"]["app"]
        per_host[(node, app)] += 1
        if app == "b":
            per_zone[zone_of[node]] += 1
            spread_key = pods[key]["spec"]["topologySpreadConstraints"][0]["topologyKey"]
    for (_, app), count in per_host.items():
        if app == "a":
            assert count == 1  # hostname anti-affinity: one per node
    if spread_key == HOSTNAME:
        assert all(count <= 1 for (_, app), count in per_host.items() if app == "b")
    pinned = any(ZONE in (p["spec"].get("nodeSelector") or {}) for p in pods.values())
    if spread_key == ZONE and not pinned:
        # Skew is measured over the zones a pod may use; pinned pods narrow that, so the
        # global bound only holds when no "b" pod selects a zone.
        domains = {o["zone"] for t in catalog["instanceTypes"] for o in t["offerings"]}
        domains |= {n["metadata"]["labels"][ZONE] for n in nodes.values()}
        counts = [per_zone[z] for z in domains]
        assert max(counts) - min(counts) <= 1


@SETTINGS
@given(clusters())
def test_nodepool_limits_hold(cluster: tuple[list[Obj], Obj]) -> None:
    objects, catalog = cluster
    doc = simulate(objects, catalog)
    types = {t["name"]: t for t in catalog["instanceTypes"]}
    for pool in (o for o in objects if o["kind"] == "NodePool"):
        limit = (pool["spec"].get("limits") or {}).get("cpu")
        if limit is None:
            continue
        used = sum(
            parse_quantity(types[c["instanceType"]]["capacity"]["cpu"])
            for c in doc["nodeClaims"]
            if c["nodePool"] == pool["metadata"]["name"]
        )
        assert used <= parse_quantity(limit)


@SETTINGS
@given(clusters())
def test_results_are_deterministic(cluster: tuple[list[Obj], Obj]) -> None:
    objects, catalog = cluster
    first, second = simulate(objects, catalog), simulate(list(reversed(objects)), catalog)
    first["stats"].pop("seconds")
    second["stats"].pop("seconds")
    assert first == second


@SETTINGS
@given(clusters(topology=False, limits=False), instance_types())
def test_more_instance_types_never_strand_more_pods(
    cluster: tuple[list[Obj], Obj], extra: list[Obj]
) -> None:
    objects, catalog = cluster
    before = simulate(objects, catalog)
    for i, entry in enumerate(extra):
        entry["name"] = f"extra-{i}"
    wider = {"instanceTypes": [*catalog["instanceTypes"], *extra]}
    after = simulate(objects, wider)
    assert {u["pod"] for u in after["unschedulable"]} <= {u["pod"] for u in before["unschedulable"]}


@SETTINGS
@given(clusters())
def test_claim_lanes_change_no_decision(cluster: tuple[list[Obj], Obj]) -> None:
    """Walking only the planned claims whose zones topology allows (lanes) decides exactly
    what walking every claim decides."""
    objects, catalog = cluster

    def simulate_with(*, lanes: bool) -> dict[str, Any]:
        inputs = build_input(objects, catalog)
        results = Scheduler(inputs.context, inputs.cluster, lanes=lanes).solve(inputs.pods)
        return to_document(results, seconds=0.0)

    assert simulate_with(lanes=True) == simulate_with(lanes=False)
