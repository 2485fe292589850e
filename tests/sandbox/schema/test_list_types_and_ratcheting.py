"""``x-kubernetes-list-type`` uniqueness, and ratcheting of unchanged values on update."""

from __future__ import annotations

from typing import Any

from .factories import errors, obj, widget_schema

CONDITIONS: dict[str, Any] = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
    "items": {**obj(type={"type": "string"}, status={"type": "string"}), "required": ["type"]},
}
PORTS = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["port", "protocol"],
    "items": {
        **obj(port={"type": "integer"}, protocol={"type": "string", "default": "TCP"}),
        "required": ["port"],
    },
}
SET = {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}


def test_set_duplicates_are_reported_once_per_value():
    schema = widget_schema(obj(values=SET))
    assert errors(schema, {"values": ["a", "b"]}) == []
    assert errors(schema, {"values": ["a", "b", "a", "a", "b"]}) == [
        'spec.values[2]: Duplicate value: "a"',
        'spec.values[4]: Duplicate value: "b"',
    ]


def test_map_list_duplicates_show_the_key_as_go_prints_a_map():
    schema = widget_schema(obj(conditions=CONDITIONS))
    ready = {"type": "Ready", "status": "True"}
    assert errors(schema, {"conditions": [ready, {"type": "Synced"}]}) == []
    assert errors(schema, {"conditions": [ready, {"type": "Ready", "status": "False"}]}) == [
        'spec.conditions[1]: Duplicate value: map[string]interface {}{"type":"Ready"}'
    ]


def test_map_list_with_several_keys_compares_all_of_them():
    schema = widget_schema(obj(ports=PORTS))
    spec = {"ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}]}
    assert errors(schema, spec) == []
    spec["ports"].append({"port": 80, "protocol": "UDP"})
    assert errors(schema, spec) == [
        'spec.ports[2]: Duplicate value: map[string]interface {}{"port":80, "protocol":"UDP"}'
    ]


def test_duplicates_are_checked_on_update_only_if_the_old_object_had_none():
    schema = widget_schema(obj(values=SET))
    assert errors(schema, {"values": ["a", "a"]}, old_spec={"values": ["a", "a"]}) == []
    assert errors(schema, {"values": ["a", "a"]}, old_spec={"values": ["a"]}) == [
        'spec.values[1]: Duplicate value: "a"'
    ]


def test_unchanged_invalid_value_is_ratcheted_on_update():
    schema = widget_schema(obj(weight={"type": "integer", "maximum": 100}, name={"type": "string"}))
    old = {"weight": 500, "name": "a"}
    assert errors(schema, {"weight": 500, "name": "b"}, old_spec=old) == []
    assert errors(schema, {"weight": 501, "name": "a"}, old_spec=old) == [
        "spec.weight: Invalid value: 501: spec.weight in body should be less than or equal to 100"
    ]
    assert errors(schema, {"weight": 500}) != []


def test_ratcheting_correlates_map_list_items_by_key_not_position():
    items = {
        **CONDITIONS["items"],
        "properties": {
            **CONDITIONS["items"]["properties"],
            "reason": {"type": "string", "maxLength": 3},
        },
    }
    schema = widget_schema(obj(conditions={**CONDITIONS, "items": items}))
    old = {"conditions": [{"type": "A", "reason": "toolong"}, {"type": "B"}]}
    reordered = {"conditions": [{"type": "B"}, {"type": "A", "reason": "toolong"}]}
    assert errors(schema, reordered, old_spec=old) == []


def test_ratcheting_does_not_reach_into_atomic_list_items():
    item = obj(key={"type": "string", "maxLength": 3}, other={"type": "string"})
    schema = widget_schema(
        obj(requirements={"type": "array", "x-kubernetes-list-type": "atomic", "items": item})
    )
    old = {"requirements": [{"key": "toolong"}, {"key": "a"}]}
    assert errors(schema, old, old_spec=old) == []
    changed = {"requirements": [{"key": "toolong"}, {"key": "b"}]}
    assert errors(schema, changed, old_spec=old) == [
        "spec.requirements[0].key: Too long: may not be more than 3 bytes"
    ]


def test_lists_without_a_list_type_ratchet_by_index():
    item = obj(key={"type": "string", "maxLength": 3}, other={"type": "string"})
    schema = widget_schema(obj(requirements={"type": "array", "items": item}))
    old = {"requirements": [{"key": "toolong"}, {"key": "a"}]}
    changed = {"requirements": [{"key": "toolong"}, {"key": "b"}]}
    assert errors(schema, changed, old_spec=old) == []


def test_new_fields_are_validated_even_when_siblings_ratchet():
    schema = widget_schema(
        obj(a={"type": "integer", "maximum": 1}, b={"type": "integer", "maximum": 1})
    )
    assert errors(schema, {"a": 5, "b": 5}, old_spec={"a": 5}) == [
        "spec.b: Invalid value: 5: spec.b in body should be less than or equal to 1"
    ]
