"""``x-kubernetes-validations`` evaluated on objects: messages, reasons, field paths,
transition rules and their correlation, and the "rules not checked" cut-off."""

from __future__ import annotations

from typing import Any

from karpy.sandbox.apiserver.schema import RULES_NOT_CHECKED

from .factories import errors, obj, widget_schema

NOT_CHECKED = f'<nil>: Invalid value: "null": {RULES_NOT_CHECKED}'


def ruled(schema: dict[str, Any], *rules: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "x-kubernetes-validations": list(rules)}


def test_failing_rule_reports_the_schema_type_and_message():
    schema = widget_schema(
        ruled(
            obj(a={"type": "integer"}, b={"type": "integer"}),
            {"rule": "self.a < self.b", "message": "a must be below b"},
        )
    )
    assert errors(schema, {"a": 1, "b": 2}) == []
    assert errors(schema, {"a": 3, "b": 2}) == ["spec: Invalid value: a must be below b"]


def test_rule_without_message_shows_the_rule():
    schema = widget_schema(obj(name=ruled({"type": "string"}, {"rule": "self != 'admin'"})))
    assert errors(schema, {"name": "admin"}) == [
        "spec.name: Invalid value: \"admin\": failed rule: self != 'admin'"
    ]


def test_message_expression_builds_the_message_and_falls_back_on_failure():
    schema = widget_schema(
        obj(
            replicas=ruled(
                {"type": "integer"},
                {
                    "rule": "self <= 5",
                    "messageExpression": "'replicas ' + string(self) + ' is above 5'",
                },
            ),
            size=ruled(
                {"type": "integer"},
                {"rule": "self <= 5", "message": "too big", "messageExpression": "string(1 / 0)"},
            ),
        )
    )
    assert errors(schema, {"replicas": 7, "size": 9}) == [
        # a messageExpression embeds the value itself, so none is shown
        "spec.replicas: Invalid value: replicas 7 is above 5",
        "spec.size: Invalid value: 9: too big",
    ]


def test_reason_selects_the_error_type():
    def with_reason(reason: str) -> list[str]:
        schema = widget_schema(
            obj(
                x=ruled(
                    {"type": "string"},
                    {"rule": "self == 'ok'", "message": "bad x", "reason": reason},
                )
            )
        )
        return errors(schema, {"x": "no"})

    assert with_reason("FieldValueForbidden") == ["spec.x: Forbidden: bad x"]
    assert with_reason("FieldValueRequired") == ["spec.x: Required value: bad x"]
    assert with_reason("FieldValueDuplicate") == ['spec.x: Duplicate value: "no"']
    assert with_reason("FieldValueInvalid") == ['spec.x: Invalid value: "no": bad x']


def test_field_path_moves_the_error_to_the_named_field():
    schema = widget_schema(
        ruled(
            obj(
                min={"type": "integer"},
                max={"type": "integer"},
                labels={"type": "object", "additionalProperties": {"type": "string"}},
            ),
            {"rule": "self.min <= self.max", "message": "min above max", "fieldPath": ".max"},
            {"rule": "!('x/y' in self.labels)", "message": "no x/y", "fieldPath": ".labels['x/y']"},
        )
    )
    assert errors(schema, {"min": 3, "max": 1, "labels": {"x/y": "1"}}) == [
        "spec.max: Invalid value: min above max",
        "spec.labels[x/y]: Invalid value: no x/y",
    ]


def test_evaluation_error_is_reported_with_cel_go_text_at_the_node():
    schema = widget_schema(
        obj(
            values=ruled(
                {"type": "array", "items": {"type": "string"}},
                {"rule": "int(self[0]) >= 0", "message": "must be a number"},
            )
        )
    )
    assert errors(schema, {"values": ["x"]}) == [
        "spec.values: Invalid value: \"array\": type conversion error from 'string' to 'int' "
        "evaluating rule: must be a number"
    ]


def test_rules_on_null_values_are_skipped():
    schema = widget_schema(
        obj(x=ruled({"type": "string", "nullable": True}, {"rule": "self == 'a'"}))
    )
    assert errors(schema, {"x": None}) == []


def test_blocking_openapi_errors_stop_rule_evaluation():
    schema = widget_schema(
        ruled(
            obj(mode={"type": "string", "enum": ["a"]}, n={"type": "integer", "maximum": 3}),
            {"rule": "false", "message": "never"},
        )
    )
    assert errors(schema, {"mode": "b"}) == [
        'spec.mode: Unsupported value: "b": supported values: "a"',
        NOT_CHECKED,
    ]
    assert errors(schema, {"n": 9}) == [
        "spec.n: Invalid value: 9: spec.n in body should be less than or equal to 3",
        "spec: Invalid value: never",
    ]


def test_rules_see_date_time_strings_as_timestamps():
    schema = widget_schema(
        ruled(
            obj(
                start={"type": "string", "format": "date-time"},
                end={"type": "string", "format": "date-time"},
            ),
            {"rule": "self.end - self.start >= duration('1h')", "message": "window too short"},
        )
    )
    window = {"start": "2024-05-01T10:00:00Z", "end": "2024-05-01T10:30:00Z"}
    assert errors(schema, window) == ["spec: Invalid value: window too short"]
    window["end"] = "2024-05-01T12:00:00+02:00"
    assert errors(schema, window) == ["spec: Invalid value: window too short"]
    window["end"] = "2024-05-01T11:00:00Z"
    assert errors(schema, window) == []


def test_escaped_property_names():
    schema = widget_schema(
        ruled(
            {
                "type": "object",
                "properties": {"max-size": {"type": "integer"}, "namespace": {"type": "string"}},
            },
            {"rule": "self.max__dash__size > 0 && self.__namespace__ != ''"},
        )
    )
    assert errors(schema, {"max-size": 1, "namespace": "n"}) == []
    assert len(errors(schema, {"max-size": 0, "namespace": "n"})) == 1


# --- transition rules --------------------------------------------------------------------


def test_transition_rule_runs_only_on_update():
    schema = widget_schema(
        obj(
            name=ruled(
                {"type": "string"}, {"rule": "self == oldSelf", "message": "name is immutable"}
            )
        )
    )
    assert errors(schema, {"name": "a"}) == []
    assert errors(schema, {"name": "a"}, old_spec={"name": "a"}) == []
    assert errors(schema, {"name": "b"}, old_spec={"name": "a"}) == [
        'spec.name: Invalid value: "b": name is immutable'
    ]
    assert errors(schema, {"name": "b"}, old_spec={}) == []


def test_presence_transition_rule():
    schema = widget_schema(
        ruled(
            obj(replicas={"type": "integer"}),
            {"rule": "has(self.replicas) == has(oldSelf.replicas)", "message": "no switching"},
        )
    )
    assert errors(schema, {"replicas": 2}, old_spec={"replicas": 1}) == []
    assert errors(schema, {"replicas": 2}, old_spec={}) == ["spec: Invalid value: no switching"]


def test_optional_old_self_runs_on_create_with_an_empty_optional():
    schema = widget_schema(
        obj(
            size=ruled(
                {"type": "integer"},
                {
                    "rule": "!oldSelf.hasValue() || self >= oldSelf.value()",
                    "message": "cannot shrink",
                    "optionalOldSelf": True,
                },
                {
                    "rule": "oldSelf.hasValue() || self < 100",
                    "message": "start small",
                    "optionalOldSelf": True,
                },
            )
        )
    )
    assert errors(schema, {"size": 500}) == ["spec.size: Invalid value: 500: start small"]
    assert errors(schema, {"size": 5}, old_spec={"size": 10}) == [
        "spec.size: Invalid value: 5: cannot shrink"
    ]
    assert errors(schema, {"size": 500}, old_spec={"size": 10}) == []


def test_old_self_correlates_through_map_entries():
    schema = widget_schema(
        obj(
            limits={
                "type": "object",
                "additionalProperties": ruled(
                    {"type": "integer"}, {"rule": "self >= oldSelf", "message": "no decrease"}
                ),
            }
        )
    )
    assert errors(schema, {"limits": {"cpu": 5, "gpu": 1}}, old_spec={"limits": {"cpu": 4}}) == []
    assert errors(schema, {"limits": {"cpu": 3}}, old_spec={"limits": {"cpu": 4}}) == [
        "spec.limits[cpu]: Invalid value: 3: no decrease"
    ]


def test_old_self_correlates_map_list_items_by_key():
    disks = {
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {
            **obj(
                name={"type": "string"}, size=ruled({"type": "number"}, {"rule": "self >= oldSelf"})
            ),
            "required": ["name"],
        },
    }
    schema = widget_schema(obj(disks=disks))
    old = {"disks": [{"name": "a", "size": 1.0}, {"name": "b", "size": 5.0}]}
    assert (
        errors(
            schema,
            {"disks": [{"name": "b", "size": 5.0}, {"name": "a", "size": 1.2}]},
            old_spec=old,
        )
        == []
    )
    assert errors(
        schema, {"disks": [{"name": "b", "size": 4.0}, {"name": "a", "size": 1.2}]}, old_spec=old
    ) == ["spec.disks[0].size: Invalid value: 4: failed rule: self >= oldSelf"]


def test_equality_of_set_and_map_lists_ignores_order():
    schema = widget_schema(
        obj(
            zones=ruled(
                {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                {"rule": "self == oldSelf"},
            ),
            conditions=ruled(
                {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["type"],
                    "items": {
                        **obj(type={"type": "string"}, status={"type": "string"}),
                        "required": ["type"],
                    },
                },
                {"rule": "self == oldSelf"},
            ),
        )
    )
    old: dict[str, Any] = {
        "zones": ["a", "b"],
        "conditions": [{"type": "A", "status": "x"}, {"type": "B"}],
    }
    new: dict[str, Any] = {
        "zones": ["b", "a"],
        "conditions": [{"type": "B"}, {"type": "A", "status": "x"}],
    }
    assert errors(schema, new, old_spec=old) == []
    new["conditions"][1]["status"] = "y"
    assert errors(schema, new, old_spec=old) == [
        "spec.conditions: Invalid value: failed rule: self == oldSelf"
    ]


def test_unchanged_values_ratchet_non_transition_rule_failures():
    schema = widget_schema(
        obj(
            name=ruled(
                {"type": "string"}, {"rule": "self.startsWith('x-')", "message": "needs prefix"}
            ),
            other={"type": "string"},
        )
    )
    assert (
        errors(schema, {"name": "legacy", "other": "2"}, old_spec={"name": "legacy", "other": "1"})
        == []
    )
    assert errors(schema, {"name": "legacy2"}, old_spec={"name": "legacy"}) == [
        'spec.name: Invalid value: "legacy2": needs prefix'
    ]


def test_root_rule_failures_have_a_nil_path():
    from karpy.sandbox.apiserver.schema import compile_schema

    from .factories import resource_schema, widget

    schema = compile_schema(
        ruled(
            resource_schema(obj(a={"type": "string"})),
            {"rule": "self.metadata.name != 'w'", "message": "bad name"},
        )
    )
    assert [e.render() for e in schema.validate(widget({"a": "x"}), None)] == [
        "<nil>: Invalid value: bad name"
    ]


def test_rules_below_atomic_lists_run_per_item_and_ratchet_with_the_whole_list():
    item = obj(key=ruled({"type": "string"}, {"rule": "self != 'bad'", "message": "bad key"}))
    schema = widget_schema(
        obj(
            requirements={"type": "array", "x-kubernetes-list-type": "atomic", "items": item},
            note={"type": "string"},
        )
    )
    spec: dict[str, Any] = {"requirements": [{"key": "ok"}, {"key": "bad"}]}
    assert errors(schema, spec) == ['spec.requirements[1].key: Invalid value: "bad": bad key']
    assert errors(schema, {**spec, "note": "edited"}, old_spec=spec) == []
    grown = {"requirements": [*spec["requirements"], {"key": "ok2"}]}
    assert errors(schema, grown, old_spec=spec) == [
        'spec.requirements[1].key: Invalid value: "bad": bad key'
    ]
