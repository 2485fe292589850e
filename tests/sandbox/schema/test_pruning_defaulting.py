"""Pruning unknown fields and applying defaults, as a custom resource is decoded."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from .factories import admitted, errors, obj, widget, widget_schema


def test_undeclared_fields_are_pruned_but_type_meta_and_metadata_stay():
    schema = widget_schema(obj(a={"type": "string"}))
    found = admitted(schema, {"a": "x", "b": "y"})
    found_extra = widget({"a": "x"}, status={"phase": "Ready"})
    schema.prune(found_extra)
    assert found == widget({"a": "x"})
    assert found_extra == widget({"a": "x"})
    assert found["metadata"] == {"name": "w"}


def test_nested_unknown_fields_are_pruned_inside_lists_and_maps():
    item = obj(key={"type": "string"})
    schema = widget_schema(
        obj(
            requirements={"type": "array", "items": item},
            tags={"type": "object", "additionalProperties": item},
        )
    )
    found = admitted(
        schema,
        {
            "requirements": [{"key": "a", "operator": "In"}],
            "tags": {"x": {"key": "k", "extra": 1}},
        },
    )
    assert found["spec"] == {"requirements": [{"key": "a"}], "tags": {"x": {"key": "k"}}}


def test_preserve_unknown_fields_keeps_unknown_keys_but_prunes_declared_ones():
    schema = widget_schema(
        {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"known": obj(a={"type": "string"})},
        }
    )
    found = admitted(schema, {"anything": {"deep": 1}, "known": {"a": "x", "b": "y"}})
    assert found["spec"] == {"anything": {"deep": 1}, "known": {"a": "x"}}


def test_embedded_resource_keeps_type_meta_and_object_meta_fields_only():
    schema = widget_schema(
        obj(
            template={
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "properties": {"spec": obj(image={"type": "string"})},
            }
        )
    )
    template = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1},
        "spec": {"image": "nginx", "extra": True},
        "status": {},
    }
    found = admitted(schema, {"template": template})
    assert found["spec"]["template"] == {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"image": "nginx"},
    }


def test_int_or_string_values_are_kept():
    schema = widget_schema(obj(port={"x-kubernetes-int-or-string": True}))
    assert admitted(schema, {"port": 80})["spec"] == {"port": 80}


def test_non_nullable_nulls_without_default_are_dropped_nullable_kept_defaulted_replaced():
    schema = widget_schema(
        obj(
            foo={"type": "string", "default": "default"},
            bar={"type": "string", "nullable": True},
            baz={"type": "string"},
        )
    )
    found = admitted(schema, {"foo": None, "bar": None, "baz": None})
    assert found["spec"] == {"foo": "default", "bar": None}


def test_defaults_apply_recursively_inside_defaulted_objects():
    schema = widget_schema(
        obj(
            disruption={
                **obj(
                    consolidateAfter={"type": "string"},
                    consolidationPolicy={"type": "string", "default": "WhenEmptyOrUnderutilized"},
                    budgets={
                        "type": "array",
                        "default": [{"nodes": "10%"}],
                        "items": obj(nodes={"type": "string", "default": "10%"}),
                    },
                ),
                "default": {"consolidateAfter": "0s"},
            }
        )
    )
    found = admitted(schema, {})
    assert found["spec"] == {
        "disruption": {
            "consolidateAfter": "0s",
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "budgets": [{"nodes": "10%"}],
        }
    }


def test_defaults_apply_to_list_items_and_map_values():
    item = obj(
        nodes={"type": "string", "default": "10%"},
        reasons={"type": "array", "items": {"type": "string"}},
    )
    schema = widget_schema(
        obj(
            budgets={"type": "array", "items": item},
            pools={"type": "object", "additionalProperties": item},
        )
    )
    found = admitted(schema, {"budgets": [{}, {"nodes": "5"}], "pools": {"a": {}}})
    assert found["spec"] == {
        "budgets": [{"nodes": "10%"}, {"nodes": "5"}],
        "pools": {"a": {"nodes": "10%"}},
    }


def test_null_items_take_the_item_default_unless_nullable():
    schema = widget_schema(
        obj(
            sizes={"type": "array", "items": {"type": "integer", "default": 1}},
            maybe={"type": "array", "items": {"type": "integer", "default": 1, "nullable": True}},
        )
    )
    found = admitted(schema, {"sizes": [None, 3], "maybe": [None]})
    assert found["spec"] == {"sizes": [1, 3], "maybe": [None]}


def test_defaults_are_deep_copies():
    schema = widget_schema(obj(options={**obj(a={"type": "string"}), "default": {"a": "x"}}))
    first = admitted(schema, {})
    first["spec"]["options"]["a"] = "changed"
    assert admitted(schema, {})["spec"]["options"] == {"a": "x"}


def test_defaulted_object_validates():
    schema = widget_schema(obj(weight={"type": "integer", "default": 10, "maximum": 100}))
    found = admitted(schema, {})
    assert schema.validate(found, None) == []
    assert errors(schema, found["spec"]) == []


# --- properties ------------------------------------------------------------------------

_SCHEMA = widget_schema(
    obj(
        name={"type": "string", "default": "n"},
        count={"type": "integer"},
        nested={
            **obj(flag={"type": "boolean", "default": False}, label={"type": "string"}),
            "default": {},
        },
        items={"type": "array", "items": obj(key={"type": "string", "default": "k"})},
        labels={"type": "object", "additionalProperties": {"type": "string"}},
        sealed={"type": "object", "additionalProperties": False},
    )
)
_KEYS = st.sampled_from(
    ["name", "count", "nested", "items", "labels", "sealed", "unknown", "extra", "key"]
)
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=3))
_JSON = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(_KEYS, children, max_size=4)
    ),
    max_leaves=12,
)


def _undeclared_keys(value: Any, schema_node: Any, path: str = "") -> list[str]:
    found = []
    if isinstance(value, dict) and schema_node is not None:
        for key, item in value.items():
            child = schema_node.child(key)
            if child is None and not schema_node.preserve_unknown:
                found.append(f"{path}.{key}")
            found += _undeclared_keys(item, child, f"{path}.{key}")
    elif isinstance(value, list) and schema_node is not None:
        for item in value:
            found += _undeclared_keys(item, schema_node.items, path)
    return found


@settings(max_examples=80, deadline=None)
@given(spec=st.dictionaries(_KEYS, _JSON, max_size=5))
def test_pruning_leaves_no_undeclared_field(spec):
    found = widget(spec)
    _SCHEMA.prune(found)
    assert _undeclared_keys(found["spec"], _SCHEMA.root.properties["spec"]) == []
    reported = [e.render() for e in _SCHEMA.validate(found, None)]
    assert not [line for line in reported if "forbidden property" in line]


@settings(max_examples=80, deadline=None)
@given(spec=st.dictionaries(_KEYS, _JSON, max_size=5))
def test_pruning_and_defaulting_are_idempotent(spec):
    once = widget(spec)
    _SCHEMA.prune(once)
    _SCHEMA.apply_defaults(once)
    twice = copy.deepcopy(once)
    _SCHEMA.prune(twice)
    _SCHEMA.apply_defaults(twice)
    assert twice == once
