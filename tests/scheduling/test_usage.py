"""NodePoolUsage: a pool's summed capacity and its node count, kept apart, and joined
into one ResourceList only where Kubernetes reads or writes one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from karpy.scheduling.usage import NodePoolUsage

GI = 2**30 * 1000  # one Gi in milli-units


def test_nodes_are_counted_one_each_and_their_capacities_summed() -> None:
    usage = NodePoolUsage.of_nodes([{"cpu": 4000, "memory": 16 * GI}, {"cpu": 2000}])
    assert usage == NodePoolUsage({"cpu": 6000, "memory": 16 * GI}, 2)
    assert NodePoolUsage.of_nodes([]) == NodePoolUsage()


def test_adding_a_node_or_a_usage_adds_capacity_and_count() -> None:
    one = NodePoolUsage({"cpu": 1000}, 1)
    assert one.plus_node({"cpu": 2000, "memory": GI}) == NodePoolUsage(
        {"cpu": 3000, "memory": GI}, 2
    )
    assert one + one == NodePoolUsage({"cpu": 2000}, 2)
    assert one.resources == {"cpu": 1000}, "values do not change"


def test_limits_are_judged_in_milli_units_with_nodes_as_one_thousand_each() -> None:
    usage = NodePoolUsage({"cpu": 1500}, 3)
    assert usage.amount("cpu") == 1500
    assert usage.amount("nodes") == 3000
    assert usage.amount("memory") == 0


def test_the_status_is_the_resources_with_the_count_as_nodes_and_the_count() -> None:
    usage = NodePoolUsage({"cpu": 8000, "memory": 32 * GI}, 2)
    assert usage.status() == {
        "resources": {"cpu": "8", "memory": "32Gi", "nodes": "2"},
        "nodes": 2,
    }
    assert NodePoolUsage().status() == {"resources": {"nodes": "0"}, "nodes": 0}


def test_a_status_with_part_of_a_node_counts_a_whole_one() -> None:
    assert NodePoolUsage.from_resource_list({"cpu": 500, "nodes": 1500}).nodes == 2


@given(
    st.lists(st.dictionaries(st.sampled_from(["cpu", "memory", "pods"]), st.integers(0, 10**9))),
)
def test_a_usage_reads_back_from_the_resource_list_it_writes(
    capacities: list[dict[str, int]],
) -> None:
    usage = NodePoolUsage.of_nodes(capacities)
    assert NodePoolUsage.from_resource_list(usage.resource_list()) == usage
