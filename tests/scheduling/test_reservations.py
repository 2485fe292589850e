"""Capacity reservations: held pessimistically within a round, never over-committed."""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.scenario import Round, catalog, entry

RESERVATION = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"
NODEPOOL = "karpenter.sh/nodepool"


def reserved(it: dict[str, Any], reservation: str, capacity: int = 1) -> dict[str, Any]:
    price = it["offerings"][0]["price"] / 100_000
    it["offerings"].append(
        {
            "zone": "zone-a",
            "capacityType": "reserved",
            "price": price,
            "reservationId": reservation,
            "reservationCapacity": capacity,
        }
    )
    return it


def types(capacity: int = 1) -> dict[str, Any]:
    return catalog(
        entry("large", 6, 6, capacity_types=("on-demand", "spot")),
        reserved(entry("medium", 3, 3, capacity_types=("on-demand", "spot")), "r-medium", capacity),
        reserved(entry("small", 2, 2, capacity_types=("on-demand", "spot")), "r-small", capacity),
    )


def test_a_held_reservation_is_not_traded_for_on_demand_or_spot() -> None:
    pods = [f.pod(f"p{i}", requests={"cpu": "1800m"}) for i in range(3)]
    done = Round(pods, types=types())
    assert len(done.claims) == 1
    (claim,) = done.claims.values()
    assert claim["capacityType"] == "reserved"
    assert claim["instanceType"] == "small"
    assert claim["labels"][RESERVATION] == "r-small"
    waiting = [done.reason(p) for p in pods if done.reason(p)]
    assert len(waiting) == 2
    assert all("waiting for reserved capacity" in (r or "") for r in waiting)


def test_without_reservations_left_pods_fall_back() -> None:
    pods = [f.pod(f"p{i}", requests={"cpu": "1800m"}) for i in range(3)]
    done = Round(pods, types=types(capacity=0))
    assert all(c["capacityType"] != "reserved" for c in done.claims.values())
    assert not done.reasons


def test_pods_share_a_reserved_node() -> None:
    pods = [f.pod(f"p{i}", requests={"cpu": "500m"}) for i in range(2)]
    done = Round(pods, types=types())
    assert len(done.claims) == 1
    assert next(iter(done.claims.values()))["capacityType"] == "reserved"


def test_reservations_are_shared_across_nodepools() -> None:
    pools = [f.nodepool("np-1"), f.nodepool("np-2")]
    lonely = [f.pod_affinity_term("kubernetes.io/hostname", match_labels={"app": "x"})]
    pods = [
        f.pod(
            f"p{i}",
            labels={"app": "x"},
            pod_anti_affinity=lonely,
            node_requirements=[
                f.match_expression(INSTANCE_TYPE, "In", ["small"]),
                f.match_expression("karpenter.sh/nodepool", "In", [f"np-{i + 1}"]),
            ],
        )
        for i in range(2)
    ]
    done = Round(pools, pods, types=types())
    assert len(done.claims) == 1
    assert len(done.reasons) == 1


def lonely_pods(count: int, *, pinned: bool = False, **options: Any) -> list[dict[str, Any]]:
    """Pods that each need their own ``small`` node (pod i in pool np-<i+1> if pinned)."""
    apart = [f.pod_affinity_term("kubernetes.io/hostname", match_labels={"app": "x"})]
    return [
        f.pod(
            f"p{i}",
            labels={"app": "x"},
            pod_anti_affinity=apart,
            node_requirements=[
                f.match_expression(INSTANCE_TYPE, "In", ["small"]),
                *([f.match_expression(NODEPOOL, "In", [f"np-{i + 1}"])] if pinned else []),
            ],
            **options,
        )
        for i in range(count)
    ]


def pool_with_reservation(name: str, other: str, **options: Any) -> dict[str, Any]:
    """A NodePool that may use every reservation but ``other`` (its own reservation)."""
    return f.nodepool(
        name, requirements=[f.match_expression(RESERVATION, "NotIn", [other])], **options
    )


def two_reservations_of_small() -> dict[str, Any]:
    return catalog(
        reserved(reserved(entry("small", 2, 2), "r-one"), "r-two"),
    )


def test_every_reservation_of_an_instance_type_is_used() -> None:
    small = reserved(reserved(entry("small", 2, 2), "r-small"), "r-small-2", capacity=2)
    pods = lonely_pods(4)
    done = Round(pods, types=catalog(small))
    # Each claim holds every reservation it could launch into (3 instances in all): the
    # pessimism of Karpenter lets only two claims through, and the rest wait.
    assert len(done.claims) == 2
    assert all(c["capacityType"] == "reserved" for c in done.claims.values())
    assert len(done.reasons) == 2


def test_pools_with_distinct_reservations_each_get_one() -> None:
    pools = [pool_with_reservation("np-1", "r-two"), pool_with_reservation("np-2", "r-one")]
    pods = lonely_pods(2, pinned=True)
    done = Round(pools, pods, types=two_reservations_of_small())
    assert len(done.claims) == 2
    assert {c["labels"][RESERVATION] for c in done.claims.values()} == {"r-one", "r-two"}


def test_a_lower_weight_pool_is_not_used_while_a_reservation_is_held() -> None:
    pools = [
        pool_with_reservation("np-primary", "r-two", weight=100),
        pool_with_reservation("np-fallback", "r-one", weight=50),
    ]
    done = Round(pools, lonely_pods(2), types=two_reservations_of_small())
    (claim,) = done.claims.values()
    assert claim["nodePool"] == "np-primary"
    assert claim["labels"][RESERVATION] == "r-one"
    assert len(done.reasons) == 1


def test_preferences_are_not_relaxed_for_a_reservation_held_this_round() -> None:
    # Relaxed, the second pod would take np-1 (first by name) and its free reservation.
    pools = [pool_with_reservation("np-1", "r-two"), pool_with_reservation("np-2", "r-one")]
    prefer = [f.match_expression(NODEPOOL, "In", ["np-2"])]
    done = Round(pools, lonely_pods(2, node_preferences=prefer), types=two_reservations_of_small())
    (claim,) = done.claims.values()
    assert claim["nodePool"] == "np-2"
    assert claim["labels"][RESERVATION] == "r-two"
    assert len(done.reasons) == 1
