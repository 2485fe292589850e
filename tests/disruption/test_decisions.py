"""Disruption decisions on small clusters, through the controller's own functions:
candidates, what-if rounds on the provisioner's scheduler, and the methods."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.methods.command import ConsolidationType, Decision
from karpy.disruption.methods.consolidation import consolidate, consolidation_candidates
from karpy.disruption.methods.drift import drift_command
from karpy.disruption.methods.emptiness import empty_command
from karpy.disruption.methods.multinode import multi_node_command
from karpy.disruption.methods.singlenode import single_node_command
from karpy.settings import Settings
from tests import factories as f
from tests.disruption.world import World, managed_node, nodepool, pod_on

POOL = nodepool()


def daemon_pod(node: str) -> dict[str, object]:
    return f.pod(f"agent-{node}", node_name=node, requests={"cpu": "100m"},
                 owner_references=[f.owner_reference("DaemonSet", "agent",
                                                     api_version="apps/v1")])  # fmt: skip


def test_a_node_with_only_daemonset_pods_is_empty_and_deleted_within_budget() -> None:
    world = World([POOL, *managed_node("a", "c-2x-amd64-linux"), daemon_pod("a"),
                   *managed_node("b", "c-2x-amd64-linux"), pod_on("b", "web-1")])  # fmt: skip
    candidates = world.candidates()
    outcome = empty_command(candidates, {"default": 5})
    assert outcome.command is not None
    assert [c.name for c in outcome.command.candidates] == ["a"]
    assert outcome.command.reason is DisruptionReason.EMPTY
    assert empty_command(candidates, {"default": 0}).command is None, "no budget, no command"


def test_empty_nodes_are_taken_up_to_the_budget() -> None:
    objects = [POOL] + [o for n in "abcd" for o in managed_node(n, "c-1x-amd64-linux")]
    outcome = empty_command(World(objects).candidates(), {"default": 2})
    assert outcome.command is not None and len(outcome.command.candidates) == 2


def test_an_underused_on_demand_node_is_replaced_by_a_cheaper_spot_node() -> None:
    world = World([POOL, *managed_node("big", "c-8x-amd64-linux"), pod_on("big", "web-1")])
    (candidate,) = world.candidates()
    command, why = consolidate([candidate], world.simulate, spot_to_spot=False,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is not None, why
    assert command.decision is Decision.REPLACE
    plan = command.replacements[0]
    assert candidate.price is not None and plan.offering.price < candidate.price
    capacity = plan.requirements.get("karpenter.sh/capacity-type")
    assert sorted(capacity.values) == ["spot"], "OD -> [OD, spot] is pinned to spot"
    prices = [price for price, _ in plan.index.order_by_price(plan.options, plan.requirements)]
    assert prices and max(prices) < candidate.price, "every option is cheaper"


def test_pods_that_fit_elsewhere_let_a_node_be_deleted() -> None:
    world = World([POOL, *managed_node("a", "c-4x-amd64-linux"), pod_on("a", "web-1"),
                   *managed_node("b", "c-4x-amd64-linux"), pod_on("b", "web-2")])  # fmt: skip
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    outcome = single_node_command(chosen, world.simulate, spot_to_spot=False)
    assert outcome.command is not None
    assert outcome.command.decision is Decision.DELETE
    assert len(outcome.command.candidates) == 1


def test_several_nodes_are_replaced_by_one_cheaper_node() -> None:
    objects = [POOL]
    for i in range(4):
        objects += [*managed_node(f"n{i}", "c-2x-amd64-linux"), pod_on(f"n{i}", f"web-{i}")]
    world = World(objects)
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    outcome = multi_node_command(chosen, world.simulate, spot_to_spot=False)
    command = outcome.command
    assert command is not None
    assert command.consolidation_type is ConsolidationType.MULTI
    total = sum(c.price or 0 for c in command.candidates)
    if command.replacements:
        assert len(command.replacements) == 1
        assert command.replacements[0].offering.price < total
    assert len(command.candidates) >= 3, "most of the four half-idle nodes go at once"


def test_a_node_on_the_cheapest_type_is_not_replaced_by_its_twin() -> None:
    world = World([POOL, *managed_node("small", "c-1x-amd64-linux", capacity_type="spot"),
                   pod_on("small", "web-1", cpu="700m")])  # fmt: skip
    (candidate,) = world.candidates()
    command, why = consolidate([candidate], world.simulate, spot_to_spot=True,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is None
    assert "cheaper" in why


def test_spot_to_spot_needs_the_gate() -> None:
    world = World([POOL, *managed_node("big", "c-8x-amd64-linux", capacity_type="spot"),
                   pod_on("big", "web-1")])  # fmt: skip
    (candidate,) = world.candidates()
    command, why = consolidate([candidate], world.simulate, spot_to_spot=False,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is None and "SpotToSpotConsolidation is disabled" in why
    command, why = consolidate([candidate], world.simulate, spot_to_spot=True,
                               consolidation_type=ConsolidationType.SINGLE)  # fmt: skip
    assert command is not None, why
    assert len(command.replacements[0].index.members(command.replacements[0].options)) >= 15


def test_do_not_disrupt_pods_and_exhausted_pdbs_block_a_node_by_name() -> None:
    pdb = f.pod_disruption_budget("db", match_labels={"app": "db"}, max_unavailable=0)
    world = World([
        POOL,
        *managed_node("a", "c-2x-amd64-linux"),
        pod_on("a", "pinned", annotations={"karpenter.sh/do-not-disrupt": "true"}),
        *managed_node("b", "c-2x-amd64-linux"),
        pod_on("b", "db-0", labels={"app": "db"}),
        pdb,
    ])  # fmt: skip
    blocked = world.blocked()
    assert "default/pinned" in blocked["a"] and "do-not-disrupt" in blocked["a"]
    assert "PodDisruptionBudget default/db" in blocked["b"]
    assert world.candidates() == []


def test_drift_replaces_a_drifted_node_with_what_its_pods_need() -> None:
    world = World([POOL, *managed_node("old", "c-2x-amd64-linux", drifted=True),
                   pod_on("old", "web-1"), *managed_node("ok", "c-2x-amd64-linux")])  # fmt: skip
    outcome = drift_command(world.candidates(), {"default": 1}, world.simulate)
    assert outcome.command is not None
    assert [c.name for c in outcome.command.candidates] == ["old"]
    # Its pod fits on the other node, which is not drifted: nothing new is needed.
    assert outcome.command.replacements == ()
    assert drift_command(world.candidates(), {"default": 0}, world.simulate).command is None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["c-1x", "c-2x", "s-2x", "c-4x", "m-4x", "c-8x"]),
            st.sampled_from(["spot", "on-demand"]),
            st.lists(st.sampled_from(["100m", "250m", "500m", "900m"]), max_size=3),
        ),
        min_size=1,
        max_size=5,
    ),
    st.booleans(),
)
def test_a_consolidation_never_raises_the_price_or_strands_a_pod(
    nodes: list[tuple[str, str, list[str]]], spot_to_spot: bool
) -> None:
    objects = [POOL]
    for i, (family_size, capacity_type, cpus) in enumerate(nodes):
        objects += managed_node(f"n{i}", f"{family_size}-amd64-linux", capacity_type=capacity_type)
        objects += [pod_on(f"n{i}", f"p{i}-{j}", cpu=cpu) for j, cpu in enumerate(cpus)]
    world = World(objects, settings=Settings())
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    for outcome in (
        multi_node_command(chosen, world.simulate, spot_to_spot=spot_to_spot),
        single_node_command(chosen, world.simulate, spot_to_spot=spot_to_spot),
    ):
        command = outcome.command
        if command is None:
            continue
        assert len(command.replacements) <= 1
        before = sum(c.price or 0 for c in command.candidates)
        after = sum(r.offering.price for r in command.replacements)
        assert after < before or not command.replacements
        simulation = world.simulate(command.candidates)
        assert simulation.ok, "every pod of the removed nodes has a place"
        if command.replacements and all(c.capacity_type == "spot" for c in command.candidates):
            assert spot_to_spot and len(command.candidates) == 1
