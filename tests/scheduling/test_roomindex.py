"""The room index: which existing nodes may still hold a request."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from karpy.scheduling.index import iter_bits
from karpy.scheduling.roomindex import RoomIndex
from tests import factories as f
from tests.scheduling.scenario import ZONE, Round

GIB = 2**30 * 1000  # memory in milli-units


def test_candidates_are_the_nodes_with_enough_of_every_resource_left() -> None:
    index = RoomIndex(
        [
            (0, {"cpu": 500, "memory": GIB, "pods": 1000}),
            (1, {"cpu": 4000, "memory": 8 * GIB, "pods": 10_000}),
            (2, {"cpu": 4000, "memory": 0, "pods": 10_000}),
        ]
    )
    wanted = {"cpu": 1000, "memory": 2 * GIB, "pods": 1000}
    assert set(iter_bits(index.candidates(wanted) or 0)) == {1}
    assert index.candidates({}) is None
    assert set(iter_bits(index.candidates({"cpu": 100}) or 0)) == {0, 1, 2}


def test_a_node_that_fills_up_stops_being_a_candidate() -> None:
    index = RoomIndex([(3, {"cpu": 4000}), (9, {"cpu": 4000})])
    index.update(3, {"cpu": 100})
    assert set(iter_bits(index.candidates({"cpu": 1000}) or 0)) == {9}
    assert set(iter_bits(index.candidates({"cpu": 100}) or 0)) == {3, 9}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=-5, max_value=10**7), min_size=1, max_size=40),
    st.integers(min_value=1, max_value=10**7),
)
def test_every_node_with_room_is_a_candidate(left: list[int], request: int) -> None:
    index = RoomIndex((i, {"cpu": v}) for i, v in enumerate(left))
    candidates = set(iter_bits(index.candidates({"cpu": request}) or 0))
    assert {i for i, v in enumerate(left) if v >= request} <= candidates
    assert all(left[i] > 0 for i in candidates)


def _node(name: str, cpu: str) -> dict[str, Any]:
    labels = {"kubernetes.io/arch": "amd64", ZONE: "zone-a"}
    return f.node(name, labels=labels, allocatable={"cpu": cpu, "memory": "16Gi", "pods": "110"})


def test_a_pod_skips_full_nodes_for_the_one_with_room() -> None:
    nodes = [_node(f"full-{i:02}", "1") for i in range(12)] + [_node("roomy", "8")]
    bound = [
        f.pod(f"old-{i}", requests={"cpu": "900m"}, node_name=f"full-{i:02}") for i in range(12)
    ]
    web = f.pod("web", requests={"cpu": "2"})
    done = Round(nodes, bound, web)
    assert done.node_of(web) == "roomy"


def test_pods_fill_the_roomy_nodes_in_node_order() -> None:
    # Most nodes have room (the index leaves many candidates): order is still by name.
    nodes = [_node(f"n-{i:02}", "2") for i in range(12)]
    bound = [f.pod("old", requests={"cpu": "1500m"}, node_name="n-00")]
    pods = [f.pod(f"web-{i}", requests={"cpu": "1"}) for i in range(6)]
    done = Round(nodes, bound, pods)
    assert [done.node_of(p) for p in pods] == ["n-01", "n-01", "n-02", "n-02", "n-03", "n-03"]


def test_nodes_past_the_last_roomy_one_are_skipped_not_tried() -> None:
    # The first four nodes have room but are in the wrong zone; the full ones after them
    # are passed over on the way to a new node.
    nodes = [_node(f"n-{i:02}", "8" if i < 4 else "1") for i in range(16)]
    bound = [
        f.pod(f"old-{i}", requests={"cpu": "900m"}, node_name=f"n-{i:02}") for i in range(4, 16)
    ]
    web = f.pod("web", requests={"cpu": "1"}, node_selector={ZONE: "zone-b"})
    done = Round(nodes, bound, web)
    assert done.node_of(web) in done.claims
