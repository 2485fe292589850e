"""Node-selector requirement algebra, as Karpenter defines it."""

from __future__ import annotations

import pytest

from karpy.scheduling.requirements import (
    Requirement,
    RequirementConflict,
    Requirements,
    UndefinedLabel,
)

KEY = "example.com/key"


def req(op: str, *values: str, key: str = KEY, min_values: int | None = None) -> Requirement:
    return Requirement.new(key, op, values, min_values=min_values)


def reqs(*items: Requirement) -> Requirements:
    return Requirements(items)


@pytest.mark.parametrize(
    ("requirement", "operator"),
    [
        (req("In", "a"), "In"),
        (req("NotIn", "a"), "NotIn"),
        (req("Exists"), "Exists"),
        (req("DoesNotExist"), "DoesNotExist"),
        (req("Gt", "3"), "Exists"),
        (req("Lt", "3"), "Exists"),
        (req("Gte", "3"), "Exists"),
        (req("Lte", "3"), "Exists"),
    ],
)
def test_every_operator_folds_into_one_shape(requirement: Requirement, operator: str) -> None:
    assert requirement.operator == operator


@pytest.mark.parametrize(
    ("requirement", "value", "admitted"),
    [
        (req("In", "a", "b"), "a", True),
        (req("In", "a", "b"), "c", False),
        (req("NotIn", "a"), "a", False),
        (req("NotIn", "a"), "z", True),
        (req("Exists"), "anything", True),
        (req("DoesNotExist"), "anything", False),
        (req("Gt", "3"), "3", False),
        (req("Gt", "3"), "4", True),
        (req("Gte", "3"), "3", True),
        (req("Lt", "3"), "3", False),
        (req("Lt", "3"), "2", True),
        (req("Lte", "3"), "3", True),
        (req("Gt", "3"), "not-a-number", False),
    ],
)
def test_has_tells_whether_a_value_is_admitted(
    requirement: Requirement, value: str, admitted: bool
) -> None:
    assert requirement.has(value) is admitted


def test_aliased_keys_are_normalised() -> None:
    assert Requirement.new("failure-domain.beta.kubernetes.io/zone", "In", ["a"]).key == (
        "topology.kubernetes.io/zone"
    )
    assert Requirement.new("beta.kubernetes.io/arch", "In", ["amd64"]).key == "kubernetes.io/arch"
    assert Requirement.new("beta.kubernetes.io/instance-type", "In", ["m5"]).key == (
        "node.kubernetes.io/instance-type"
    )


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (req("In", "a", "b"), req("In", "b", "c"), req("In", "b")),
        (req("In", "a", "b"), req("NotIn", "a"), req("In", "b")),
        (req("NotIn", "a"), req("NotIn", "b"), req("NotIn", "a", "b")),
        (req("Exists"), req("In", "a"), req("In", "a")),
        (req("In", "a"), req("DoesNotExist"), req("DoesNotExist")),
        (req("Gt", "1"), req("Lt", "5"), Requirement(KEY, True, gte=2, lte=4)),
        (req("Gt", "5"), req("Lt", "3"), req("DoesNotExist")),
        (req("In", "1", "5", "9"), req("Gt", "3"), req("In", "5", "9")),
    ],
)
def test_intersection(left: Requirement, right: Requirement, expected: Requirement) -> None:
    assert left.intersection(right) == expected
    assert right.intersection(left) == expected


def test_intersection_keeps_the_larger_min_values() -> None:
    merged = req("In", "a", "b", min_values=1).intersection(req("In", "a", "b", min_values=2))
    assert merged.min_values == 2


@pytest.mark.parametrize(
    ("left", "right", "overlap"),
    [
        (req("In", "a"), req("In", "a", "b"), True),
        (req("In", "a"), req("In", "b"), False),
        (req("NotIn", "a"), req("In", "a"), False),
        (req("NotIn", "a"), req("In", "a", "b"), True),
        (req("NotIn", "a"), req("NotIn", "b"), True),
        (req("Exists"), req("DoesNotExist"), False),
        (req("Gt", "4"), req("In", "5"), True),
        (req("Gt", "4"), req("In", "4"), False),
        (req("Gt", "4"), req("Lt", "5"), False),
        (req("Gte", "4"), req("Lte", "4"), True),
    ],
)
def test_has_intersection(left: Requirement, right: Requirement, overlap: bool) -> None:
    assert left.has_intersection(right) is overlap
    assert right.has_intersection(left) is overlap


def test_several_requirements_on_one_key_are_anded() -> None:
    combined = reqs(req("In", "a", "b"), req("NotIn", "a"))
    assert combined.get(KEY) == req("In", "b")


def test_an_undefined_key_reads_as_exists() -> None:
    assert Requirements().get(KEY) == req("Exists")


class TestCompatible:
    def test_a_key_the_node_does_not_define_fails_when_the_pod_needs_a_value(self) -> None:
        assert Requirements().compatible(reqs(req("In", "a"))) == UndefinedLabel(KEY)
        assert Requirements().compatible(reqs(req("Exists"))) == UndefinedLabel(KEY)

    @pytest.mark.parametrize("operator", ["NotIn", "DoesNotExist"])
    def test_negative_requirements_are_satisfied_by_a_missing_label(self, operator: str) -> None:
        values = ("a",) if operator == "NotIn" else ()
        assert Requirements().compatible(reqs(req(operator, *values))) is None

    def test_well_known_keys_may_be_undefined(self) -> None:
        assert Requirements().compatible(reqs(req("In", "a")), frozenset({KEY})) is None

    def test_conflicting_values_are_reported_with_both_sides(self) -> None:
        node, pod = reqs(req("In", "a")), reqs(req("In", "b"))
        assert node.compatible(pod) == RequirementConflict(KEY, req("In", "b"), req("In", "a"))

    def test_two_negative_requirements_never_conflict(self) -> None:
        assert reqs(req("DoesNotExist")).compatible(reqs(req("DoesNotExist"))) is None
        assert reqs(req("NotIn", "a")).compatible(reqs(req("DoesNotExist"))) is None

    def test_exists_against_does_not_exist_conflicts(self) -> None:
        assert reqs(req("DoesNotExist")).compatible(reqs(req("Exists"))) is not None

    def test_the_first_conflict_is_the_smallest_key(self) -> None:
        node = reqs(req("In", "a", key="b/key"), req("In", "a", key="a/key"))
        pod = reqs(req("In", "x", key="b/key"), req("In", "x", key="a/key"))
        problem = node.compatible(pod)
        assert isinstance(problem, RequirementConflict)
        assert problem.key == "a/key"


def test_requirements_are_hashable_values() -> None:
    assert reqs(req("In", "a")) == reqs(req("In", "a"))
    assert hash(reqs(req("In", "a"))) == hash(reqs(req("In", "a")))
    assert reqs(req("In", "a")) != reqs(req("In", "b"))


def test_labels_are_the_single_valued_in_requirements() -> None:
    combined = reqs(
        req("In", "a"), req("In", "x", "y", key="k/two"), req("NotIn", "z", key="k/three")
    )
    assert combined.labels() == {KEY: "a"}


@pytest.mark.parametrize(
    ("requirement", "value"),
    [
        (req("In", "b", "a"), "a"),
        (req("NotIn", "0", "1"), "2"),
        (req("Gt", "5"), "6"),
        (req("DoesNotExist"), ""),
    ],
)
def test_any_value_is_deterministic(requirement: Requirement, value: str) -> None:
    assert requirement.any_value() == value


def test_render_names_operator_values_and_bounds() -> None:
    assert req("In", "b", "a").render() == f"{KEY} In [a, b]"
    assert req("Exists").render() == f"{KEY} Exists"
    assert req("Gt", "3").render() == f"{KEY} Exists >=4"


def test_node_selector_form_round_trips_bounds() -> None:
    bounded = req("Gte", "2").intersection(req("Lte", "8"))
    assert bounded.to_node_selector() == [
        {"key": KEY, "operator": "Gte", "values": ["2"]},
        {"key": KEY, "operator": "Lte", "values": ["8"]},
    ]
