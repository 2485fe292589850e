"""What asks the disruption singleton for a pass: a NodeClaim turning Consolidatable or
Drifted wants one at once; anything else waits for the poll (every resync is due)."""

from __future__ import annotations

from typing import Any

from karpy.apis.nodeclaim import NodeClaim
from karpy.state import kinds
from karpy.state.cluster import StateChange
from tests import factories as f
from tests.disruption.deciders import decider


def claim(*conditions: str) -> NodeClaim:
    spec: dict[str, Any] = f.nodeclaim("default-a", nodepool="default", initialized=True)
    spec["status"]["conditions"] += [f.condition(kind) for kind in conditions]
    return NodeClaim.from_dict(spec)


def change(old: NodeClaim | None, new: NodeClaim | None) -> StateChange[Any]:
    return StateChange(kinds.NODECLAIM, "default-a", old, new)


def test_a_nodeclaim_turning_consolidatable_or_drifted_wants_a_pass_at_once():
    disruption = decider([f.nodepool("default")]).disruption
    assert disruption.wants(change(claim(), claim("Consolidatable")))
    assert disruption.wants(change(claim(), claim("Drifted")))
    assert disruption.wants(change(None, claim("Drifted"))), "seen for the first time"


def test_other_nodeclaim_changes_wait_for_the_poll():
    disruption = decider([f.nodepool("default")]).disruption
    assert not disruption.wants(change(claim("Consolidatable"), claim("Consolidatable")))
    assert not disruption.wants(change(claim(), claim()))
    assert not disruption.wants(change(claim("Drifted"), None)), "a NodeClaim gone"
    assert disruption.due(disruption.state.snapshot()), "every resync is a pass"
