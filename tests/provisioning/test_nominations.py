"""Nominations: pods promised to capacity on its way, when the promise ends, and how."""

from __future__ import annotations

from karpy.provisioning.nominations import GONE, Ended, Nominations, TargetState

ON_ITS_WAY = TargetState(exists=True)


def prune(nominations, *, nodes=None, targets=None, now=100.0, fits=None):
    """``nodes``: pod key -> its node ("" unbound; a pod left out is gone); by default
    default/a and default/b are unbound. ``targets``: target -> `TargetState`."""
    nodes = {"default/a": "", "default/b": ""} if nodes is None else nodes
    targets = {"claim-1": ON_ITS_WAY} if targets is None else targets
    return nominations.prune(nodes.get, lambda t: targets.get(t, GONE), now, fits=fits)


def test_a_nomination_holds_while_its_target_is_on_its_way():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=0.0)
    pruned = prune(nominations)
    assert pruned.live == {"default/a": "claim-1", "default/b": "claim-1"}
    assert pruned.ended == {}


def test_a_pod_bound_to_its_targets_node_ends_as_bound_to_target():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=0.0)
    registered = {"claim-1": TargetState(exists=True, initialized_at=90.0, node="node-1")}
    pruned = prune(nominations, nodes={"default/a": "node-1", "default/b": ""},
                   targets=registered)  # fmt: skip
    assert pruned.ended == {"default/a": Ended.BOUND_TO_TARGET}
    assert pruned.live == {"default/b": "claim-1"}
    assert nominations.get("default/a") is None


def test_a_pod_nominated_to_a_node_and_bound_there_ends_as_bound_to_target():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "node-1", now=0.0)
    pruned = prune(nominations, nodes={"default/a": "node-1"}, targets={"node-1": ON_ITS_WAY})
    assert pruned.ended == {"default/a": Ended.BOUND_TO_TARGET}


def test_a_pod_bound_to_another_node_ends_as_bound_elsewhere():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=0.0)
    registered = {"claim-1": TargetState(exists=True, initialized_at=None, node="node-1")}
    pruned = prune(nominations, nodes={"default/a": "node-2"}, targets=registered)
    assert pruned.ended == {"default/a": Ended.BOUND_ELSEWHERE}


def test_a_pod_bound_before_its_target_registered_is_bound_elsewhere():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=0.0)
    pruned = prune(nominations, nodes={"default/a": "node-9"})  # claim-1 has no node yet
    assert pruned.ended == {"default/a": Ended.BOUND_ELSEWHERE}


def test_a_deleted_pod_ends_as_pod_gone():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=0.0)
    pruned = prune(nominations, nodes={"default/b": ""})
    assert pruned.ended == {"default/a": Ended.POD_GONE}
    assert pruned.live == {"default/b": "claim-1"}


def test_a_nomination_ends_with_its_target():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=0.0)
    pruned = prune(nominations, targets={})
    assert (pruned.live, pruned.ended) == ({}, {"default/a": Ended.TARGET_GONE})


def test_a_pod_bound_to_its_node_as_the_target_goes_counts_as_bound():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "node-1", now=0.0)
    pruned = prune(nominations, nodes={"default/a": "node-1"}, targets={})
    assert pruned.ended == {"default/a": Ended.BOUND_TO_TARGET}


def test_a_nomination_lapses_once_the_node_has_been_ready_for_the_window():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=50.0)
    ready_since = {"claim-1": TargetState(exists=True, initialized_at=60.0, node="node-1")}
    assert prune(nominations, nodes={"default/a": ""}, targets=ready_since, now=79.0).live == {
        "default/a": "claim-1"
    }
    pruned = prune(nominations, nodes={"default/a": ""}, targets=ready_since, now=81.0)
    assert pruned.ended == {"default/a": Ended.EXPIRED}, (
        "kube-scheduler did not bind it within the window: schedule it afresh"
    )


def test_a_renomination_restarts_the_window():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "node-1", now=0.0)
    nominations.nominate(["default/a"], "node-1", now=95.0)
    ready = {"node-1": TargetState(exists=True, initialized_at=10.0, node="node-1")}
    assert prune(nominations, nodes={"default/a": ""}, targets=ready, now=100.0).live == {
        "default/a": "node-1"
    }


def test_a_nomination_ends_at_once_when_its_initialized_node_has_no_room_left():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a", "default/b"], "claim-1", now=50.0)
    ready = {"claim-1": TargetState(exists=True, initialized_at=60.0, node="node-1")}
    room = {"default/a": True, "default/b": False}  # kube-scheduler filled it with others
    pruned = prune(nominations, targets=ready, now=61.0, fits=lambda pod, target: room[pod])
    assert pruned.live == {"default/a": "claim-1"}
    assert pruned.ended == {"default/b": Ended.NO_ROOM}


def test_no_room_is_said_rather_than_expired_when_both_hold():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=0.0)
    ready = {"claim-1": TargetState(exists=True, initialized_at=10.0, node="node-1")}
    pruned = prune(nominations, nodes={"default/a": ""}, targets=ready, now=100.0,
                   fits=lambda pod, target: False)  # fmt: skip
    assert pruned.ended == {"default/a": Ended.NO_ROOM}


def test_room_is_not_asked_of_targets_still_on_their_way():
    nominations = Nominations(window=20)
    nominations.nominate(["default/a"], "claim-1", now=50.0)

    def no_room(pod: str, target: str) -> bool:
        raise AssertionError("a NodeClaim without a node has nothing to measure yet")

    pruned = prune(nominations, nodes={"default/a": ""}, now=61.0, fits=no_room)
    assert pruned.live == {"default/a": "claim-1"}


def test_only_outcomes_that_leave_the_pod_unbound_need_a_new_plan():
    assert {o for o in Ended if o.still_pending} == {
        Ended.NO_ROOM, Ended.EXPIRED, Ended.TARGET_GONE,
    }  # fmt: skip


def test_the_pods_nominated_to_a_target_are_listed_for_its_launch_failure_events():
    nominations = Nominations()
    nominations.nominate(["ns/b", "ns/a"], "claim-1", 0.0)
    nominations.nominate(["ns/c"], "claim-2", 0.0)
    nominations.nominate(["ns/a"], "claim-2", 1.0)  # renominated: no longer claim-1's
    assert nominations.pods_for("claim-1") == ["ns/b"]
    assert nominations.pods_for("claim-2") == ["ns/a", "ns/c"]
    assert nominations.pods_for("claim-3") == []
