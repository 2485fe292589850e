"""A node that an unbound pod's ``nominatedNodeName`` names is no disruption candidate:
the pod is on its way there (a preemption, a binding in progress, karpy's own hint), and
KEP-5278 asks anything that scales down to respect that. Karpenter looks only at its own
nominations, so an empty node a preemptor waits for could be deleted under it."""

from __future__ import annotations

import pytest

from karpy.disruption.candidates import BlockedBy, find_candidates
from tests import factories as f
from tests.disruption.world import NOW, TYPES, World, managed_node, nodepool

TYPE = "c-2x-amd64-linux"


@pytest.mark.parametrize("waiting", ["unschedulable", "binding"])
def test_a_node_a_waiting_pod_names_is_not_a_candidate(waiting: str) -> None:
    pod = f.pod("preemptor", requests={"cpu": "500m"}, nominated_node_name="empty",
                unschedulable=waiting == "unschedulable")  # fmt: skip
    world = World([nodepool(), *managed_node("empty", TYPE), *managed_node("other", TYPE), pod])
    found, blocked = find_candidates(world.snapshot, now=NOW, nominated=set(),
                                     types_by_name=TYPES)  # fmt: skip
    assert [c.name for c in found] == ["other"]
    assert [(b.name, b.by) for b in blocked] == [("empty", BlockedBy.NOMINATED)]


def test_once_the_pod_is_bound_elsewhere_the_node_is_a_candidate_again() -> None:
    pod = f.pod("preemptor", requests={"cpu": "500m"}, nominated_node_name="empty",
                node_name="other")  # fmt: skip
    world = World([nodepool(), *managed_node("empty", TYPE), *managed_node("other", TYPE), pod])
    found, _ = find_candidates(world.snapshot, now=NOW, nominated=set(), types_by_name=TYPES)
    assert "empty" in [c.name for c in found]
