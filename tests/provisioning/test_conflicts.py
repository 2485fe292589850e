"""A Ready node shuts a nominated pod out by required pod anti-affinity, either way
round, in the namespaces the term names, for topology keys the node carries."""

from __future__ import annotations

from typing import Any

from karpy.provisioning.conflicts import shut_out_by_anti_affinity
from karpy.scheduling.pods import Pod, pod_from_dict

HOSTNAME = "kubernetes.io/hostname"
NODE = {HOSTNAME: "node-a", "topology.kubernetes.io/zone": "zone-a"}


def pod(name: str, labels: dict[str, str], *, namespace: str = "default",
        anti: list[dict[str, Any]] | None = None, phase: str = "Running") -> Pod:  # fmt: skip
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if anti:
        spec["affinity"] = {
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti}
        }
    return pod_from_dict({
        "metadata": {"name": name, "namespace": namespace, "uid": name, "labels": labels},
        "spec": spec, "status": {"phase": phase},
    })  # fmt: skip


def term(key: str = HOSTNAME, **extra: Any) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": "nginx"}}, "topologyKey": key, **extra}


def test_a_pod_avoiding_its_kind_is_shut_out_by_one_bound_there():
    nominated = pod("web-2", {"app": "nginx"}, anti=[term()])
    thief = pod("web-1", {"app": "nginx"}, anti=[term()])
    assert shut_out_by_anti_affinity(nominated, NODE, [thief])
    assert not shut_out_by_anti_affinity(nominated, NODE, [pod("db", {"app": "db"})])


def test_the_rule_is_symmetric():
    """A plain pod selected by a bound pod's anti-affinity is kept off its node too."""
    bound = pod("guard", {"app": "guard"}, anti=[term()])
    assert shut_out_by_anti_affinity(pod("web", {"app": "nginx"}), NODE, [bound])
    assert not shut_out_by_anti_affinity(pod("db", {"app": "db"}), NODE, [bound])


def test_any_domain_of_the_node_counts_but_not_keys_it_lacks():
    zonal = pod("web-2", {"app": "nginx"}, anti=[term("topology.kubernetes.io/zone")])
    assert shut_out_by_anti_affinity(zonal, NODE, [pod("web-1", {"app": "nginx"})])
    rack = pod("web-3", {"app": "nginx"}, anti=[term("example.com/rack")])
    assert not shut_out_by_anti_affinity(rack, NODE, [pod("web-1", {"app": "nginx"})])


def test_namespaces_follow_the_term():
    nominated = pod("web-2", {"app": "nginx"}, anti=[term()])
    elsewhere = pod("web-1", {"app": "nginx"}, namespace="other")
    assert not shut_out_by_anti_affinity(nominated, NODE, [elsewhere])
    named = pod("web-3", {"app": "nginx"}, anti=[term(namespaces=["other"])])
    assert shut_out_by_anti_affinity(named, NODE, [elsewhere])
    by_selector = pod("web-4", {"app": "nginx"}, anti=[term(namespaceSelector={})])
    assert not shut_out_by_anti_affinity(by_selector, NODE, [elsewhere])  # left to the window


def test_the_pod_itself_and_finished_pods_do_not_count():
    nominated = pod("web-2", {"app": "nginx"}, anti=[term()])
    assert not shut_out_by_anti_affinity(nominated, NODE, [nominated])
    done = pod("web-1", {"app": "nginx"}, phase="Succeeded")
    assert not shut_out_by_anti_affinity(nominated, NODE, [done])
