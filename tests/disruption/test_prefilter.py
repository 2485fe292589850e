"""The single-node prefilter: a candidate is refused without a what-if only when its pods
fit neither in the room of the other nodes nor, with them, on one cheaper instance type;
and a refusal is always one the what-if would have made too."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.disruption.candidates import Candidate
from karpy.disruption.methods.command import ConsolidationType
from karpy.disruption.methods.consolidation import consolidate, consolidation_candidates
from karpy.disruption.methods.singlenode import single_node_command
from karpy.disruption.simulation import Simulation, WhatIf
from karpy.settings import Settings
from tests import factories as f
from tests.disruption.deciders import decider
from tests.disruption.world import World, managed_node, nodepool, pod_on

POOL = nodepool()
HOSTNAME = "kubernetes.io/hostname"
CHEAPEST = "c-1x-amd64-linux"  # 900m allocatable; its spot offering is the catalog's cheapest


def what_if(world: World) -> WhatIf:
    return WhatIf(world.snapshot, world.compiled, nominated={}, settings=world.settings,
                  budget=30.0)  # fmt: skip


def by_name(world: World) -> dict[str, Candidate]:
    return {c.name: c for c in world.candidates()}


def full_cheap_nodes(*names: str, cpu: str = "700m") -> list[dict[str, Any]]:
    """Spot nodes of the cheapest type, each with one pod too big for the others' room."""
    out: list[dict[str, Any]] = []
    for name in names:
        out += [*managed_node(name, CHEAPEST, capacity_type="spot"),
                pod_on(name, f"web-{name}", cpu=cpu)]  # fmt: skip
    return out


def test_a_node_whose_pods_fit_on_another_node_might_be_deleted() -> None:
    world = World([POOL, *managed_node("a", "c-4x-amd64-linux"), pod_on("a", "web-1"),
                   *managed_node("b", "c-4x-amd64-linux"), pod_on("b", "web-2")])  # fmt: skip
    check = what_if(world)
    assert [check.why_not(c) for c in world.candidates()] == ["", ""]


def test_a_pod_that_fits_no_other_node_and_no_cheaper_type_makes_its_node_hopeless() -> None:
    world = World([POOL, *full_cheap_nodes("a", "b")])
    check = what_if(world)
    for candidate in world.candidates():
        why = check.why_not(candidate)
        assert (
            why == "1 of its pods fit on no other node and no cheaper instance type can hold them"
        )
        command, _ = consolidate([candidate], world.simulate, spot_to_spot=True,
                                 consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
        assert command is None, "the what-if agrees"


def test_a_cheaper_type_that_holds_the_pods_keeps_a_lone_node_a_candidate() -> None:
    world = World([POOL, *managed_node("big", "c-8x-amd64-linux"), pod_on("big", "web-1")])
    (candidate,) = world.candidates()
    assert what_if(world).why_not(candidate) == ""
    command, why = consolidate([candidate], world.simulate, spot_to_spot=False,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is not None and command.replacements, why


def test_pods_that_each_fit_somewhere_but_not_all_together_make_their_node_hopeless() -> None:
    # "c" holds three 250m pods; "a" and "b" have 300m left each: any one pod fits
    # elsewhere, all three do not, and no type cheaper than "c" takes the third.
    world = World([POOL, *full_cheap_nodes("a", "b", cpu="600m"),
                   *managed_node("c", CHEAPEST, capacity_type="spot"),
                   *(pod_on("c", f"small-{i}", cpu="250m") for i in range(3))])  # fmt: skip
    candidate = by_name(world)["c"]
    assert what_if(world).why_not(candidate) == (
        "its pods exceed the room left on other nodes and no cheaper instance type can hold them"
    )
    command, _ = consolidate([candidate], world.simulate, spot_to_spot=True,
                             consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is None


def test_the_room_of_the_candidate_itself_does_not_count() -> None:
    # Alone on a spot c-4x, a 1,950m pod fits only in its own node's room; every type
    # cheaper than a c-4x has 1,900m.
    world = World([POOL, *managed_node("solo", "c-4x-amd64-linux", capacity_type="spot"),
                   pod_on("solo", "wide", cpu="1950m")])  # fmt: skip
    (candidate,) = world.candidates()
    assert "fit on no other node" in what_if(world).why_not(candidate)
    command, _ = consolidate([candidate], world.simulate, spot_to_spot=True,
                             consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is None


def test_pods_that_fit_no_other_node_must_fit_one_cheaper_type_together() -> None:
    # Five nodes with 200m left each: 1,000m of room in all, but neither 900m pod of "c"
    # fits any of them, and both together need a type as dear as "c"'s own.
    world = World([POOL, *full_cheap_nodes("a1", "a2", "a3", "a4", "a5"),
                   *managed_node("c", "c-2x-amd64-linux", capacity_type="spot"),
                   pod_on("c", "wide-1", cpu="900m"),
                   pod_on("c", "wide-2", cpu="900m")])  # fmt: skip
    candidate = by_name(world)["c"]
    assert "2 of its pods fit on no other node" in what_if(world).why_not(candidate)
    command, _ = consolidate([candidate], world.simulate, spot_to_spot=True,
                             consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is None


def test_without_the_spot_to_spot_gate_a_spot_node_needs_a_cheaper_on_demand_type() -> None:
    # A spot m-2x (0.047/h) with a 1,000m pod: a spot c-2x (0.038/h) would hold it, but
    # every type with an on-demand offering below 0.047/h has 900m.
    world = World([POOL, *managed_node("m", "m-2x-amd64-linux", capacity_type="spot"),
                   pod_on("m", "web", cpu="1000m")])  # fmt: skip
    (candidate,) = world.candidates()
    check = what_if(world)
    assert check.why_not(candidate, spot_to_spot=True) == ""
    assert check.why_not(candidate, spot_to_spot=False) == (
        "1 of its pods fit on no other node and no cheaper on-demand instance type can hold "
        "them (SpotToSpotConsolidation is disabled)"
    )
    command, _ = consolidate([candidate], world.simulate, spot_to_spot=False,
                             consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is None


def nginx_on(node: str, name: str, cpu: str = "100m") -> dict[str, Any]:
    """A pod that wants no other ``app=nginx`` pod on its node."""
    term = f.pod_affinity_term(HOSTNAME, match_labels={"app": "nginx"})
    return pod_on(node, name, cpu=cpu, labels={"app": "nginx"}, pod_anti_affinity=[term])


def test_a_pod_has_no_room_beside_a_pod_its_hostname_anti_affinity_selects() -> None:
    # Each node has 800m free, but its nginx pod is the one the other's pod avoids.
    world = World([POOL, *managed_node("a", CHEAPEST, capacity_type="spot"), nginx_on("a", "x"),
                   *managed_node("b", CHEAPEST, capacity_type="spot"),
                   nginx_on("b", "y")])  # fmt: skip
    check = what_if(world)
    for candidate in world.candidates():
        assert "1 of its pods fit on no other node" in check.why_not(candidate)
        command, _ = consolidate([candidate], world.simulate, spot_to_spot=True,
                                 consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
        assert command is None
    # Without the anti-affinity, each pod fits beside the other.
    plain = World([POOL, *managed_node("a", CHEAPEST, capacity_type="spot"), pod_on("a", "x"),
                   *managed_node("b", CHEAPEST, capacity_type="spot"),
                   pod_on("b", "y")])  # fmt: skip
    assert [what_if(plain).why_not(c) for c in plain.candidates()] == ["", ""]


def test_hostname_anti_affinity_leaves_the_room_beside_pods_it_does_not_select() -> None:
    world = World([POOL, *managed_node("a", CHEAPEST, capacity_type="spot"), nginx_on("a", "x"),
                   *managed_node("b", CHEAPEST, capacity_type="spot"),
                   pod_on("b", "web", labels={"app": "web"})])  # fmt: skip
    candidate = by_name(world)["a"]
    assert what_if(world).why_not(candidate) == ""
    command, why = consolidate([candidate], world.simulate, spot_to_spot=True,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is not None and not command.replacements, why


class CountingSimulate:
    def __init__(self, world: World) -> None:
        self.world = world
        self.tried: list[list[str]] = []

    def __call__(self, chosen: Sequence[Candidate]) -> Simulation:
        self.tried.append([c.name for c in chosen])
        return self.world.simulate(chosen)


def test_single_node_consolidation_runs_no_what_if_for_a_hopeless_candidate() -> None:
    world = World([POOL, *full_cheap_nodes("a", "b"), *managed_node("z-big", "c-8x-amd64-linux"),
                   pod_on("z-big", "huge", cpu="7500m")])  # fmt: skip
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    assert [c.name for c in chosen] == ["a", "b", "z-big"]
    simulate = CountingSimulate(world)
    outcome = single_node_command(chosen, simulate, spot_to_spot=False,
                                  why_not=what_if(world).why_not)  # fmt: skip
    assert simulate.tried == [["z-big"]]
    refused = {c.name: why for c, why in outcome.unconsolidatable}
    assert set(refused) >= {"a", "b"}
    assert "fit on no other node" in refused["a"]
    # Without the prefilter, the same decision after a what-if per hopeless candidate.
    plain = CountingSimulate(world)
    before = single_node_command(chosen, plain, spot_to_spot=False)
    assert plain.tried == [["a"], ["b"], ["z-big"]]
    assert (before.command and before.command.describe()) == (
        outcome.command and outcome.command.describe()
    )


def test_a_prefilter_refusal_is_reported_as_unconsolidatable() -> None:
    passes = decider([POOL, *full_cheap_nodes("a", "b")])
    asyncio.run(passes.disruption.reconcile())
    messages = {(e.involved.kind, e.involved.name): e.message for e in passes.recorder.events
                if e.reason == "Unconsolidatable"}  # fmt: skip
    why = ("1 of its pods fit on no other node and no cheaper on-demand instance type can "
           "hold them (SpotToSpotConsolidation is disabled)")  # fmt: skip
    assert messages[("Node", "a")] == why
    assert messages[("Node", "b")] == why


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["c-1x", "c-2x", "s-2x", "c-4x", "m-4x", "c-8x"]),
            st.sampled_from(["spot", "on-demand"]),
            st.lists(
                st.tuples(
                    st.sampled_from(["100m", "250m", "500m", "900m", "1700m", "3500m"]),
                    st.booleans(),
                ),
                max_size=4,
            ),
        ),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_the_prefilter_refuses_only_what_the_what_if_refuses(
    nodes: list[tuple[str, str, list[tuple[str, bool]]]], spot_to_spot: bool
) -> None:
    objects = [POOL]
    for i, (family_size, capacity_type, pods) in enumerate(nodes):
        objects += managed_node(f"n{i}", f"{family_size}-amd64-linux", capacity_type=capacity_type)
        objects += [(nginx_on if nginx else pod_on)(f"n{i}", f"p{i}-{j}", cpu=cpu)
                    for j, (cpu, nginx) in enumerate(pods)]  # fmt: skip
    world = World(objects, settings=Settings())
    check = what_if(world)
    for candidate in consolidation_candidates(world.candidates(), {"default": 10}):
        if check.why_not(candidate, spot_to_spot=spot_to_spot):
            command, _ = consolidate([candidate], world.simulate, spot_to_spot=spot_to_spot,
                                     consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
            assert command is None, candidate.name
