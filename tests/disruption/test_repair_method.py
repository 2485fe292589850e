"""Node repair as the first disruption method (Karpenter 1.15, RFC core#3192): unhealthy
nodes, replaced one at a time within the ``Unhealthy`` budget, their replacements made
before they go; ``karpenter.sh/do-not-repair`` vetoes, ``karpenter.sh/do-not-disrupt``
does not; ``LEGACY_NODE_REPAIR`` keeps the forceful controller instead."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from karpy.apis.disruption import DisruptionReason
from karpy.apis.labels import (
    ANNOTATION_DO_NOT_DISRUPT,
    ANNOTATION_DO_NOT_REPAIR,
    ANNOTATION_REBOOT_GRACE,
    ANNOTATION_REBOOTED_AT,
    ANNOTATION_REPAIR_GRACE,
    ANNOTATION_REPAIR_REBOOT,
    ANNOTATION_REPLACEMENTS,
)
from karpy.cloud.provider import RepairAction, RepairPolicy
from karpy.disruption.budgets import budget_verdicts
from karpy.disruption.candidates import find_candidates
from karpy.disruption.controller import Disruption
from karpy.disruption.explain import explain_node
from karpy.disruption.methods.command import Decision
from karpy.disruption.methods.ordered import methods_in_order
from karpy.disruption.methods.repair import Repair, repair_command
from karpy.disruption.unhealthy import diagnose
from karpy.reconcile import Singleton
from karpy.settings import Settings
from karpy.settings.gates import FeatureGates
from tests.disruption.deciders import Contexts
from tests.disruption.world import NOW, TYPES, World, managed_node, nodepool, pod_on, store
from tests.fixtures.cluster import controller_world
from tests.fixtures.waiting import eventually
from tests.kube.fakeclock import FakeClock
from tests.operator.test_controllers import components as built_components

Obj = dict[str, Any]
NODECLAIMS = "nodeclaims.karpenter.sh"
TYPE = "c-2x-amd64-linux"
BIG = "1500m"  # of the type's 2 CPUs: no node has room for a second
FORCEFUL = timedelta(0)
POLICIES = (
    RepairPolicy("Ready", "False", timedelta(minutes=30)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=30)),
    RepairPolicy("KernelReady", "False", timedelta(minutes=30), priority=50,
                 termination_grace_period=FORCEFUL),
)  # fmt: skip


def sick(name: str, *, condition: str = "Ready", status: str = "False",
         minutes: int = 40, annotations: dict[str, str] | None = None,
         claim_annotations: dict[str, str] | None = None) -> list[Obj]:  # fmt: skip
    """A managed node (not consolidatable) whose ``condition`` has been ``status`` for
    ``minutes`` before NOW, hosting one pod too big to fit beside another one."""
    node, claim = managed_node(name, TYPE, consolidatable=False)
    since = (NOW - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [c for c in node["status"]["conditions"] if c["type"] != condition]
    conditions.append({"type": condition, "status": status, "reason": "Broken", "message": "",
                       "lastTransitionTime": since})  # fmt: skip
    node["status"]["conditions"] = conditions
    node["metadata"].setdefault("annotations", {}).update(annotations or {})
    claim["metadata"].setdefault("annotations", {}).update(claim_annotations or {})
    return [node, claim, pod_on(name, f"{name}-web", cpu=BIG)]


def healthy(name: str) -> list[Obj]:
    return [*managed_node(name, TYPE, consolidatable=False), pod_on(name, f"{name}-web", cpu=BIG)]


def repairable(world: World) -> list[Any]:
    """What the controller gives the repair method: candidates, and unhealthy nodes
    blocked only by what repair ignores."""
    found, blocked = find_candidates(
        world.snapshot, now=NOW, nominated=set(), types_by_name=TYPES,
        unhealthy=lambda node: diagnose(node, POLICIES, NOW).unhealthy)  # fmt: skip
    every = found + [b.repairable for b in blocked if b.repairable is not None]
    method = Repair(POLICIES, clock=FakeClock(NOW))
    return sorted((c for c in every if method.should_disrupt(c)), key=lambda c: c.name)


def decide(world: World, budget: int = 1, **kw: Any) -> Any:
    return repair_command(repairable(world), {"default": budget}, world.simulate,
                          world.snapshot, POLICIES, NOW, **kw).command  # fmt: skip


# --- candidates, veto, order ------------------------------------------------------------


def test_only_nodes_unhealthy_past_their_toleration_are_candidates() -> None:
    world = World([nodepool(), *sick("old"), *sick("recent", minutes=10), *healthy("fine")])
    assert [c.name for c in repairable(world)] == ["old"]


def test_a_node_a_decision_already_chose_is_not_chosen_again() -> None:
    """Marked, and not yet tainted by the queue: the next pass must not repair it twice."""
    chosen = sick("chosen")
    chosen[1]["status"]["conditions"].append(
        {"type": "DisruptionReason", "status": "True", "reason": "Unhealthy"})  # fmt: skip
    world = World([nodepool(), *chosen, *sick("other")])
    assert [c.name for c in repairable(world)] == ["other"]


def test_do_not_repair_vetoes_and_do_not_disrupt_does_not() -> None:
    world = World([
        nodepool(),
        *sick("protected", annotations={ANNOTATION_DO_NOT_DISRUPT: "true"}),
        *sick("vetoed", annotations={ANNOTATION_DO_NOT_REPAIR: "true"}),
        *sick("vetoed-claim", claim_annotations={ANNOTATION_DO_NOT_REPAIR: "true"}),
    ])  # fmt: skip
    assert "protected" in world.blocked(), "disruption leaves it alone"
    assert [c.name for c in repairable(world)] == ["protected"]


def test_the_higher_priority_fault_goes_first_unless_another_waited_longer() -> None:
    """Score: priority rank + time eligible / 10 minutes (`AGING_STEP`)."""
    kernel = sick("b-kernel", condition="KernelReady", minutes=31)  # rank 1, 0.1 aged
    world = World([nodepool(), *sick("a-ready", minutes=35), *kernel,
                   *sick("c-ready", minutes=38)])  # fmt: skip
    assert [c.name for c in decide(world).candidates] == ["b-kernel"], "1.1 beats 0.8"
    without = World([nodepool(), *sick("a-ready", minutes=35), *sick("c-ready", minutes=38)])
    assert [c.name for c in decide(without).candidates] == ["c-ready"], "eligible longer"
    starved = World([nodepool(), *kernel, *sick("c-ready", minutes=55)])
    assert [c.name for c in decide(starved).candidates] == ["c-ready"], "2.5 beats 1.1"


# --- the command ----------------------------------------------------------------------------


def test_a_repair_pre_spins_a_replacement_for_the_pods() -> None:
    world = World([nodepool(), *sick("broken")])
    command = decide(world)
    assert command.reason is DisruptionReason.UNHEALTHY
    assert command.decision is Decision.REPLACE and len(command.replacements) == 1
    assert command.annotations == (), "Ready policies inherit the NodeClaim's grace period"


def test_a_forceful_policy_travels_with_the_command() -> None:
    world = World([nodepool(), *sick("kernel", condition="KernelReady")])
    assert decide(world).annotations == ((ANNOTATION_REPAIR_GRACE, "0s"),)


def test_no_budget_no_repair() -> None:
    world = World([nodepool(), *sick("broken")])
    assert decide(world, budget=0) is None


def test_a_static_pool_at_its_limit_repairs_terminate_first_with_the_gate() -> None:
    pool = nodepool()
    pool["spec"].update(replicas=2, limits={"nodes": "2"})
    world = World([pool, *sick("broken"), *healthy("fine")])
    first = decide(world, terminate_first=True)
    assert first.terminate_first and first.decision is Decision.DELETE
    assert decide(world, terminate_first=False) is None, "no room to replace first"
    pool["spec"]["limits"] = {"nodes": "3"}
    roomy = decide(World([pool, *sick("broken"), *healthy("fine")]))
    assert roomy.template_replacements == ("default",)


REBOOTING = (RepairPolicy("AcceleratedHardwareReady", "False", timedelta(minutes=10),
                          action=RepairAction.REBOOT,
                          termination_grace_period=timedelta(minutes=15)),)  # fmt: skip


def gpu_fault(name: str, rebooted_minutes_ago: int | None = None) -> list[Obj]:
    annotations = {}
    if rebooted_minutes_ago is not None:
        at = NOW - timedelta(minutes=rebooted_minutes_ago)
        annotations[ANNOTATION_REBOOTED_AT] = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return sick(name, condition="AcceleratedHardwareReady", minutes=60,
                claim_annotations=annotations)  # fmt: skip


def decide_with(world: World, policies: Any) -> Any:
    found, _ = find_candidates(world.snapshot, now=NOW, nominated=set(), types_by_name=TYPES)
    return repair_command(found, {"default": 1}, world.simulate, world.snapshot, policies,
                          NOW).command  # fmt: skip


def test_a_reboot_policy_reboots_in_place_within_the_budget() -> None:
    command = decide_with(World([nodepool(), *gpu_fault("gpu")]), REBOOTING)
    assert command.decision is Decision.REBOOT and command.reboot
    assert command.replacements == () and command.template_replacements == ()
    assert dict(command.annotations) == {ANNOTATION_REPAIR_REBOOT: "true",
                                         ANNOTATION_REBOOT_GRACE: "15m0s"}  # fmt: skip
    assert command.describe().startswith("reboot 1 node(s) (gpu)")
    world = World([nodepool(), *gpu_fault("gpu")])
    assert repair_command(world.candidates(), {"default": 0}, world.simulate, world.snapshot,
                          REBOOTING, NOW).command is None  # fmt: skip


def test_a_node_is_rebooted_once_then_replaced_if_still_unhealthy_a_toleration_on() -> None:
    recently = World([nodepool(), *gpu_fault("gpu", rebooted_minutes_ago=5)])
    assert decide_with(recently, REBOOTING) is None, "it may still recover"
    later = World([nodepool(), *gpu_fault("gpu", rebooted_minutes_ago=11)])
    command = decide_with(later, REBOOTING)
    assert command.decision is Decision.REPLACE and not command.reboot


# --- budgets --------------------------------------------------------------------------------


def test_an_unhealthy_node_does_not_use_up_the_budget_that_repairs_it() -> None:
    world = World([nodepool(budgets=[{"nodes": "1", "reasons": ["Unhealthy"]}]),
                   *sick("broken"), *healthy("fine")])  # fmt: skip
    unhealthy = budget_verdicts(world.snapshot, DisruptionReason.UNHEALTHY, NOW)["default"]
    drifted = budget_verdicts(world.snapshot, DisruptionReason.DRIFTED, NOW)["default"]
    assert (unhealthy.allowed, unhealthy.remaining) == (1, 1)
    assert drifted.disrupting == 1, "for other reasons a NotReady node is disrupting"


def test_a_budget_without_reasons_covers_unhealthy() -> None:
    world = World([nodepool(budgets=[{"nodes": "0"}]), *sick("broken")])
    assert budget_verdicts(world.snapshot, DisruptionReason.UNHEALTHY, NOW)["default"].allowed == 0


# --- wiring -------------------------------------------------------------------------------------


def test_repair_runs_first_only_when_it_is_a_method() -> None:
    clock = FakeClock(NOW)
    on = methods_in_order(clock=clock, spot_to_spot=False, repair_policies=POLICIES)
    assert isinstance(on[0], Repair)
    off = methods_in_order(clock=clock, spot_to_spot=False)
    assert not any(isinstance(m, Repair) for m in off)


def test_the_terminate_first_repair_gate_reaches_repair() -> None:
    def repair(**gates: bool) -> Repair:
        methods = methods_in_order(clock=FakeClock(NOW), spot_to_spot=False,
                                   repair_policies=POLICIES, **gates)  # fmt: skip
        (method,) = [m for m in methods if isinstance(m, Repair)]
        return method

    assert repair().terminate_first, "on by default"
    assert not repair(terminate_first_repair=False).terminate_first
    assert Settings().feature_gates.terminate_first_repair


def built(gate: bool, legacy: bool) -> tuple[list[str], bool]:
    """The controllers' names, and whether the disruption controller repairs."""
    settings = Settings(cluster_name="test", cloud_provider="fake", legacy_node_repair=legacy,
                        feature_gates=FeatureGates(node_repair=gate))  # fmt: skip
    components = built_components(settings)
    names = [str(getattr(c, "name", "")) for c in components]
    disruption = next(c.reconciler.reconciler for c in components
                      if isinstance(getattr(c, "reconciler", None), Singleton)
                      and isinstance(c.reconciler.reconciler, Disruption))  # fmt: skip
    return names, any(isinstance(m, Repair) for m in disruption.methods)


@pytest.mark.parametrize(
    ("gate", "legacy", "legacy_controller", "method"),
    [(False, False, False, False), (False, True, False, False),
     (True, False, False, True), (True, True, True, False)],
)  # fmt: skip
def test_the_gate_and_the_legacy_setting_choose_how_nodes_are_repaired(
    gate: bool, legacy: bool, legacy_controller: bool, method: bool
) -> None:
    names, repairs = built(gate, legacy)
    assert ("node.health" in names) is legacy_controller
    assert repairs is method


# --- through the disruption controller, against the API server emulator --------------------


def marked(claims: dict[str, Obj]) -> list[str]:
    """The NodeClaims a decision marked for repair."""
    return [name for name, claim in claims.items()
            if any(c["type"] == "DisruptionReason" and c["reason"] == "Unhealthy"
                   for c in claim.get("status", {}).get("conditions", ()))]  # fmt: skip


def repairing(world: Any, objects: list[Obj], policies: Any,
              clock: FakeClock | None = None) -> Disruption:  # fmt: skip
    """The disruption controller of ``world`` with node repair on, with ``policies``."""
    settings = Settings(feature_gates=FeatureGates(node_repair=True))
    return Disruption(world.state, world.client, world.recorder, settings,
                      contexts=Contexts(World(objects).compiled),  # type: ignore[arg-type]
                      nominations=lambda _: {}, clock=clock or FakeClock(NOW),
                      metrics=world.metrics.karpenter, repair_policies=policies)  # fmt: skip


async def test_the_controller_reboots_without_a_replacement(apiserver) -> None:
    objects = [nodepool(), *gpu_fault("gpu")]
    store(apiserver, objects)
    async with controller_world(apiserver) as world:
        await world.settled()
        await repairing(world, objects, REBOOTING).reconcile()
        await world.settled()
        claims = {c["metadata"]["name"]: c for c in apiserver.store.list(NODECLAIMS)}
        assert marked(claims) == ["gpu"] and list(claims) == ["gpu"], "nothing launched"
        assert claims["gpu"]["metadata"]["annotations"][ANNOTATION_REPAIR_REBOOT] == "true"
        rebooting = await eventually(lambda: world.events("DisruptionRebooting"))
        assert {e["message"] for e in rebooting} == {"Draining Node to reboot: Unhealthy"}
        decided = {"decision": "reboot", "reason": "Unhealthy", "consolidation_type": ""}
        assert world.metrics.registry.get_sample_value(
            "karpenter_voluntary_disruption_decisions_total", decided) == 1  # fmt: skip


async def test_the_controller_repairs_within_budget_pre_spinning_and_heeding_the_veto(
    apiserver,
) -> None:
    objects = [nodepool(budgets=[{"nodes": "1", "reasons": ["Unhealthy"]}, {"nodes": "100%"}]),
               *sick("a-old", minutes=60, annotations={ANNOTATION_DO_NOT_DISRUPT: "true"}),
               *sick("b-young", minutes=35),
               *sick("c-vetoed", minutes=90, annotations={ANNOTATION_DO_NOT_REPAIR: "true"}),
               *healthy("d-fine")]  # fmt: skip
    store(apiserver, objects)
    async with controller_world(apiserver) as world:
        await world.settled()
        disruption = repairing(world, objects, POLICIES)

        await disruption.reconcile()
        await world.settled()
        claims = {c["metadata"]["name"]: c for c in apiserver.store.list(NODECLAIMS)}
        assert marked(claims) == ["a-old"], "the longest eligible, do-not-disrupt notwithstanding"
        replacement = claims["a-old"]["metadata"]["annotations"][ANNOTATION_REPLACEMENTS]
        assert replacement in claims, "its replacement is made first"
        assert not claims["a-old"]["metadata"].get("deletionTimestamp"), "and it stays for now"
        launching = await eventually(lambda: world.events("DisruptionLaunching"))
        assert {e["message"] for e in launching} == {"Launching NodeClaim: Unhealthy"}
        registry = world.metrics.registry
        decided = {"decision": "replace", "reason": "Unhealthy", "consolidation_type": ""}
        assert registry.get_sample_value("karpenter_voluntary_disruption_decisions_total",
                                         decided) == 1  # fmt: skip

        await disruption.reconcile()
        await world.settled()
        claims = {c["metadata"]["name"]: c for c in apiserver.store.list(NODECLAIMS)}
        assert marked(claims) == ["a-old"], "the Unhealthy budget of one is spent: b-young waits"
        assert len(claims) == len(objects) // 3 + 1, "no second replacement"


async def test_a_toleration_running_out_starts_a_pass_the_quiet_shortcut_would_skip(
    apiserver,
) -> None:
    """A pass that found nothing stands for a minute on unchanged inputs; a toleration
    that runs out within that minute changes no input, and must not wait it out."""
    soon = sick("soon", minutes=29)
    since = (NOW - timedelta(minutes=29, seconds=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    next(c for c in soon[0]["status"]["conditions"] if c["type"] == "Ready")[
        "lastTransitionTime"
    ] = since
    objects = [nodepool(), *soon, *healthy("fine")]
    store(apiserver, objects)
    clock = FakeClock(NOW)
    async with controller_world(apiserver) as world:
        await world.settled()
        disruption = repairing(world, objects, POLICIES, clock)
        await disruption.reconcile()
        await world.settled()
        assert marked({c["metadata"]["name"]: c for c in apiserver.store.list(NODECLAIMS)}) == []
        await clock.advance(31)  # past the toleration, well inside the quiet minute
        await disruption.reconcile()
        await world.settled()
        claims = {c["metadata"]["name"]: c for c in apiserver.store.list(NODECLAIMS)}
        assert marked(claims) == ["soon"]


def test_explain_node_says_what_repair_makes_of_each_node() -> None:
    objects = [nodepool(), *sick("due", minutes=40), *sick("soon", minutes=25),
               *sick("kept", minutes=90, annotations={ANNOTATION_DO_NOT_REPAIR: "true"}),
               *healthy("fine")]  # fmt: skip
    world = World(objects)

    def repair_line(name: str, **settings: Any) -> str:
        lines = explain_node(world.snapshot, world.compiled, name, now=NOW,
                             settings=Settings(**settings), repair_policies=POLICIES)  # fmt: skip
        return next(line.strip() for line in lines if line.strip().startswith("repair:"))

    assert repair_line("due") == ("repair: unhealthy (Ready=False past its 30m00s toleration); "
                                  "ReplaceNode within the Unhealthy budget, do-not-disrupt "
                                  "notwithstanding")  # fmt: skip
    assert repair_line("soon") == "repair: an unhealthy condition holds; repairable in 5m00s"
    assert repair_line("kept") == ("repair: unhealthy (Ready=False past its 30m00s toleration), "
                                   "vetoed by karpenter.sh/do-not-repair")  # fmt: skip
    assert repair_line("fine") == "repair: healthy"
    assert repair_line("due", legacy_node_repair=True).endswith(
        "legacy repair replaces it forcefully"
    )
