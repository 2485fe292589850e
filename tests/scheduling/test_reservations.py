"""Capacity reservations: held pessimistically within a round, never over-committed."""

from __future__ import annotations

from typing import Any

from tests import factories as f
from tests.scheduling.scenario import Round, catalog, entry

RESERVATION = "karpenter.k8s.aws/capacity-reservation-id"
CAPACITY_TYPE = "karpenter.sh/capacity-type"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


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
