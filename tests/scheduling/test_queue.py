"""The pod queue and the order planned NodeClaims are tried in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from karpy.scheduling.queue import ClaimOrder, PodQueue
from tests.scheduling.builders import pod


def test_pods_are_queued_largest_first_then_oldest() -> None:
    small = pod("small", requests={"cpu": "100m"})
    big = pod("big", requests={"cpu": "2"})
    fat = pod("fat", requests={"cpu": "2", "memory": "8Gi"})
    queue = PodQueue([small, big, fat])
    assert [queue.pop(), queue.pop(), queue.pop()] == [fat, big, small]


def test_the_queue_stops_when_a_full_pass_places_nothing() -> None:
    a, b = pod("a"), pod("b")
    queue = PodQueue([a, b])
    assert queue.pop() is a
    queue.push(a)
    assert queue.pop() is b
    queue.push(b)
    assert queue.pop() is None


def test_claims_are_tried_fewest_pods_first_then_oldest() -> None:
    order = ClaimOrder()
    for claim in range(3):
        order.insert(claim, 1)
    order.moved(0, 2)
    order.insert(3, 0)
    assert list(order) == [3, 1, 2, 0]


def test_parked_claims_come_back_when_a_pod_fits_their_room() -> None:
    order = ClaimOrder()
    for claim in range(3):
        order.insert(claim, 1)
    order.park(0, 1, "cpu", 500)
    order.park(1, 1, "cpu", 1500)
    assert list(order) == [2]
    order.unpark({"cpu": 1000})
    assert list(order) == [1, 2]
    order.unpark({"cpu": 500})
    assert list(order) == [0, 1, 2]


def test_removed_claims_leave_the_order() -> None:
    order = ClaimOrder()
    order.insert(0, 1)
    order.insert(1, 1)
    assert order.remove(0) == 1
    assert 0 not in order
    assert list(order) == [1]


ZONES = [frozenset({"a"}), frozenset({"b"}), frozenset({"a", "b"}), None]
LANES = [(zones,) for zones in ZONES]


def test_lanes_are_walked_in_the_one_order() -> None:
    order = ClaimOrder()
    order.insert(0, 2, LANES[0])
    order.insert(1, 1, LANES[1])
    order.insert(2, 1, LANES[0])
    order.insert(3, 0, LANES[3])
    assert list(order) == [3, 1, 2, 0]
    assert list(order.among([LANES[0]])) == [2, 0]
    assert list(order.among([LANES[0], LANES[3]])) == [3, 2, 0]
    assert list(order.among([LANES[2]])) == []


def test_a_claim_changes_lane_when_it_moves_and_keeps_it_while_parked() -> None:
    order = ClaimOrder()
    order.insert(0, 1, LANES[2])
    order.moved(0, 2, LANES[0])
    assert list(order.among([LANES[2]])) == []
    order.park(0, 2, "cpu", 100)
    assert list(order.among([LANES[0]])) == []
    order.unpark({"cpu": 100})
    assert list(order.among([LANES[0]])) == [0]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["insert", "move", "park", "unpark", "remove"]),
            st.integers(0, 7),  # claim
            st.integers(0, 4),  # pods
            st.integers(0, 3),  # lane
            st.integers(0, 3),  # room / request
        ),
        max_size=60,
    ),
    st.sets(st.integers(0, 3)),
)
def test_a_lane_subset_is_the_full_order_filtered(
    steps: list[tuple[str, int, int, int, int]], chosen: set[int]
) -> None:
    """However claims move, park and come back, walking some lanes yields exactly the
    claims of those lanes, in the order a walk of every lane yields them."""
    order = ClaimOrder()
    lane_of: dict[int, int] = {}
    for action, claim, pods, lane, amount in steps:
        if action == "insert" and claim not in order and claim not in lane_of:
            order.insert(claim, pods, LANES[lane])
            lane_of[claim] = lane
        elif action == "move" and claim in order:
            order.moved(claim, pods, LANES[lane])
            lane_of[claim] = lane
        elif action == "park" and claim in order:
            order.park(claim, pods, "cpu", amount)
        elif action == "unpark":
            order.unpark({"cpu": amount})
        elif action == "remove" and claim in order:
            order.remove(claim)
    full = list(order)
    wanted = [LANES[i] for i in sorted(chosen)]
    assert list(order.among(wanted)) == [c for c in full if lane_of[c] in chosen]
    assert sorted(full) == sorted(c for c in lane_of if c in order)
