# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "Deleting Nodes".

Karpenter's Its mark the node for deletion in its in-memory state; in a snapshot, the
equivalent is a NodeClaim and Node being deleted (deletion timestamp, finalizer still on)
and the node tainted ``karpenter.sh/disrupted``. A provisioning round then also schedules
the pods on that node that will need a new home: active ones, and terminating ones owned
by a StatefulSet, unless a fully blocking PodDisruptionBudget keeps them in place.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests import factories as f
from tests.scheduling.parity.harness import launched, provision
from tests.scheduling.parity.pools import suite_pool

SMALL_POD = {"memory": "100M"}
POD_LABELS = {"pdb-test": "value"}


def _deleting(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for obj in objects:
        obj["metadata"]["deletionTimestamp"] = f.SOME_TIME
        obj["metadata"]["finalizers"] = ["karpenter.sh/termination"]
        if obj["kind"] == "Node":
            obj["spec"]["taints"] = [f.taint("karpenter.sh/disrupted")]
    return objects


def _round_with_pod_on_deleting_node(
    *, evicted: bool = False, owner: dict[str, Any] | None = None, extra: tuple[Any, ...] = ()
) -> tuple[Any, dict[str, Any]]:
    pool = suite_pool()
    node_objects = _deleting(launched(pool, "small-instance-type"))
    pod = f.pod(
        labels=POD_LABELS,
        requests=SMALL_POD,
        owner_references=[f.owned_by(owner)] if owner else (),
        node_name=node_objects[1]["metadata"]["name"],
        deletion_timestamp=f.SOME_TIME if evicted else None,
        finalizers=["test/keep"] if evicted else (),
    )
    workload = [owner] if owner else []
    return provision(pool, node_objects, workload, pod, *extra), pod


def test_active_pod_on_a_deleting_node_gets_a_new_node() -> None:
    # It: Deleting Nodes / should re-schedule pods from a deleting node when pods are active
    done, _ = _round_with_pod_on_deleting_node()
    assert len(done.new_claims) == 1
    assert done.new_claims[0]["instanceType"] == "small-instance-type"


def test_terminating_pod_on_a_deleting_node_is_left_alone() -> None:
    # It: Deleting Nodes / should not re-schedule pods from a deleting node when pods are not active
    done, _ = _round_with_pod_on_deleting_node(evicted=True)
    assert done.new_claims == []


def test_daemon_pod_on_a_deleting_node_is_left_alone() -> None:
    # It: Deleting Nodes / should not re-schedule pods from a deleting node when pods are owned by a DaemonSet
    pool = suite_pool()
    ds = f.daemonset()
    name = f.unique_name("node")
    labels = {
        "karpenter.sh/nodepool": pool["metadata"]["name"],
        "node.kubernetes.io/instance-type": "small-instance-type",
        "karpenter.sh/capacity-type": "on-demand",
        "topology.kubernetes.io/zone": "test-zone-1a",
    }
    claim = f.nodeclaim(name, labels=labels, node_name=name, allocatable={"cpu": "32"})
    node = f.node(name, labels=labels, allocatable={"cpu": "32"}, provider_id=f"fake:///{name}")
    _deleting([claim, node])
    pod = f.pod(
        owner_references=[f.owned_by(ds)],
        requests=SMALL_POD,
        node_name=name,
        deletion_timestamp=f.SOME_TIME,
        finalizers=["test/keep"],
    )
    assert provision(pool, ds, claim, node, pod).new_claims == []


def test_terminating_replica_set_pod_on_a_deleting_node_is_left_alone() -> None:
    # It: Deleting Nodes / should not reschedule pods from a deleting node when pods are not active and they are owned by a ReplicaSet
    done, _ = _round_with_pod_on_deleting_node(evicted=True, owner=f.replica_set())
    assert done.new_claims == []


def test_terminating_stateful_set_pod_on_a_deleting_node_gets_a_new_node() -> None:
    # It: Deleting Nodes / should reschedule pods from a deleting node when pods are not active and they are owned by a StatefulSet
    done, _ = _round_with_pod_on_deleting_node(evicted=True, owner=f.stateful_set())
    assert len(done.new_claims) == 1
    assert done.new_claims[0]["instanceType"] == "small-instance-type"


def _pdb(name: str | None = None, **spec: Any) -> dict[str, Any]:
    return f.pod_disruption_budget(
        name, match_labels=POD_LABELS, current_healthy=1, desired_healthy=1, expected_pods=1, **spec
    )


@pytest.mark.parametrize(
    "pdbs",
    [
        pytest.param(lambda: [_pdb(max_unavailable=0)], id="0 max unavailable"),
        pytest.param(lambda: [_pdb(max_unavailable="0%")], id="0% max unavailable"),
        pytest.param(lambda: [_pdb(min_available="100%")], id="100% min available"),
        pytest.param(
            lambda: [_pdb("pdb-1", min_available="100%"), _pdb("pdb-2", min_available="100%")],
            id="multiple PDBs on the same pod",
        ),
    ],
)
def test_pod_held_by_fully_blocking_pdbs_is_left_alone(pdbs: Any) -> None:
    # DescribeTable: Deleting Nodes / should not reschedule pods from a deleting node when pods are blocked due to fully blocking PDBs
    done, _ = _round_with_pod_on_deleting_node(extra=tuple(pdbs()))
    assert done.new_claims == []
