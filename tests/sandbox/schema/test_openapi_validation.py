# ruff: noqa: E501
# (expected messages and rule texts are kept whole, to compare with kube-apiserver's)
"""OpenAPI v3 value validation, with kube-apiserver's error texts."""

from __future__ import annotations

import pytest

from .factories import errors, obj, widget_schema

pytestmark = pytest.mark.filterwarnings("error")


@pytest.mark.parametrize(
    ("value", "kind"),
    [("foo", "string"), (42, "integer"), (True, "boolean"), (1.2, "number"), ([], "array")],
)
def test_wrong_type_reports_the_json_type_found(value, kind):
    schema = widget_schema(obj(field={"type": "object"}))
    assert errors(schema, {"field": value}) == [
        f'spec.field: Invalid value: "{kind}": spec.field in body must be of type object: "{kind}"'
    ]


def test_null_for_a_non_nullable_field_is_a_type_error():
    schema = widget_schema(obj(field={"type": "object"}))
    assert errors(schema, {"field": None}) == [
        'spec.field: Invalid value: "null": spec.field in body must be of type object: "null"'
    ]


def test_nullable_field_accepts_null():
    schema = widget_schema(obj(field={"type": "object", "nullable": True}))
    assert errors(schema, {"field": None}) == []


def test_string_for_an_integer_field_matches_the_acceptance_message():
    schema = widget_schema(obj(weight={"type": "integer", "format": "int32", "maximum": 100}))
    assert errors(schema, {"weight": "string"}) == [
        'spec.weight: Invalid value: "string": spec.weight in body must be of type integer: "string"'
    ]


def test_integral_float_is_an_integer_but_a_fraction_is_not():
    schema = widget_schema(obj(count={"type": "integer"}))
    assert errors(schema, {"count": 3.0}) == []
    assert errors(schema, {"count": 3.5}) == [
        'spec.count: Invalid value: "number": spec.count in body must be of type integer: "number"'
    ]


def test_integer_is_accepted_for_a_number_field():
    schema = widget_schema(obj(ratio={"type": "number"}))
    assert errors(schema, {"ratio": 2}) == []


def test_format_mismatch_of_a_non_string_names_the_format():
    schema = widget_schema(obj(weight={"type": "integer", "format": "int32"}))
    assert errors(schema, {"weight": True}) == [
        'spec.weight: Invalid value: "": spec.weight in body must be of type int32: ""'
    ]


def test_int32_format_does_not_bound_the_value():
    schema = widget_schema(obj(weight={"type": "integer", "format": "int32"}))
    assert errors(schema, {"weight": 2**40}) == []


@pytest.mark.parametrize(
    ("value", "kind"),
    [(True, "boolean"), (1.2, "number"), ({}, "object"), ([], "array"), (None, "null")],
)
def test_int_or_string_accepts_only_integers_and_strings(value, kind):
    schema = widget_schema(obj(port={"x-kubernetes-int-or-string": True}))
    assert errors(schema, {"port": 8080}) == []
    assert errors(schema, {"port": "http"}) == []
    assert errors(schema, {"port": value}) == [
        f'spec.port: Invalid value: "{kind}": spec.port in body must be of type integer,string: "{kind}"'
    ]


def test_int_or_string_with_any_of_reports_the_composite_and_the_first_branch():
    schema = widget_schema(
        obj(
            field={
                "x-kubernetes-int-or-string": True,
                "anyOf": [{"type": "integer"}, {"type": "string"}],
            }
        )
    )
    assert errors(schema, {"field": True})[:3] == [
        'spec.field: Invalid value: "boolean": spec.field in body must be of type integer,string: "boolean"',
        '<nil>: Invalid value: "": "spec.field" must validate at least one schema (anyOf)',
        'spec.field: Invalid value: "boolean": spec.field in body must be of type integer: "boolean"',
    ]


def test_enum_lists_supported_values_quoted_whatever_their_type():
    schema = widget_schema(
        obj(
            mode={"type": "string", "enum": ["A", "B"]},
            level={"type": "integer", "enum": [1, 2]},
        )
    )
    assert errors(schema, {"mode": "X"}) == [
        'spec.mode: Unsupported value: "X": supported values: "A", "B"'
    ]
    assert errors(schema, {"level": 3}) == [
        'spec.level: Unsupported value: 3: supported values: "1", "2"'
    ]
    assert errors(schema, {"level": 2.0}) == []


def test_enum_and_type_errors_are_both_reported():
    schema = widget_schema(obj(mode={"type": "string", "enum": ["a", "b"]}))
    assert errors(schema, {"mode": True}) == [
        'spec.mode: Invalid value: "boolean": spec.mode in body must be of type string: "boolean"',
        'spec.mode: Unsupported value: true: supported values: "a", "b"',
    ]


def test_pattern_is_unanchored_go_regex_search():
    schema = widget_schema(obj(name={"type": "string", "pattern": "^[a-z]+$"}))
    assert errors(schema, {"name": "abc"}) == []
    assert errors(schema, {"name": "abc\n"}) == [
        "spec.name: Invalid value: \"abc\\n\": spec.name in body should match '^[a-z]+$'"
    ]
    assert errors(schema, {"name": "Abc"}) == [
        "spec.name: Invalid value: \"Abc\": spec.name in body should match '^[a-z]+$'"
    ]


def test_max_length_counts_characters_and_hides_the_value():
    schema = widget_schema(
        obj(label={"type": "string", "maxLength": 3}, one={"type": "string", "maxLength": 1})
    )
    assert errors(schema, {"label": "ééé"}) == []
    assert errors(schema, {"label": "abcd"}) == [
        "spec.label: Too long: may not be more than 3 bytes"
    ]
    assert errors(schema, {"one": "ab"}) == ["spec.one: Too long: may not be more than 1 byte"]


def test_string_checks_stop_at_the_first_failure():
    schema = widget_schema(
        obj(name={"type": "string", "maxLength": 2, "minLength": 1, "pattern": "^[a-z]*$"})
    )
    assert errors(schema, {"name": "ABC"}) == ["spec.name: Too long: may not be more than 2 bytes"]
    assert errors(schema, {"name": ""}) == [
        'spec.name: Invalid value: "": spec.name in body should be at least 1 chars long'
    ]


def test_maximum_matches_the_acceptance_message():
    schema = widget_schema(obj(weight={"type": "integer", "minimum": 1, "maximum": 100}))
    assert errors(schema, {"weight": 500}) == [
        "spec.weight: Invalid value: 500: spec.weight in body should be less than or equal to 100"
    ]
    assert errors(schema, {"weight": 0}) == [
        "spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1"
    ]


def test_exclusive_bounds_and_float_bounds_print_as_go_does():
    schema = widget_schema(
        obj(
            ratio={"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1e6,
                   "exclusiveMaximum": True},
        )
    )  # fmt: skip
    assert errors(schema, {"ratio": 0.0}) == [
        "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0"
    ]
    assert errors(schema, {"ratio": 2e6}) == [
        "spec.ratio: Invalid value: 2e+06: spec.ratio in body should be less than 1e+06"
    ]


def test_multiple_of():
    schema = widget_schema(
        obj(step={"type": "integer", "multipleOf": 5}, f={"type": "number", "multipleOf": 0.5})
    )
    assert errors(schema, {"step": 10, "f": 1.5}) == []
    assert errors(schema, {"step": 7}) == [
        "spec.step: Invalid value: 7: spec.step in body should be a multiple of 5"
    ]
    assert errors(schema, {"f": 1.2}) == [
        "spec.f: Invalid value: 1.2: spec.f in body should be a multiple of 0.5"
    ]


def test_items_bounds():
    schema = widget_schema(
        obj(tags={"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 2})
    )
    assert errors(schema, {"tags": []}) == [
        "spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"
    ]
    assert errors(schema, {"tags": ["a", "b", "c"]}) == [
        "spec.tags: Too many: 3: must have at most 2 items"
    ]


def test_max_items_of_one_is_singular():
    schema = widget_schema(obj(tags={"type": "array", "items": {"type": "string"}, "maxItems": 1}))
    assert errors(schema, {"tags": ["a", "b"]}) == [
        "spec.tags: Too many: 2: must have at most 1 item"
    ]


def test_item_errors_carry_the_index():
    schema = widget_schema(
        obj(requirements={"type": "array", "items": obj(key={"type": "string", "maxLength": 3})})
    )
    assert errors(schema, {"requirements": [{"key": "a"}, {"key": "abcd"}]}) == [
        "spec.requirements[1].key: Too long: may not be more than 3 bytes"
    ]


def test_properties_bounds_stop_the_object_validation():
    schema = widget_schema(
        obj(
            labels={
                "type": "object",
                "maxProperties": 2,
                "minProperties": 1,
                "additionalProperties": {"type": "string"},
            }
        )
    )
    assert errors(schema, {"labels": {}}) == [
        "spec.labels: Invalid value: 0: spec.labels in body should have at least 1 properties"
    ]
    assert errors(schema, {"labels": {"a": "x", "b": "y", "c": 1}}) == [
        "spec.labels: Too many: 3: must have at most 2 items"
    ]


def test_map_values_are_validated_with_a_dotted_path():
    schema = widget_schema(
        obj(limits={"type": "object", "additionalProperties": {"type": "string", "maxLength": 2}})
    )
    assert errors(schema, {"limits": {"cpu": "100"}}) == [
        "spec.limits.cpu: Too long: may not be more than 2 bytes"
    ]


def test_required_fields():
    schema = widget_schema(
        {
            "type": "object",
            "required": ["template"],
            "properties": {
                "template": {"type": "object", "required": ["a", "b"], "properties": {}}
            },
        }
    )
    assert errors(schema, {}) == ["spec.template: Required value"]
    assert errors(schema, {"template": {}}) == [
        "spec.template.a: Required value",
        "spec.template.b: Required value",
    ]


def test_additional_properties_false_forbids_every_key():
    schema = widget_schema({"type": "object", "additionalProperties": False})
    assert errors(schema, {}) == []
    assert errors(schema, {"b": 1}) == [
        'spec: Invalid value: "b": spec.b in body is a forbidden property'
    ]


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        ("date-time", "2024-05-01T10:00:00Z", "2024-05-01 10:00"),
        ("date-time", "2024-05-01T10:00:00.123+02:00", "2024-13-01T10:00:00Z"),
        ("date", "2024-02-29", "2023-02-29"),
        ("duration", "1h30m", "soon"),
        ("duration", "3 days", "3 parsecs"),
        ("byte", "aGVsbG8=", "not base64!"),
        ("uuid", "123e4567-e89b-12d3-a456-426614174000", "123"),
        ("ipv4", "10.0.0.1", "10.0.0.256"),
        ("ipv6", "fe80::1", "10.0.0.1"),
        ("cidr", "10.0.0.0/8", "10.0.0.0/33"),
        ("mac", "00:1a:2b:3c:4d:5e", "00:1a:2b"),
        ("hostname", "node-1.example.com", "-bad"),
        ("quantity", "1.5Gi", "1.5GB"),
        ("uri", "https://example.com/x", "example.com"),
    ],
)
def test_string_formats(fmt, good, bad):
    schema = widget_schema(obj(value={"type": "string", "format": fmt}))
    assert errors(schema, {"value": good}) == []
    assert errors(schema, {"value": bad}) == [
        f'spec.value: Invalid value: "{bad}": spec.value in body must be of type {fmt}: "{bad}"'
    ]


def test_unknown_formats_are_ignored():
    schema = widget_schema(obj(value={"type": "string", "format": "zipcode"}))
    assert errors(schema, {"value": "anything"}) == []


def test_all_of_reports_branch_errors_and_the_composite():
    schema = widget_schema(
        obj(size={"type": "integer", "allOf": [{"minimum": 10}, {"maximum": 5}]})
    )
    assert errors(schema, {"size": 7}) == [
        "spec.size: Invalid value: 7: spec.size in body should be greater than or equal to 10",
        "spec.size: Invalid value: 7: spec.size in body should be less than or equal to 5",
        '<nil>: Invalid value: "": "spec.size" must validate all the schemas (allOf). None validated',
    ]


def test_one_of_requires_exactly_one_branch():
    schema = widget_schema(
        obj(size={"type": "integer", "oneOf": [{"minimum": 10}, {"maximum": 20}]})
    )
    assert errors(schema, {"size": 5}) == []
    assert errors(schema, {"size": 15}) == [
        '<nil>: Invalid value: "": "spec.size" must validate one and only one schema (oneOf). '
        "Found 2 valid alternatives"
    ]


def test_not_rejects_values_matching_the_schema():
    schema = widget_schema(obj(name={"type": "string", "not": {"pattern": "^admin$"}}))
    assert errors(schema, {"name": "alice"}) == []
    assert errors(schema, {"name": "admin"}) == [
        '<nil>: Invalid value: "": "spec.name" must not validate the schema (not)'
    ]


def test_embedded_resource_requires_api_version_and_kind():
    schema = widget_schema(
        obj(
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            }
        )
    )
    assert errors(schema, {"template": {"apiVersion": "v1", "kind": "Pod"}}) == []
    assert errors(schema, {"template": {"kind": "pod!"}}) == [
        "spec.template.apiVersion: Required value: must not be empty",
        'spec.template.kind: Invalid value: "pod!": may have mixed case, but should otherwise '
        "match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
        "start with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
    ]
