"""The rules every kind's status conditions are set by (`karpy.apis.conditions`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from karpy.apis.conditions import (
    Condition,
    ConditionSet,
    ConditionStatus,
    ConditionTypes,
    ConditionUpdate,
    RootExplanation,
)

NOW = datetime(2025, 1, 1, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)
TYPES = ConditionTypes(dependents=("Launched", "Registered"))


def empty(types: ConditionTypes = TYPES, generation: int = 1) -> ConditionSet:
    return types.of((), generation=generation)


def by_type(conditions: ConditionSet) -> dict[str, Condition]:
    return {c.type: c for c in conditions.conditions}


def test_a_condition_set_without_a_reason_carries_its_type_and_the_generation():
    set_ = empty(generation=3).apply(ConditionUpdate.true("Launched"), now=NOW)
    launched = by_type(set_)["Launched"]
    assert launched == Condition("Launched", "True", "Launched", "", NOW, 3)


def test_the_transition_time_moves_only_when_the_status_does():
    waiting = empty().apply(ConditionUpdate.unknown("Launched", "Pending", "a"), now=NOW)
    reworded = waiting.apply(ConditionUpdate.unknown("Launched", "Pending", "b"), now=LATER)
    assert by_type(reworded)["Launched"].message == "b"
    assert by_type(reworded)["Launched"].last_transition_time == NOW
    launched = reworded.apply(ConditionUpdate.true("Launched"), now=LATER)
    assert by_type(launched)["Launched"].last_transition_time == LATER


def test_setting_what_the_conditions_already_say_changes_nothing():
    once = empty().apply(ConditionUpdate.true("Launched"), ConditionUpdate.true("Registered"),
                         now=NOW)  # fmt: skip
    again = once.apply(ConditionUpdate.true("Launched"), now=LATER)
    assert again.conditions is once.conditions


def test_a_new_generation_is_observed_and_keeps_the_transition_time():
    old = empty(generation=1).apply(ConditionUpdate.true("Launched"), now=NOW)
    bumped = TYPES.of(old.conditions, generation=2).apply(ConditionUpdate.true("Launched"),
                                                          now=LATER)  # fmt: skip
    launched = by_type(bumped)["Launched"]
    assert (launched.observed_generation, launched.last_transition_time) == (2, NOW)


def test_ready_is_true_when_every_dependent_is_true():
    set_ = empty().apply(ConditionUpdate.true("Launched"), ConditionUpdate.true("Registered"),
                         now=NOW)  # fmt: skip
    assert by_type(set_)["Ready"] == Condition("Ready", "True", "Ready", "", NOW, 1)


def test_ready_is_unknown_while_a_dependent_is_not_yet_set():
    set_ = empty().apply(ConditionUpdate.true("Launched"), now=NOW)
    ready = by_type(set_)["Ready"]
    assert (ready.status, ready.reason, ready.message) == (
        "Unknown", "ReconcilingDependents", "Registered=Unknown")  # fmt: skip


def test_ready_is_false_when_a_dependent_is_false_and_lists_every_unhealthy_one():
    types = ConditionTypes(dependents=("A", "B", "C"))
    set_ = empty(types).apply(ConditionUpdate.unknown("A", "Waiting", ""),
                              ConditionUpdate.false("B", "Broken", "it broke"),
                              ConditionUpdate.true("C"), now=NOW)  # fmt: skip
    ready = by_type(set_)["Ready"]
    assert (ready.status, ready.reason, ready.message) == (
        "False", "UnhealthyDependents", "A=Unknown, B=False")  # fmt: skip


def test_a_dependent_explained_root_takes_the_false_ones_reason_and_message():
    types = ConditionTypes(dependents=("A", "B"), explanation=RootExplanation.DEPENDENT)
    set_ = empty(types).apply(ConditionUpdate.unknown("A", "Waiting", "not yet"),
                              ConditionUpdate.false("B", "Broken", "it broke"),
                              now=NOW)  # fmt: skip
    ready = by_type(set_)["Ready"]
    assert (ready.status, ready.reason, ready.message) == ("False", "Broken", "it broke")
    unknown = set_.apply(ConditionUpdate.true("B"), now=LATER)
    ready = by_type(unknown)["Ready"]
    assert (ready.status, ready.reason, ready.message) == ("Unknown", "Waiting", "not yet")


def test_a_dependent_true_for_an_older_generation_leaves_ready_unknown():
    stale = Condition("Launched", "True", "Launched", "", NOW, 1)
    set_ = TYPES.of((stale,), generation=2).apply(ConditionUpdate.true("Registered"), now=NOW)
    ready = by_type(set_)["Ready"]
    assert (ready.status, ready.message) == ("Unknown", "Launched=True")


def test_a_dependent_false_for_an_older_generation_does_not_make_ready_false():
    stale = Condition("Launched", "False", "Failed", "", NOW, 1)
    set_ = TYPES.of((stale,), generation=2).apply(ConditionUpdate.true("Registered"), now=NOW)
    assert by_type(set_)["Ready"].status == "Unknown"


def test_ready_is_left_alone_when_no_dependent_is_set():
    set_ = empty().apply(ConditionUpdate.true("Drifted", "NodePoolDrifted"), now=NOW)
    assert [c.type for c in set_.conditions] == ["Drifted"]


def test_conditions_keep_their_place_and_new_ones_go_last():
    foreign = Condition("Custom", "True", "Custom", "", NOW, 1)
    set_ = TYPES.of((foreign,), generation=1).apply(ConditionUpdate.true("Launched"), now=NOW)
    updated = set_.apply(ConditionUpdate.true("Registered"), now=LATER)
    assert [c.type for c in updated.conditions] == ["Custom", "Launched", "Ready", "Registered"]
    assert by_type(updated)["Custom"] == foreign


def test_clear_removes_a_condition_and_changes_nothing_when_it_is_absent():
    set_ = empty().apply(ConditionUpdate.true("Drifted"), now=NOW)
    assert set_.clear("Drifted").conditions == ()
    assert set_.clear("Consolidatable") is set_


def test_messages_are_cut_to_the_kinds_limit():
    types = ConditionTypes(dependents=("Launched",), message_limit=5)
    set_ = empty(types).apply(ConditionUpdate.unknown("Launched", "Failed", "0123456789"), now=NOW)
    assert by_type(set_)["Launched"].message == "01234"
    again = set_.apply(ConditionUpdate.unknown("Launched", "Failed", "0123456789"), now=LATER)
    assert again is set_, "the cut message is what is compared"


def test_a_condition_prints_its_status_as_plain_text():
    condition = Condition.from_dict({"type": "Ready", "status": "False", "reason": "Broken",
                                     "message": "m", "lastTransitionTime": "2025-01-01T00:00:00Z",
                                     "observedGeneration": 2})  # fmt: skip
    assert condition.status is ConditionStatus.FALSE
    assert orjson.loads(orjson.dumps(condition.to_dict())) == condition.to_dict()
    assert type(condition.to_dict()["status"]) is str


def test_a_status_kubernetes_does_not_know_is_refused():
    with pytest.raises(ValueError, match="Maybe"):
        Condition("Ready", "Maybe")
