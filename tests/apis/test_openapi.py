"""The schema engine on its own: each OpenAPI keyword reports as kube-apiserver does,
CEL twins run outermost first and only when the structure is sound, defaults fill in
absent fields recursively."""

from __future__ import annotations

import pytest

from karpy.apis.fielderrors import ErrorType
from karpy.apis.openapi import (
    Rule,
    array,
    integer,
    obj,
    quantity_map,
    string,
    string_map,
)
from karpy.apis.openapi_engine import apply_defaults, structural_errors, validate
from tests.apis.builders import NOT_CHECKED, rendered

SCHEMA = obj(
    "test object",
    {
        "name": string(pattern="^[a-z]+$", max_length=5, min_length=2),
        "mode": string(enum=("a", "b")),
        "count": integer(minimum=1, maximum=10),
        "items": array(string(), min_items=1, max_items=2, list_type="set"),
        "tags": string_map(max_properties=1),
        "limits": quantity_map(),
        "nested": obj(
            "nested",
            {"inner": string(), "withDefault": string(default="dflt")},
            required=("inner",),
            rules=(Rule("self.inner != 'bad'", "inner is bad", lambda v: v["inner"] != "bad"),),
        ),
    },
    required=("name",),
    rules=(
        Rule(
            "!has(self.mode) || self.mode == 'a' || has(self.count)",
            "mode b needs a count",
            lambda v: v.get("mode") != "b" or "count" in v,
        ),
    ),
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"name": "abc"}, []),
        ({}, ["name: Required value", NOT_CHECKED]),
        (
            {"name": "ABC"},
            ["name: Invalid value: \"ABC\": name in body should match '^[a-z]+$'"],
        ),
        ({"name": "abcdefg"}, ["name: Too long: may not be more than 5 bytes", NOT_CHECKED]),
        (
            {"name": "a"},
            ['name: Invalid value: "a": name in body should be at least 2 chars long'],
        ),
        (
            {"name": "ab", "count": 11},
            ["count: Invalid value: 11: count in body should be less than or equal to 10"],
        ),
        (
            {"name": "ab", "count": 0},
            ["count: Invalid value: 0: count in body should be greater than or equal to 1"],
        ),
        (
            {"name": "ab", "items": []},
            ["items: Invalid value: 0: items in body should have at least 1 items"],
        ),
        (
            {"name": "ab", "items": ["x", "y", "z"]},
            ["items: Too many: 3: must have at most 2 items", NOT_CHECKED],
        ),
        ({"name": "ab", "items": ["x", "x"]}, ['items[1]: Duplicate value: "x"']),
        (
            {"name": "ab", "tags": {"a": "1", "b": "2"}},
            ["tags: Too many: 2: must have at most 1 items", NOT_CHECKED],
        ),
        (
            {"name": "ab", "limits": {"cpu": "1x"}},
            [
                'limits.cpu: Invalid value: "1x": limits.cpu in body should match '
                "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                "([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'"
            ],
        ),
        ({"name": "ab", "limits": {"cpu": 4}}, []),
        (
            {"name": "ab", "nested": {}},
            ["nested.inner: Required value", NOT_CHECKED],
        ),
        ({"name": "ab", "nested": {"inner": "bad"}}, ["nested: Invalid value: inner is bad"]),
        ({"name": "ab", "mode": "b"}, ["Invalid value: mode b needs a count"]),
    ],
)
def test_each_keyword_is_reported_like_kube_apiserver(value, expected):
    assert rendered(validate(SCHEMA, value)) == expected


def test_a_rule_reading_an_absent_field_fails_to_evaluate_as_cel_does():
    schema = obj(
        "top",
        {"opt": string()},
        rules=(Rule("self.opt != 'x'", "opt is x", lambda v: v["opt"] != "x"),),
    )
    assert rendered(validate(schema, {"opt": "y"}, path="spec")) == []
    assert rendered(validate(schema, {}, path="spec")) == [
        'spec: Invalid value: "object": no such key: opt evaluating rule: opt is x'
    ]


def test_enum_and_type_errors_block_cel_rules_with_a_note():
    errors = validate(SCHEMA, {"name": "ab", "mode": "c", "nested": {"inner": "bad"}})
    assert rendered(errors) == [
        'mode: Unsupported value: "c": supported values: "a", "b"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the '
        "object was invalid; correct the existing errors to complete validation",
    ]


def test_wrong_json_type_is_type_invalid_with_the_actual_type():
    errors = validate(SCHEMA, {"name": "ab", "count": "three"})
    assert errors[0].type is ErrorType.TYPE_INVALID
    assert errors[0].render() == (
        'count: Invalid value: "string": count in body must be of type integer: "string"'
    )


def test_integral_floats_count_as_integers_but_fractions_do_not():
    assert validate(SCHEMA, {"name": "ab", "count": 3.0}) == []
    assert rendered(structural_errors(SCHEMA, {"name": "ab", "count": 2.5})) == [
        'count: Invalid value: "number": count in body must be of type integer: "number"'
    ]


def test_structural_errors_report_types_and_required_fields_only():
    value = {"count": 99, "nested": {"inner": 1}, "name": "UPPER"}
    assert rendered(structural_errors(SCHEMA, value)) == [
        'nested.inner: Invalid value: "integer": nested.inner in body must be of type '
        'string: "integer"'
    ]
    assert rendered(structural_errors(SCHEMA, {})) == ["name: Required value"]


def test_structural_errors_can_be_lenient_about_required_fields_under_a_key():
    schema = obj("top", {"status": obj("s", {"x": string()}, required=("x",))})
    assert structural_errors(schema, {"status": {}}, lenient=frozenset({"status"})) == []
    assert rendered(structural_errors(schema, {"status": {"x": 1}}, lenient=frozenset({"status"})))


def test_validate_skips_top_level_keys_it_is_told_to():
    schema = obj("top", {"status": obj("s", {"x": integer(maximum=1)})})
    assert validate(schema, {"status": {"x": 5}}, skip=frozenset({"status"})) == []
    assert validate(schema, {"status": {"x": 5}}) != []


def test_transition_rules_run_only_with_an_old_object():
    schema = obj(
        "top",
        {
            "spec": obj(
                "s",
                {"a": string()},
                rules=(Rule("self == oldSelf", "immutable", lambda new, old: new == old),),
            )
        },
    )
    assert validate(schema, {"spec": {"a": "x"}}) == []
    assert validate(schema, {"spec": {"a": "x"}}, old={"spec": {"a": "x"}}) == []
    assert rendered(validate(schema, {"spec": {"a": "y"}}, old={"spec": {"a": "x"}})) == [
        "spec: Invalid value: immutable"
    ]


def test_rules_on_scalars_show_the_value():
    schema = obj("top", {"k": string(rules=(Rule("self != 'x'", "no x", lambda v: v != "x"),))})
    assert rendered(validate(schema, {"k": "x"})) == ['k: Invalid value: "x": no x']


def test_defaults_fill_absent_fields_and_then_default_inside_them():
    schema = obj(
        "top",
        {
            "outer": obj(
                "outer",
                {"a": string(default="A"), "b": string()},
                default={"b": "B"},
            ),
            "list": array(obj("item", {"x": string(default="X")})),
        },
    )
    assert apply_defaults(schema, {}) == {"outer": {"a": "A", "b": "B"}}
    assert apply_defaults(schema, {"outer": {}, "list": [{}, {"x": "y"}]}) == {
        "outer": {"a": "A"},
        "list": [{"x": "X"}, {"x": "y"}],
    }


def test_defaults_replace_nulls_and_leave_the_input_alone():
    schema = obj("top", {"a": string(default="A"), "b": string()})
    given = {"a": None, "b": None}
    assert apply_defaults(schema, given) == {"a": "A"}
    assert given == {"a": None, "b": None}


def test_openapi_rendering_of_a_node():
    node = obj(
        "desc",
        {"q": quantity_map("quantities")},
        required=("q",),
        rules=(Rule("true", "never", lambda v: True),),
    )
    assert node.to_openapi() == {
        "description": "desc",
        "type": "object",
        "properties": {
            "q": {
                "description": "quantities",
                "type": "object",
                "additionalProperties": {
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True,
                    "pattern": node.properties["q"].additional_properties.pattern,  # type: ignore[union-attr]
                },
            }
        },
        "required": ["q"],
        "x-kubernetes-validations": [{"message": "never", "rule": "true"}],
    }
