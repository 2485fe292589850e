"""Nominations: pods promised to capacity on its way, and when the promise ends."""

from __future__ import annotations

from karpy.provisioning.nominations import Nominations


def prune(nominations, *, pending=("default/a", "default/b"), targets=None, now=100.0):
    targets = {"claim-1": (True, None)} if targets is None else targets
    return nominations.prune(
        lambda pod: pod in pending, lambda t: targets.get(t, (False, None)), now
    )


def test_a_nomination_holds_while_its_target_is_on_its_way():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=0.0)
    assert prune(nominations) == {"default/a": "claim-1", "default/b": "claim-1"}


def test_a_bound_or_deleted_pod_loses_its_nomination():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=0.0)
    assert prune(nominations, pending=("default/b",)) == {"default/b": "claim-1"}
    assert nominations.get("default/a") is None


def test_a_nomination_ends_with_its_target():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=0.0)
    assert prune(nominations, targets={}) == {}


def test_a_nomination_lapses_once_the_node_has_been_ready_for_the_window():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=50.0)
    ready_since = {"claim-1": (True, 60.0)}
    assert prune(nominations, targets=ready_since, now=79.0) == {"default/a": "claim-1"}
    assert prune(nominations, targets=ready_since, now=81.0) == {}, (
        "kube-scheduler did not bind it within the window: schedule it afresh"
    )


def test_a_renomination_restarts_the_window():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "node-1", now=0.0)
    nominations.nominate(["default/a"], "node-1", now=95.0)
    assert prune(nominations, targets={"node-1": (True, 10.0)}, now=100.0) == {
        "default/a": "node-1"
    }


def test_a_nomination_ends_at_once_when_its_initialized_node_has_no_room_left():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=50.0)
    ready = {"claim-1": (True, 60.0)}
    room = {"default/a": True, "default/b": False}  # kube-scheduler filled it with others
    live = nominations.prune(lambda pod: True, lambda t: ready.get(t, (False, None)), 61.0,
                             fits=lambda pod, target: room[pod])  # fmt: skip
    assert live == {"default/a": "claim-1"}


def test_room_is_not_asked_of_targets_still_on_their_way():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=50.0)

    def no_room(pod: str, target: str) -> bool:
        raise AssertionError("a NodeClaim without a node has nothing to measure yet")

    live = nominations.prune(lambda pod: True, lambda t: (True, None), 61.0, fits=no_room)
    assert live == {"default/a": "claim-1"}
