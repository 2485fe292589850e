"""A consolidation never fills a node emptiness is about to remove when that node costs
more than the move saves: the sandbox AWS demo deleted a c6g.4xlarge holding the last
three pods onto an empty c6g.8xlarge that was not Consolidatable yet, and kept the dearer
node. Decided through the methods, a whole pass, and over generated small clusters."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.disruption.methods.command import Command
from karpy.disruption.methods.consolidation import (
    consolidation_candidates,
    emptying_nodes,
)
from karpy.disruption.methods.multinode import multi_node_command
from karpy.disruption.methods.singlenode import single_node_command
from karpy.settings import Settings
from tests.disruption.deciders import decider
from tests.disruption.world import World, managed_node, nodepool, pod_on

POOL = nodepool()


def cluster(holder: str, empty: str) -> list[dict[str, object]]:
    """``holder`` (Consolidatable) runs three small pods; ``empty`` runs none and has just
    emptied (not Consolidatable yet)."""
    return [POOL, *managed_node("holder", holder),
            *[pod_on("holder", f"web-{i}") for i in range(3)],
            *managed_node("empty", empty, consolidatable=False)]  # fmt: skip


def single(world: World) -> tuple[Command | None, str]:
    candidates = world.candidates()
    chosen = consolidation_candidates(candidates, {"default": 10})
    outcome = single_node_command(chosen, world.simulate, spot_to_spot=False,
                                  emptying=emptying_nodes(candidates))  # fmt: skip
    why = "; ".join(reason for _, reason in outcome.unconsolidatable)
    return outcome.command, why


def test_pods_are_not_moved_onto_a_dearer_node_that_is_about_to_be_removed_as_empty() -> None:
    command, why = single(World(cluster(holder="c-4x-amd64-linux", empty="c-8x-amd64-linux")))
    assert command is None
    assert "would fill empty node empty" in why and "removing the empty node is cheaper" in why


def test_pods_still_move_onto_an_empty_node_cheaper_than_the_move_saves() -> None:
    command, why = single(World(cluster(holder="c-8x-amd64-linux", empty="c-4x-amd64-linux")))
    assert command is not None, why
    assert [c.name for c in command.candidates] == ["holder"] and not command.replacements


def test_a_move_that_saves_just_what_the_filled_empty_node_costs_is_refused() -> None:
    """Equal prices: the move ends where emptiness would, with three pods disrupted for
    nothing (seen in the sandbox after a scale-down emptied half a pool at once)."""
    command, why = single(World(cluster(holder="c-4x-amd64-linux", empty="c-4x-amd64-linux")))
    assert command is None
    assert "as dear as" in why


def test_an_empty_node_whose_pool_allows_no_empty_disruption_may_be_filled() -> None:
    """A budget of 0 for Empty keeps empty nodes: the dear empty node stays either way,
    so moving the cheap node's pods onto it saves the cheap node."""
    pool = nodepool(budgets=[{"nodes": "0", "reasons": ["Empty"]}])
    objects = [pool, *managed_node("holder", "c-4x-amd64-linux"),
               *[pod_on("holder", f"web-{i}") for i in range(3)],
               *managed_node("empty", "c-8x-amd64-linux", consolidatable=False)]  # fmt: skip
    world = World(objects)
    candidates = world.candidates()
    assert emptying_nodes(candidates, {"default": 1}) != {}
    emptying = emptying_nodes(candidates, {"default": 0})
    assert emptying == {}
    chosen = consolidation_candidates(candidates, {"default": 10})
    outcome = single_node_command(chosen, world.simulate, spot_to_spot=False, emptying=emptying)
    assert outcome.command is not None
    assert [c.name for c in outcome.command.candidates] == ["holder"]


def test_a_pass_reads_the_empty_budget_when_it_weighs_empty_destinations() -> None:
    pool = nodepool(budgets=[{"nodes": "0", "reasons": ["Empty"]}])
    objects = [pool, *managed_node("holder", "c-4x-amd64-linux"),
               *[pod_on("holder", f"web-{i}") for i in range(3)],
               *managed_node("empty", "c-8x-amd64-linux", consolidatable=False)]  # fmt: skip
    run = decider(objects)
    run.events_of_a_pass()
    refusals = [e.message for e in run.recorder.events if e.reason == "Unconsolidatable"]
    assert not any("would fill empty node" in m for m in refusals), refusals


def test_without_knowing_the_empty_nodes_the_dear_move_is_what_karpenter_would_make() -> None:
    world = World(cluster(holder="c-4x-amd64-linux", empty="c-8x-amd64-linux"))
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    outcome = single_node_command(chosen, world.simulate, spot_to_spot=False)
    assert outcome.command is not None, "the guard is what refuses it"


def test_a_pass_reports_the_refusal_on_the_node_it_left_alone() -> None:
    run = decider(cluster(holder="c-4x-amd64-linux", empty="c-8x-amd64-linux"))
    run.events_of_a_pass()
    refusals = [e for e in run.recorder.events if e.reason == "Unconsolidatable"]
    assert any("would fill empty node empty" in e.message for e in refusals), [
        (e.reason, e.message) for e in run.recorder.events
    ]
    assert not any(e.reason.startswith("Disruption") for e in run.recorder.events)


FAMILIES = ["c-1x", "c-2x", "c-4x", "m-4x", "c-8x"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(FAMILIES),
            st.sampled_from(["spot", "on-demand"]),
            st.lists(st.sampled_from(["100m", "250m", "500m"]), max_size=3),
            st.booleans(),  # Consolidatable yet
        ),
        min_size=2,
        max_size=5,
    ),
)
def test_a_consolidation_never_ends_dearer_than_removing_the_empty_nodes(
    nodes: list[tuple[str, str, list[str], bool]],
) -> None:
    """Whatever a pass's consolidation commands, the cluster it leads to (once
    emptiness has removed the empty nodes the move left empty) is no dearer than the
    one emptiness alone leads to."""
    objects = [POOL]
    for i, (family, capacity_type, cpus, quiet) in enumerate(nodes):
        objects += managed_node(f"n{i}", f"{family}-amd64-linux", capacity_type=capacity_type,
                                consolidatable=quiet)  # fmt: skip
        objects += [pod_on(f"n{i}", f"p{i}-{j}", cpu=cpu) for j, cpu in enumerate(cpus)]
    world = World(objects, settings=Settings())
    candidates = world.candidates()
    emptying = emptying_nodes(candidates)
    price = {c.name: c.price or 0.0 for c in candidates}
    chosen = consolidation_candidates(candidates, {"default": 10})
    for outcome in (
        multi_node_command(chosen, world.simulate, spot_to_spot=True, emptying=emptying),
        single_node_command(chosen, world.simulate, spot_to_spot=True, emptying=emptying),
    ):
        command = outcome.command
        if command is None:
            continue
        removed = {c.name for c in command.candidates}
        simulation = world.simulate(command.candidates)
        filled = {p.name for p in simulation.results.existing_nodes if p.pods} & set(emptying)
        after_move = (sum(price.values()) - sum(price[n] for n in removed)
                      + sum(r.offering.price for r in command.replacements)
                      - sum(emptying[n] for n in set(emptying) - removed - filled))  # fmt: skip
        emptiness_alone = sum(price.values()) - sum(emptying.values())
        assert after_move <= emptiness_alone + 1e-9
        if filled or removed & set(emptying):
            # A move that touches the empty nodes must beat emptiness, not tie with it.
            assert after_move < emptiness_alone - 1e-9
