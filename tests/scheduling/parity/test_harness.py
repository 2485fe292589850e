"""Self-tests of the parity harness: reading decisions, counting skew, chaining rounds.

These run without the scheduler: they feed :class:`Round` hand-written simulate output,
so a bug in the harness shows up here rather than as a false parity failure.
"""

from __future__ import annotations

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import (
    HOSTNAME,
    REGISTERED,
    RESERVATION_ID,
    ZONE,
    Round,
    default_catalog,
    key,
    launch_reservations,
    launched,
    materialize,
    selector_matches,
)
from tests.scheduling.parity.pools import suite_pool


def _claim(name: str, pool: str, zone: str, pods: list[str]) -> dict[str, object]:
    return {
        "name": name,
        "nodePool": pool,
        "instanceType": "small-instance-type",
        "zone": zone,
        "capacityType": "spot",
        "price": 0.41,
        "instanceTypeOptions": ["small-instance-type"],
        "labels": {ZONE: zone, HOSTNAME: name, "karpenter.sh/nodepool": pool},
        "requests": {},
        "pods": pods,
    }


def test_round_reads_new_existing_bound_and_unschedulable_pods() -> None:
    pool = suite_pool()
    existing = launched(pool, "small-instance-type", zone="test-zone-2", name="old")
    bound = f.pod(labels={"app": "a"}, node_name="old")
    new, onto_old, stuck = (f.unschedulable_pod(labels={"app": "a"}) for _ in range(3))
    result = {
        "nodeClaims": [_claim("fresh", pool["metadata"]["name"], "test-zone-1", [key(new)])],
        "existingNodes": [{"name": "old", "pods": [key(onto_old)]}],
        "unschedulable": [{"pod": key(stuck), "reason": "no room"}],
        "stats": {},
    }
    done = Round([pool, *existing, bound, new, onto_old, stuck], result, default_catalog())

    assert done.node(new).new and done.node(new).zone == "test-zone-1"
    assert not done.node(onto_old).new and done.node(onto_old).zone == "test-zone-2"
    assert done.node(bound).name == "old"
    assert done.not_scheduled(stuck) == "no room"
    assert done.nodes() == ["old", "fresh"]
    spread = f.topology_spread(ZONE, match_labels={"app": "a"})
    assert done.skew(spread) == [1, 2]
    assert done.skew(f.topology_spread(HOSTNAME)) == [1, 2]


def test_skew_ignores_terminal_terminating_foreign_and_unlabelled_pods() -> None:
    pool = suite_pool()
    zoned = launched(pool, "small-instance-type", name="zoned")
    bare = f.node("bare", hostname_label=False)
    counted = f.pod(labels={"app": "a"}, node_name="zoned")
    ignored = [
        f.pod(labels={"app": "a"}, node_name="zoned", phase="Succeeded"),
        f.pod(labels={"app": "a"}, node_name="zoned", deletion_timestamp=f.SOME_TIME),
        f.pod(labels={"app": "a"}, node_name="zoned", namespace="other"),
        f.pod(labels={"app": "b"}, node_name="zoned"),
        f.pod(labels={"app": "a"}, node_name="bare"),
        f.pod(labels={"app": "a"}),
    ]
    result: dict[str, list[object]] = {"nodeClaims": [], "existingNodes": [], "unschedulable": []}
    done = Round([pool, *zoned, bare, counted, *ignored], result, default_catalog())
    assert done.skew(f.topology_spread(ZONE, match_labels={"app": "a"})) == [1]
    assert done.skew(f.topology_spread(ZONE), namespace="") == [3]


def test_selector_matching_follows_label_selector_semantics() -> None:
    labels = {"app": "web", "tier": "front"}
    assert selector_matches(None, labels)
    assert selector_matches({}, labels)
    assert selector_matches({"matchLabels": {"app": "web"}}, labels)
    assert not selector_matches({"matchLabels": {"app": "db"}}, labels)
    expression = f.match_expression
    assert selector_matches({"matchExpressions": [expression("app", "In", ["web"])]}, labels)
    assert not selector_matches({"matchExpressions": [expression("app", "NotIn", ["web"])]}, labels)
    assert selector_matches({"matchExpressions": [expression("x", "NotIn", ["web"])]}, labels)
    assert selector_matches({"matchExpressions": [expression("tier", "Exists")]}, labels)
    assert not selector_matches({"matchExpressions": [expression("tier", "DoesNotExist")]}, labels)


def test_launched_node_carries_what_the_fake_provider_labels_and_reserves() -> None:
    pool = suite_pool(
        labels={"team": "a"},
        requirements=[f.nodepool_requirement("tier", "In", ["gold"])],
        startup_taints=[f.taint("boot")],
    )
    claim, node = launched(pool, "arm-instance-type", zone="test-zone-3", capacity_type="on-demand")
    labels = node["metadata"]["labels"]
    assert labels["team"] == "a" and labels["tier"] == "gold"
    assert labels["node.kubernetes.io/instance-type"] == "arm-instance-type"
    assert labels[cat.SPECIAL] == "optional" and labels[cat.INTEGER] == "16"
    assert labels[ZONE] == "test-zone-3" and labels[REGISTERED] == "true"
    assert node["status"]["allocatable"]["cpu"] == "15900m"
    assert node["spec"]["taints"] == [f.taint("boot")]
    assert claim["status"]["nodeName"] == node["metadata"]["name"]


def test_materialize_launches_claims_and_binds_only_placed_pods() -> None:
    pool = suite_pool()
    placed, left = f.unschedulable_pod(), f.unschedulable_pod()
    result = {
        "nodeClaims": [_claim("n1", pool["metadata"]["name"], "test-zone-2", [key(placed)])],
        "existingNodes": [],
        "unschedulable": [{"pod": key(left), "reason": "r"}],
        "stats": {},
    }
    objects = materialize(Round([pool, placed, left], result, default_catalog()))
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    assert by_name["Pod", placed["metadata"]["name"]]["spec"]["nodeName"] == "n1"
    assert "nodeName" not in by_name["Pod", left["metadata"]["name"]]["spec"]
    assert by_name["Node", "n1"]["metadata"]["labels"][ZONE] == "test-zone-2"
    assert by_name["NodeClaim", "n1"]["status"]["nodeName"] == "n1"


def test_launching_a_reserved_claim_uses_up_its_reservation() -> None:
    small = cat.instance_type("small-instance-type", resources={"cpu": "2"})
    for reservation, capacity in (("r-a", 2), ("r-b", 1)):
        offering = cat.offering("test-zone-1", "reserved", 0.00001)
        offering.update(reservationId=reservation, reservationCapacity=capacity)
        small["offerings"].append(offering)
    claims = [_claim(f"c{i}", "default", "test-zone-1", []) for i in range(3)]
    for claim, reservation in zip(claims, ("r-a", "r-b"), strict=False):
        claim["capacityType"] = "reserved"
        claim["labels"][RESERVATION_ID] = reservation  # type: ignore[index]
    empty: dict[str, list[object]] = {"existingNodes": [], "unschedulable": []}
    done = Round([], {"nodeClaims": claims, **empty}, cat.catalog([small]))
    (entry,) = launch_reservations(done)["instanceTypes"]
    left = {o.get("reservationId"): o for o in entry["offerings"]}
    assert (left["r-a"]["reservationCapacity"], left["r-a"]["available"]) == (1, True)
    assert (left["r-b"]["reservationCapacity"], left["r-b"]["available"]) == (0, False)
    assert small["offerings"][-1]["reservationCapacity"] == 1  # the input is not changed
