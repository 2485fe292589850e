"""``karpenter_voluntary_disruption_consolidation_timeouts_total``: single-node
consolidation stops at its time bound (3 minutes, Karpenter's) and says so in the
metric, as Karpenter counts it."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from karpy.disruption.methods import consolidation, singlenode
from karpy.disruption.methods.consolidation import consolidation_candidates
from karpy.disruption.methods.singlenode import single_node_command
from karpy.disruption.simulation import WhatIf
from karpy.observability.karpenter_metrics import KarpenterMetrics
from tests.disruption.deciders import decider
from tests.disruption.world import World, managed_node, nodepool, pod_on
from tests.kube.fakeclock import FakeClock

OBJECTS = [nodepool(), *managed_node("lonely", "c-4x-amd64-linux"), pod_on("lonely", "web-0")]


def test_a_search_out_of_time_says_so() -> None:
    world = World(OBJECTS)
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    outcome = single_node_command(chosen, world.simulate, spot_to_spot=False,
                                  out_of_time=lambda: True)  # fmt: skip
    assert outcome.command is None and outcome.timed_out
    finished = single_node_command(chosen, world.simulate, spot_to_spot=False)
    assert not finished.timed_out


def test_a_pass_whose_single_node_search_times_out_counts_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    registry = CollectorRegistry()
    run = decider(OBJECTS, metrics=KarpenterMetrics(registry))
    sample = {"consolidation_type": "single"}
    name = "karpenter_voluntary_disruption_consolidation_timeouts_total"
    assert registry.get_sample_value(name, sample) == 0
    monkeypatch.setattr(singlenode, "SINGLE_NODE_TIMEOUT", -1.0)  # already past
    run.events_of_a_pass()
    assert registry.get_sample_value(name, sample) == 1


def test_a_search_cut_short_starts_next_time_with_the_nodes_it_missed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """And it is not taken for "nothing to consolidate here" (that answer is cached)."""
    # Two full spot nodes: neither's pod fits beside the other, none is cheaper.
    objects = [nodepool(),
               *managed_node("a", "c-1x-amd64-linux", capacity_type="spot"),
               pod_on("a", "web-a", cpu="700m"),
               *managed_node("b", "c-1x-amd64-linux", capacity_type="spot"),
               pod_on("b", "web-b", cpu="700m")]  # fmt: skip
    world = World(objects)
    method = singlenode.SingleNodeConsolidation(
        consolidation.Consolidated(clock=FakeClock()), spot_to_spot=False)  # fmt: skip
    chosen = consolidation_candidates(world.candidates(), {"default": 10})
    what_if = WhatIf(world.snapshot, world.compiled, nominated={}, settings=world.settings,
                     budget=30.0)  # fmt: skip
    calls = iter([False, True])  # time for one candidate, then none
    order: list[list[str]] = []
    real = singlenode.single_node_command

    def spy(cands: Any, *args: Any, **kw: Any) -> Any:
        order.append([c.name for c in cands])
        kw["out_of_time"] = lambda: next(calls, False)
        return real(cands, *args, **kw)

    monkeypatch.setattr(singlenode, "single_node_command", spy)
    first = method.command_for(chosen, {"default": 10}, what_if)
    assert first.timed_out
    assert not method.consolidated.is_consolidated(what_if, {"default": 10})
    method.command_for(chosen, {"default": 10}, what_if)
    assert order[1][0] == first.untried[0] != order[0][0]
