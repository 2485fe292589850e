"""The pure rules the stand-ins share: template hashes, deletion order, node matching,
the Unschedulable message."""

from __future__ import annotations

import re
from typing import Any

from karpy.sandbox.apiserver.store import Entry
from karpy.sandbox.apiserver.tables import parse_time
from karpy.sandbox.cluster.kubepod import node_spec, pod_info
from karpy.sandbox.cluster.nodematch import node_accepts
from karpy.sandbox.cluster.podtemplate import safe_encode, template_hash, without_hash_label
from karpy.sandbox.cluster.replicasets import pods_to_delete
from karpy.sandbox.cluster.scheduleone import Cycle
from karpy.sandbox.cluster.unschedulable import NoFit, excluded
from tests import factories as f


def test_template_hash_is_stable_and_spelled_like_upstream():
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c"}]}}
    digest = template_hash(template)
    assert digest == template_hash({"spec": template["spec"], "metadata": template["metadata"]})
    assert re.fullmatch(r"[bcdfghjklmnpqrstvwxz2456789]{1,10}", digest)
    assert template_hash(template, collision_count=1) != digest
    assert safe_encode("0123456789") == "456789bcdf"


def test_the_hash_label_is_ignored_when_templates_are_compared():
    plain = {"metadata": {"labels": {"app": "web"}}, "spec": {}}
    hashed = {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}}, "spec": {}}
    assert without_hash_label(hashed) == plain


def _pod(name: str, *, node: str | None = None, phase: str = "Pending", ready_at: str | None = None,
         created: str = "2024-01-01T00:00:00Z", restarts: int = 0) -> Entry:  # fmt: skip
    conditions = (
        [{"type": "Ready", "status": "True", "lastTransitionTime": ready_at}] if ready_at else []
    )
    pod = f.pod(name, node_name=node, phase=phase, conditions=conditions)
    pod["metadata"]["creationTimestamp"] = created
    pod["status"]["containerStatuses"] = [{"name": "c", "restartCount": restarts}]
    return Entry(pod)


def test_scale_down_order_follows_the_replicaset_controller():
    pods = [
        _pod("old-ready", node="n", phase="Running", ready_at="2024-01-01T00:00:00Z"),
        _pod("new-ready", node="n", phase="Running", ready_at="2024-01-01T01:00:00Z"),
        _pod("restarted", node="n", phase="Running", ready_at="2024-01-01T00:00:00Z", restarts=3),
        _pod("unready", node="n", phase="Running"),
        _pod("pending-old", node="n", created="2024-01-01T00:00:00Z"),
        _pod("pending-new", node="n", created="2024-01-02T00:00:00Z"),
        _pod("unassigned"),
    ]
    order = [e.obj["metadata"]["name"] for e in pods_to_delete(pods, len(pods))]
    assert order == [
        "unassigned",
        "pending-new",
        "pending-old",
        "unready",
        "new-ready",
        "restarted",
        "old-ready",
    ]


def test_node_affinity_terms_are_ored_and_their_requirements_anded():
    labels = {"zone": "a", "size": "8"}
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["b"]},
                                  {"key": "size", "operator": "Gt", "values": ["4"]}]},
        ]}}}}  # fmt: skip
    assert node_accepts(spec, labels, "n1")
    assert not node_accepts({**spec, "nodeSelector": {"zone": "b"}}, labels, "n1")
    by_name = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                "values": ["n2"]}]}]}}}}  # fmt: skip
    assert node_accepts(by_name, labels, "n2") and not node_accepts(by_name, labels, "n1")
    required: dict[str, Any] = {"nodeSelectorTerms": [{}]}
    empty_term = {"affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": required}}}  # fmt: skip
    assert not node_accepts(empty_term, labels, "n1")


def test_unschedulable_message_counts_the_first_failure_per_node():
    nodes = [
        f.node("not-ready", ready="False", allocatable={"cpu": "4"}),
        f.node("tainted", taints=[f.taint("gpu", "true")], allocatable={"cpu": "4", "pods": "9"}),
        f.node("small", labels={"zone": "a"}, allocatable={"cpu": "1", "pods": "9"}),
        f.node("full", labels={"zone": "a"}, allocatable={"cpu": "4", "pods": "1"}),
        f.node("elsewhere", labels={"zone": "b"}, allocatable={"cpu": "4", "pods": "9"}),
    ]
    occupant = pod_info(f.pod("occupant", node_name="full"))
    cycle = Cycle([node_spec(n) for n in nodes], [occupant])
    verdict = cycle.schedule(pod_info(f.pod(requests={"cpu": "2"}, node_selector={"zone": "a"})))
    assert isinstance(verdict, NoFit)
    assert verdict.render(len(nodes), excluded([Entry(n) for n in nodes])) == (
        "0/5 nodes are available: 1 Insufficient cpu, 1 Too many pods, 1 node(s) didn't match "
        "Pod's node affinity/selector, 1 node(s) had untolerated taint {gpu: true}, "
        "1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."
    )


def test_scale_down_takes_the_lowest_pod_deletion_cost_then_the_doubled_up_first():
    """kube-controller-manager's steps 4 and 5: the annotation karpy's
    PodDeletionCostManagement writes, then pods sharing a node with more of their kind."""
    ready = "2024-01-01T00:00:00Z"

    def running(name: str, node: str, cost: str | None = None) -> Entry:
        entry = _pod(name, node=node, phase="Running", ready_at=ready)
        if cost is not None:
            entry.obj["metadata"]["annotations"] = {
                "controller.kubernetes.io/pod-deletion-cost": cost
            }
        return entry

    pods = [running("a1", "a"), running("a2", "a"), running("b1", "b"),
            running("c1", "c", cost="-5"), running("c2", "c", cost="junk"),
            running("d1", "d", cost="100")]  # fmt: skip
    order = [e.obj["metadata"]["name"] for e in pods_to_delete(pods, len(pods))]
    # c1 has the lowest cost; "junk" counts 0 like no annotation; among cost 0, the
    # doubled-up nodes (a: 2 pods, c: 2 pods) go before b's single pod; d1 costs most.
    assert order == ["c1", "a1", "a2", "c2", "b1", "d1"]
    # Related pods (another ReplicaSet of the same Deployment) count towards doubling up.
    extra = [running("b-old", "b"), running("b-old2", "b")]
    order = [e.obj["metadata"]["name"]
             for e in pods_to_delete(pods, len(pods), related=[*pods, *extra])]  # fmt: skip
    assert order == ["c1", "b1", "a1", "a2", "c2", "d1"]


def test_scale_down_compares_times_on_a_logarithmic_scale():
    """LogarithmicScaleDown: ready 100 s and 110 s ago are in the same power-of-two
    bucket, so UID decides, not the 10 s; 1 s ago is a different bucket and goes first."""
    now = parse_time("2024-01-01T01:00:00Z") or 0.0
    pods = [_pod("p-old", node="n", phase="Running", ready_at="2024-01-01T00:58:10Z"),
            _pod("p-new", node="n", phase="Running", ready_at="2024-01-01T00:58:20Z"),
            _pod("p-now", node="n", phase="Running", ready_at="2024-01-01T00:59:59Z")]  # fmt: skip
    pods[0].obj["metadata"]["uid"], pods[1].obj["metadata"]["uid"] = "uid-1", "uid-2"
    order = [e.obj["metadata"]["name"] for e in pods_to_delete(pods, 3, now=now)]
    assert order == ["p-now", "p-old", "p-new"]
    plain = [e.obj["metadata"]["name"] for e in pods_to_delete(pods, 3)]
    assert plain == ["p-now", "p-new", "p-old"]
