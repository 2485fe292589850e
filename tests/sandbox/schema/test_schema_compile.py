# ruff: noqa: E501
# (expected messages and rule texts are kept whole, to compare with kube-apiserver's)
"""Compiling a CRD schema: what a real cluster would refuse raises `InvalidSchema`."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.sandbox.apiserver.schema import InvalidSchema, compile_schema

from .factories import obj, resource_schema


def rejection(spec: dict[str, Any], **more: dict[str, Any]) -> list[str]:
    with pytest.raises(InvalidSchema) as caught:
        compile_schema(resource_schema(spec, **more))
    return [e.render() for e in caught.value.errors]


def rule(text: str, **fields: object) -> dict[str, Any]:
    return {"rule": text, **fields}


def test_missing_type_on_the_spine_is_required():
    assert rejection(obj(count={})) == [
        "openAPIV3Schema.properties[spec].properties[count].type: Required value: must not be "
        "empty for specified object fields"
    ]


def test_unique_items_is_forbidden():
    assert rejection(
        obj(tags={"type": "array", "items": {"type": "string"}, "uniqueItems": True})
    ) == [
        "openAPIV3Schema.properties[spec].properties[tags].uniqueItems: Forbidden: uniqueItems "
        "cannot be set to true since the runtime complexity becomes quadratic"
    ]


def test_properties_and_additional_properties_are_exclusive():
    spec = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": {"type": "string"},
    }
    assert rejection(spec) == [
        "openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties "
        "and properties are mutual exclusive"
    ]


def test_invalid_pattern_names_go_regexp_error():
    problems = rejection(obj(name={"type": "string", "pattern": "(?=lookahead)"}))
    assert len(problems) == 1
    assert problems[0].startswith(
        'openAPIV3Schema.properties[spec].properties[name].pattern: Invalid value: "(?=lookahead)": '
        "must be a valid regular expression, but isn't: error parsing regexp: invalid or "
        "unsupported Perl syntax"
    )


def test_map_list_needs_keys_that_are_required_scalar_properties():
    conditions = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": obj(type={"type": "string"}),
    }
    assert rejection(obj(conditions=conditions)) == [
        "openAPIV3Schema.properties[spec].properties[conditions].items.properties[type]: "
        "Required value: all map keys must be required or have a default value"
    ]
    del conditions["x-kubernetes-list-map-keys"]
    assert (
        "must not be empty if x-kubernetes-list-type is map"
        in rejection(obj(conditions=conditions))[0]
    )


def test_set_items_must_be_scalar_or_atomic():
    tags = {"type": "array", "x-kubernetes-list-type": "set", "items": obj(a={"type": "string"})}
    assert rejection(obj(tags=tags)) == [
        "openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-map-type: Invalid "
        'value: "": must be atomic as item of a list with x-kubernetes-list-type=set'
    ]


def test_default_must_be_valid_for_its_schema():
    assert rejection(obj(weight={"type": "integer", "maximum": 10, "default": 50})) == [
        "openAPIV3Schema.properties[spec].properties[weight].default: Invalid value: 50: default "
        "in body should be less than or equal to 10"
    ]


def test_default_must_not_carry_unknown_fields():
    problems = rejection(
        obj(options={**obj(a={"type": "string"}), "default": {"a": "x", "b": "y"}})
    )
    assert problems == [
        'openAPIV3Schema.properties[spec].properties[options].default: Invalid value: "object": '
        "must not have unknown fields"
    ]


def test_rule_on_an_undefined_field_fails_compilation():
    spec = {
        **obj(replicas={"type": "integer"}),
        "x-kubernetes-validations": [rule("self.replica > 0")],
    }
    (problem,) = rejection(spec)
    assert problem.startswith(
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        "\"self.replica > 0\": compilation failed: ERROR: <input>:1:5: undefined field 'replica'"
    )


def test_rule_with_mismatched_operand_types_fails_compilation():
    spec = {
        **obj(replicas={"type": "integer"}),
        "x-kubernetes-validations": [rule("self.replicas == 'a'")],
    }
    (problem,) = rejection(spec)
    assert "found no matching overload for '_==_' applied to '(int, string)'" in problem


def test_rule_calling_a_string_function_on_an_int_fails_compilation():
    spec = {
        **obj(n={"type": "integer"}),
        "x-kubernetes-validations": [rule("self.n.startsWith('a')")],
    }
    (problem,) = rejection(spec)
    assert "found no matching overload for 'startsWith' applied to 'int.(string)'" in problem


def test_rule_with_syntax_error_fails_compilation():
    (problem,) = rejection({"type": "string", "x-kubernetes-validations": [rule("self ==")]})
    assert "compilation failed: ERROR: <input>:1:" in problem
    assert "Syntax error" in problem


def test_rule_must_evaluate_to_a_bool():
    (problem,) = rejection({"type": "string", "x-kubernetes-validations": [rule("self + 'x'")]})
    assert problem.endswith("cel expression must evaluate to a bool")


def test_undeclared_identifier_and_function():
    (problem,) = rejection({"type": "string", "x-kubernetes-validations": [rule("other == self")]})
    assert "undeclared reference to 'other'" in problem
    (problem,) = rejection(
        {"type": "string", "x-kubernetes-validations": [rule("frobnicate(self)")]}
    )
    assert "undeclared reference to 'frobnicate'" in problem


def test_invalid_constant_regex_fails_compilation():
    (problem,) = rejection(
        {"type": "string", "x-kubernetes-validations": [rule("self.matches('(')")]}
    )
    assert "invalid regex" in problem


def test_old_self_is_refused_below_an_atomic_list():
    items = {"type": "string", "x-kubernetes-validations": [rule("self == oldSelf")]}
    (problem,) = rejection(obj(names={"type": "array", "items": items}))
    assert problem == (
        "openAPIV3Schema.properties[spec].properties[names].items.x-kubernetes-validations[0].rule: "
        'Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion '
        "of the schema"
    )


def test_old_self_is_allowed_below_a_map_list():
    items = {
        **obj(
            name={"type": "string"},
            size={"type": "integer", "x-kubernetes-validations": [rule("self >= oldSelf")]},
        ),
        "required": ["name"],
    }
    spec = obj(
        disks={
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": items,
        }
    )
    compile_schema(resource_schema(spec))


def test_rule_metadata_is_checked():
    base = {"type": "string"}
    (problem,) = rejection({**base, "x-kubernetes-validations": [rule("self != ''", reason="Bad")]})
    assert problem == (
        "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].reason: Unsupported value: "
        '"Bad": supported values: "FieldValueDuplicate", "FieldValueForbidden", '
        '"FieldValueInvalid", "FieldValueRequired"'
    )
    (problem,) = rejection(
        {**base, "x-kubernetes-validations": [rule("self != ''", message="a\nb")]}
    )
    assert problem.endswith("message must not contain line breaks")
    (problem,) = rejection(
        {**base, "x-kubernetes-validations": [rule("self != ''", optionalOldSelf=True)]}
    )
    assert problem.endswith(
        "optionalOldSelf: Forbidden: may not be set if oldSelf is not used in rule"
    )
    (problem,) = rejection(
        {**base, "x-kubernetes-validations": [rule("self != ''", messageExpression="1")]}
    )
    assert problem.endswith("must evaluate to a string")


def test_field_path_must_name_a_declared_field():
    spec = {**obj(a={"type": "string"}), "x-kubernetes-validations": [rule("true", fieldPath=".b")]}
    (problem,) = rejection(spec)
    assert problem == (
        'openAPIV3Schema.properties[spec].x-kubernetes-validations[0].fieldPath: Invalid value: ".b": '
        "fieldPath must be a valid path: does not refer to a valid field"
    )


def test_errors_at_prefixes_paths_for_the_crd():
    with pytest.raises(InvalidSchema) as caught:
        compile_schema(resource_schema(obj(count={})))
    (located,) = caught.value.errors_at("spec.versions[0].schema.")
    assert (
        located.path
        == "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[count].type"
    )


def test_invalid_schema_is_a_karpy_error_listing_every_problem():
    from karpy.errors import KarpyError

    with pytest.raises(KarpyError) as caught:
        compile_schema(resource_schema(obj(a={}, b={"type": "integer", "minimum": "x"}, c={})))
    assert isinstance(caught.value, InvalidSchema)
    assert len(caught.value.errors) >= 2
    assert "properties[a].type" in str(caught.value)


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "object", "properties": ["a"]},
        {"type": "object", "required": "a", "properties": {}},
        {"type": "string", "enum": "a"},
        {"type": "string", "x-kubernetes-validations": ["self != ''"]},
        {"type": "object", "properties": {"a": "string"}},
        {"type": "string", "anyOf": {"type": "string"}},
        {"type": "integer", "maximum": "ten"},
    ],
)
def test_malformed_schemas_are_refused_not_crashed_on(spec):
    with pytest.raises(InvalidSchema):
        compile_schema(resource_schema(spec))
