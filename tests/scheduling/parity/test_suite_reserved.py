# ruff: noqa: E501 -- the comments quote Karpenter's It names verbatim
"""Parity with Karpenter's suite_test.go, Describe "Reserved Instance Types".

The fake provider offers three types (large 6 cpu, medium 3 cpu, small 2 cpu); medium
and small each also have one reserved offering in test-zone-1 (``r-<type>``, capacity 1)
at a hundred-thousandth of the on-demand price. A NodeClaim holds every reservation it
could launch into for the rest of its round (Karpenter's pessimism), and launching one
uses up an instance of the reservation it lands in: `launch_reservations` turns a round's
decisions into the catalog the next round sees.

Where Karpenter gives one NodePool its own instance types (``InstanceTypesForNodePool``)
to give it a reservation the other pool cannot use, the catalog here offers both
reservations and each pool excludes the other's with a ``NotIn`` requirement on the
reservation ID label, which is how a pool is kept out of a reservation in karpy's model.
"""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.parity import catalog as cat
from tests.scheduling.parity.harness import (
    CAPACITY_TYPE,
    HOSTNAME,
    INSTANCE_TYPE,
    NODEPOOL,
    RESERVATION_ID,
    ZONE,
    Landing,
    Round,
    launch_reservations,
    materialize,
    provision,
)
from tests.scheduling.parity.pools import suite_pool

APP = {"app": "test"}
SMALL = "small-instance-type"


def _type(name: str, cpu: str, *reservations: tuple[str, int]) -> dict[str, Any]:
    entry = cat.instance_type(name, resources={"cpu": cpu, "memory": f"{cpu}Gi"})
    price = cat.price_from_resources(entry["capacity"]) / 100_000
    for reservation, capacity in reservations:
        offering = cat.offering("test-zone-1", "reserved", price)
        offering.update(reservationId=reservation, reservationCapacity=capacity)
        entry["offerings"].append(offering)
    return entry


def _catalog(*small_reservations: tuple[str, int]) -> dict[str, Any]:
    small = small_reservations or ((f"r-{SMALL}", 1),)
    return cat.catalog(
        [
            _type("large-instance-type", "6"),
            _type("medium-instance-type", "3", ("r-medium-instance-type", 1)),
            _type(SMALL, "2", *small),
        ]
    )


def _excluding(name: str, *reservations: str, **options: Any) -> dict[str, Any]:
    """The suite's pool, kept out of ``reservations``."""
    requirements = [
        f.nodepool_requirement(CAPACITY_TYPE, "In", ["spot", "on-demand", "reserved"]),
        f.nodepool_requirement(RESERVATION_ID, "NotIn", list(reservations)),
    ]
    return suite_pool(name, requirements=requirements, **options)


def _lonely_small_pods(count: int, *pools: str, **options: Any) -> list[dict[str, Any]]:
    """Pods that each need their own small node; pod i is pinned to ``pools[i]`` if given."""
    pods = []
    for i in range(count):
        requirements = [f.match_expression(INSTANCE_TYPE, "In", [SMALL])]
        if pools:
            requirements.append(f.match_expression(NODEPOOL, "In", [pools[i]]))
        pods.append(
            f.unschedulable_pod(
                labels=APP,
                pod_anti_affinity=[f.pod_affinity_term(HOSTNAME, match_labels=APP)],
                node_requirements=requirements,
                **options,
            )
        )
    return pods


def _placed(done: Round, pods: list[dict[str, Any]]) -> list[Landing]:
    """The nodes this round put ``pods`` on (Karpenter's bindings)."""
    return [done.placements[key] for key in _keys(pods) if key in done.placements]


def _keys(pods: list[dict[str, Any]]) -> list[str]:
    return [f"{p['metadata']['namespace']}/{p['metadata']['name']}" for p in pods]


def _pending(done: Round, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p, key in zip(pods, _keys(pods), strict=True) if key not in done.placements]


def _next_round(done: Round, pods: list[dict[str, Any]]) -> tuple[Round, list[dict[str, Any]]]:
    """Launch ``done``'s NodeClaims, then provision again; the round and its pods.

    ``pods`` are the pods ``done`` was asked to place; those it left pending go on.
    """
    catalog = launch_reservations(done)
    next_round = provision(materialize(done), catalog=catalog, only_unschedulable=True)
    return next_round, _pending(done, pods)


def _only(done: Round, pods: list[dict[str, Any]]) -> Landing:
    """The one node ``done`` placed any of ``pods`` on (Karpenter: one binding)."""
    (node,) = _placed(done, pods)
    return node


def _is_reserved(node: Landing) -> bool:
    return node.capacity_type == "reserved" and RESERVATION_ID in node.labels


def _fell_back(node: Landing, instance_type: str = SMALL) -> bool:
    """Whether ``node`` is on-demand or spot capacity of ``instance_type``."""
    return (
        RESERVATION_ID not in node.labels
        and node.capacity_type != "reserved"
        and node.instance_type == instance_type
    )


def _reserved_then_fell_back(
    pools: list[dict[str, Any]], pods: list[dict[str, Any]], catalog: dict[str, Any], pool: str
) -> None:
    """Round one launches one reserved small node in ``pool`` and defers the other pod;
    round two, the reservation used up, puts it on on-demand or spot in ``pool`` too."""
    first = provision(pools, pods, catalog=catalog)
    node = _only(first, pods)
    assert _is_reserved(node) and node.instance_type == SMALL
    assert node.labels[NODEPOOL] == pool
    second, pods = _next_round(first, pods)
    node = _only(second, pods)
    assert _fell_back(node)
    assert node.labels[NODEPOOL] == pool


def test_compatible_reservations_are_waited_for_rather_than_falling_back() -> None:
    # It: Reserved Instance Types / shouldn't fallback to on-demand or spot when compatible reserved offerings are available
    pods = f.unschedulable_pods(3, requests={"cpu": "1800m"})
    first = provision(suite_pool(), pods, catalog=_catalog())
    node = _only(first, pods)
    assert node.labels[RESERVATION_ID] == f"r-{SMALL}"
    assert node.capacity_type == "reserved" and node.instance_type == SMALL
    second, pods = _next_round(first, pods)
    node = _only(second, pods)
    assert node.labels[RESERVATION_ID] == "r-medium-instance-type"
    assert node.capacity_type == "reserved" and node.instance_type == "medium-instance-type"
    third, pods = _next_round(second, pods)
    node = _only(third, pods)
    assert _fell_back(node)


def test_a_reservation_is_shared_by_the_pools_that_can_use_it() -> None:
    # It: Reserved Instance Types / should correctly track reservations shared across nodepools
    pools = [suite_pool("np-1"), suite_pool("np-2")]
    pods = _lonely_small_pods(2, "np-1", "np-2")
    first = provision(pools, pods, catalog=_catalog())
    node = _only(first, pods)
    assert node.labels[RESERVATION_ID] == f"r-{SMALL}"
    assert node.capacity_type == "reserved" and node.instance_type == SMALL
    second, pods = _next_round(first, pods)
    node = _only(second, pods)
    assert _fell_back(node)


def test_pools_with_distinct_reservations_of_one_type_each_launch_one() -> None:
    # It: Reserved Instance Types / should correctly track reservations for multiple nodepools with distinct reservations for the same instance pool
    pools = [_excluding("np-1", "r-distinct"), _excluding("np-2", f"r-{SMALL}")]
    pods = _lonely_small_pods(2, "np-1", "np-2")
    done = provision(pools, pods, catalog=_catalog((f"r-{SMALL}", 1), ("r-distinct", 1)))
    nodes = _placed(done, pods)
    assert len(nodes) == 2
    assert all(_is_reserved(n) and n.instance_type == SMALL for n in nodes)
    assert nodes[0].labels[RESERVATION_ID] != nodes[1].labels[RESERVATION_ID]


def test_several_reservations_of_one_type_are_all_used() -> None:
    # It: Reserved Instance Types / should correctly track multiple reservations for the same instance pool
    catalog = _catalog((f"r-{SMALL}", 1), (f"r-{SMALL}-2", 2))
    pods = _lonely_small_pods(4)
    first = provision(suite_pool(), pods, catalog=catalog)
    nodes = _placed(first, pods)
    assert len(nodes) == 2
    assert all(_is_reserved(n) and n.instance_type == SMALL for n in nodes)
    second, pods = _next_round(first, pods)
    node = _only(second, pods)
    assert _is_reserved(node) and node.instance_type == SMALL
    third, pods = _next_round(second, pods)
    node = _only(third, pods)
    assert _fell_back(node)


def test_a_held_reservation_does_not_send_pods_to_a_lower_weight_pool() -> None:
    # It: Reserved Instance Types / shouldn't fallback to a lower weight NodePool if a reserved offering is available
    pools = [
        _excluding("np-primary", "r-fallback", weight=100),
        _excluding("np-fallback", f"r-{SMALL}", "r-medium-instance-type", weight=50),
    ]
    catalog = _catalog((f"r-{SMALL}", 1), ("r-fallback", 1))
    _reserved_then_fell_back(pools, _lonely_small_pods(2), catalog, "np-primary")


def test_a_held_reservation_does_not_relax_preferences() -> None:
    # It: Reserved Instance Types / shouldn't relax preferences when a pod fails to schedule due to a reserved offering error
    # (The It builds a second reservation but never gives it to a pool: both pools share
    # the one reservation of the small type.)
    pools = [suite_pool("np-1"), suite_pool("np-2")]
    prefer = [f.match_expression(NODEPOOL, "In", ["np-1"])]
    pods = _lonely_small_pods(2, node_preferences=prefer)
    _reserved_then_fell_back(pools, pods, _catalog(), "np-1")


def test_pods_share_one_reserved_node() -> None:
    # It: Reserved Instance Types / should handle multiple pods on reserved nodes
    pods = f.unschedulable_pods(
        2,
        labels=APP,
        node_requirements=[
            f.match_expression(INSTANCE_TYPE, "In", [SMALL]),
            f.match_expression(NODEPOOL, "In", ["np-1"]),
            f.match_expression(CAPACITY_TYPE, "In", ["reserved"]),
            f.match_expression(ZONE, "In", ["test-zone-1"]),
        ],
        pod_affinity=[f.pod_affinity_term(ZONE, match_labels=APP)],
    )
    done = provision(suite_pool("np-1"), pods, catalog=_catalog())
    nodes = _placed(done, pods)
    assert len(nodes) == 2 and nodes[0].name == nodes[1].name
    assert nodes[0].labels[RESERVATION_ID] == f"r-{SMALL}"
    assert nodes[0].capacity_type == "reserved" and nodes[0].instance_type == SMALL
