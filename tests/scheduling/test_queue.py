"""The pod queue and the order planned NodeClaims are tried in."""

from __future__ import annotations

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
