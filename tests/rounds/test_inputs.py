"""The bridge from cluster state to a round's scheduler inputs."""

from __future__ import annotations

from karpy.apis.nodeclaim import NodeClaim
from karpy.rounds.inputs import build_round_input, estimate_unlaunched
from karpy.scheduling.catalog import parse_catalog
from karpy.state import kinds
from karpy.state import records as p
from karpy.state.cluster import ClusterState
from tests import factories as f
from tests.rounds.test_nodeclaims import CATALOG_TWO

TYPES = {it.name: it for it in parse_catalog(CATALOG_TWO).instance_types}
GiB = 1024**3 * 1000


def unlaunched_claim(name: str = "general-abcde", *, zone: str | None = None) -> NodeClaim:
    requirements = [
        f.nodepool_requirement("node.kubernetes.io/instance-type", "In",
                               ["m5.large", "m5.xlarge"]),
        f.nodepool_requirement("karpenter.sh/nodepool", "In", ["general"]),
    ]  # fmt: skip
    if zone is not None:
        requirements.append(f.nodepool_requirement("topology.kubernetes.io/zone", "In", [zone]))
    obj = f.nodeclaim(name, nodepool="general", requirements=requirements,
                      requests={"cpu": "1", "memory": "1Gi"}, launched=False)  # fmt: skip
    obj["status"] = {}
    return NodeClaim.from_dict(obj)


def state_with(*, pods=(), nodes=(), claims=()) -> ClusterState:
    state = ClusterState()
    state.apply(kinds.POD, [(f"{o['metadata']['namespace']}/{o['metadata']['name']}",
                             p.pod_info(o)) for o in pods], [])  # fmt: skip
    state.apply(kinds.NODE, [(o["metadata"]["name"], p.node_info(o)) for o in nodes], [])
    state.apply(kinds.NODECLAIM, [(c.name, c) for c in claims], [])
    return state


def test_an_unlaunched_claim_counts_with_its_smallest_option_and_largest_capacity():
    claim = estimate_unlaunched(unlaunched_claim(zone="us-west-2a"), TYPES)
    assert claim.status.allocatable["cpu"] == 2000 - 70, "m5.large's allocatable"
    assert claim.status.allocatable["memory"] == 7 * GiB
    assert claim.status.capacity["cpu"] == 4000, "m5.xlarge's capacity, for limits"
    assert claim.metadata.labels["topology.kubernetes.io/zone"] == "us-west-2a", (
        "a single-valued requirement stands in for the label the launch will set"
    )


def test_a_launched_claim_is_left_as_it_is():
    obj = f.nodeclaim("x", nodepool="general", allocatable={"cpu": "3"})
    claim = NodeClaim.from_dict(obj)
    assert estimate_unlaunched(claim, TYPES) is claim


def test_a_nominated_pod_is_counted_on_its_target_not_scheduled_again():
    claim = unlaunched_claim()
    nominated = f.unschedulable_pod("web-1", requests={"cpu": "1"})
    fresh = f.unschedulable_pod("web-2", requests={"cpu": "1"})
    state = state_with(pods=[nominated, fresh], claims=[claim])
    round_input = build_round_input(state.snapshot(), TYPES,
                                    nominated={"default/web-1": claim.name})  # fmt: skip
    assert [pod.key for pod in round_input.pods] == ["default/web-2"]
    assert round_input.nominated == 1
    bound = {pod.key: pod.node_name for pod in round_input.cluster.bound_pods}
    assert bound == {"default/web-1": claim.name}
    stand_ins = [n.name for n in round_input.cluster.nodes]
    assert stand_ins == [claim.name], "a stand-in Node lets topology count the nominated pod"


def test_pods_of_a_deleting_node_are_scheduled_with_the_pending_ones():
    node = f.node("old", allocatable={"cpu": "4"}, deletion_timestamp="2025-01-01T00:00:00Z",
                  finalizers=["karpenter.sh/termination"])  # fmt: skip
    moving = f.pod("db-1", node_name="old", requests={"cpu": "1"},
                   owner_references=[f.owner_reference("ReplicaSet", "db")])  # fmt: skip
    daemon = f.pod("agent-1", node_name="old", requests={"cpu": "100m"},
                   owner_references=[f.owner_reference("DaemonSet", "agent",
                                                       api_version="apps/v1")])  # fmt: skip
    state = state_with(pods=[moving, daemon], nodes=[node])
    round_input = build_round_input(state.snapshot(), TYPES, nominated={})
    assert [pod.key for pod in round_input.pods] == ["default/db-1"]
    assert round_input.pending == 0
