"""The disruption methods as plug-ins: a pass tries them in Karpenter's order, each on the
candidates it takes and within its reason's budgets, and the first with a command wins."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from karpy.apis.disruption import DisruptionReason
from karpy.disruption.candidates import Candidate
from karpy.disruption.controller import Disruption
from karpy.disruption.explain import state_from_objects
from karpy.disruption.methods.command import NOTHING, Command, ConsolidationType, Outcome
from karpy.disruption.methods.consolidation import should_consolidate
from karpy.disruption.methods.drift import Drift
from karpy.disruption.methods.emptiness import Emptiness
from karpy.disruption.methods.method import DisruptionClass, Method
from karpy.disruption.methods.multinode import MultiNodeConsolidation
from karpy.disruption.methods.ordered import methods_in_order
from karpy.disruption.methods.singlenode import SingleNodeConsolidation
from karpy.disruption.methods.staticdrift import StaticDrift
from karpy.disruption.simulation import WhatIf
from karpy.settings import Settings
from tests.disruption.deciders import Contexts, Recorder
from tests.disruption.world import NOW, World, managed_node, nodepool, pod_on
from tests.kube.fakeclock import FakeClock

POOL = nodepool()
Asked = list[tuple[str, list[str], bool]]  # method, candidates it got, did it decide


class Spy:
    """A method that is another one, noting what it was asked and whether it decided."""

    def __init__(self, method: Method, asked: Asked, name: str = "") -> None:
        self.method = method
        self.asked = asked
        self.name = name or type(method).__name__

    @property
    def reason(self) -> DisruptionReason:
        return self.method.reason

    @property
    def consolidation_type(self) -> ConsolidationType:
        return self.method.consolidation_type

    @property
    def disruption_class(self) -> DisruptionClass:
        return self.method.disruption_class

    @property
    def simulates(self) -> bool:
        return self.method.simulates

    @property
    def refusal_event(self) -> str:
        return self.method.refusal_event

    def should_disrupt(self, candidate: Candidate) -> bool:
        return self.method.should_disrupt(candidate)

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return self.method.should_run(what_if, budgets)

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        outcome = self.method.compute_command(candidates, budgets, what_if)
        self.asked.append((self.name, [c.name for c in candidates], outcome.command is not None))
        return outcome


class Fixed:
    """A method with a set answer: every candidate it is given, or nothing."""

    reason = DisruptionReason.EMPTY
    consolidation_type = ConsolidationType.EMPTY  # validated later, not started at once
    simulates = False
    refusal_event = ""

    def __init__(
        self,
        decides: bool,
        *,
        takes: Callable[[Candidate], bool] = lambda _: True,
        disruption_class: DisruptionClass = DisruptionClass.GRACEFUL,
    ) -> None:
        self.decides = decides
        self.takes = takes
        self.disruption_class = disruption_class

    def should_disrupt(self, candidate: Candidate) -> bool:
        return self.takes(candidate)

    def should_run(self, what_if: WhatIf, budgets: Mapping[str, int]) -> bool:
        return True

    def compute_command(
        self, candidates: Sequence[Candidate], budgets: dict[str, int], what_if: WhatIf
    ) -> Outcome:
        if not self.decides:
            return NOTHING
        return Outcome(Command(self.reason, self.consolidation_type, tuple(candidates)))


def one_pass(
    objects: list[dict[str, Any]],
    methods: Sequence[Method],
    nominations: Callable[[object], Mapping[str, str]] = lambda _: {},
) -> None:
    state = state_from_objects(objects)
    for kind in state.watched:
        state.set_synced(kind)
    disruption = Disruption(state, None, Recorder(), Settings(),  # type: ignore[arg-type]
                            contexts=Contexts(World(objects).compiled),  # type: ignore[arg-type]
                            nominations=nominations, clock=FakeClock(NOW),
                            methods=methods)  # fmt: skip
    asyncio.run(disruption.reconcile())


def spied(asked: Asked) -> list[Method]:
    return [Spy(m, asked) for m in methods_in_order(clock=FakeClock(NOW), spot_to_spot=False)]


def test_the_methods_come_in_karpenters_order() -> None:
    methods = methods_in_order(clock=FakeClock(NOW), spot_to_spot=False)
    assert [type(m) for m in methods] == [
        Emptiness,
        StaticDrift,
        Drift,
        MultiNodeConsolidation,
        SingleNodeConsolidation,
    ]
    assert [m.disruption_class for m in methods] == [
        DisruptionClass.GRACEFUL,
        DisruptionClass.EVENTUAL,
        DisruptionClass.EVENTUAL,
        DisruptionClass.GRACEFUL,
        DisruptionClass.GRACEFUL,
    ]


def underused(*names: str) -> list[dict[str, Any]]:
    return [o for n in names for o in (*managed_node(n, "c-4x-amd64-linux"), pod_on(n, f"web-{n}"))]


def test_an_empty_node_is_taken_before_drift_and_consolidation_are_asked() -> None:
    drifted = [*managed_node("old", "c-4x-amd64-linux", drifted=True), pod_on("old", "web-old")]
    asked: Asked = []
    one_pass([POOL, *managed_node("idle", "c-2x-amd64-linux"), *drifted, *underused("a", "b")],
             spied(asked))  # fmt: skip
    assert asked == [("Emptiness", ["idle"], True)]


def test_consolidation_is_asked_when_nothing_is_empty_or_drifted() -> None:
    asked: Asked = []
    one_pass([POOL, *underused("a", "b")], spied(asked))
    assert asked, "consolidation was asked"
    assert asked[0][0] == "MultiNodeConsolidation", "no candidates: emptiness and drift skipped"
    assert sorted(asked[0][1]) == ["a", "b"]


def test_the_first_method_with_a_command_wins_the_pass() -> None:
    asked: Asked = []
    methods: list[Method] = [
        Spy(Fixed(decides=False), asked, "first"),
        Spy(Fixed(decides=True), asked, "second"),
        Spy(Fixed(decides=True), asked, "third"),
    ]
    one_pass([POOL, *underused("a")], methods)
    assert asked == [("first", ["a"], False), ("second", ["a"], True)]


def test_a_method_is_only_given_the_candidates_it_takes_and_skipped_without_any() -> None:
    asked: Asked = []
    methods: list[Method] = [
        Spy(Fixed(decides=True, takes=lambda c: False), asked, "none"),
        Spy(Fixed(decides=False, takes=lambda c: c.name == "b"), asked, "only-b"),
    ]
    one_pass([POOL, *underused("a", "b")], methods)
    assert asked == [("only-b", ["b"], False)]


def test_while_capacity_arrives_only_eventual_methods_are_asked() -> None:
    asked: Asked = []
    methods: list[Method] = [
        Spy(Fixed(decides=False), asked, "graceful"),
        Spy(Fixed(decides=False, disruption_class=DisruptionClass.EVENTUAL), asked, "eventual"),
    ]
    # a pod nominated to "a" and not bound yet: capacity is arriving
    one_pass([POOL, *underused("a", "b")], methods, nominations=lambda _: {"ns/p": "a"})
    assert asked == [("eventual", ["b"], False)]


@pytest.mark.parametrize(
    ("policy", "consolidated"),
    [("WhenEmptyOrUnderutilized", True), ("WhenEmpty", False), ("Balanced", True)],
)
def test_only_pools_that_consolidate_underused_nodes_give_consolidation_candidates(
    policy: str, consolidated: bool
) -> None:
    world = World([nodepool(consolidationPolicy=policy), *underused("a")])
    (candidate,) = world.candidates()
    assert should_consolidate(candidate) is consolidated
    assert Emptiness().should_disrupt(candidate) is False, "not empty"
