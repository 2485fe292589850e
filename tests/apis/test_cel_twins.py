"""Every CEL rule in karpy's CRDs means what its Python twin means.

karpy validates objects with the Python predicates; clusters (and the API server
emulator) evaluate the CEL text in the CRDs. Here a real CEL interpreter (cel-python,
with Kubernetes' ``find`` and ``split`` library functions added) evaluates each rule on
values generated from the rule's own schema node, and both must agree. A CEL evaluation
error counts as a rejection, as it does in kube-apiserver.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import celpy
import pytest
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.apis.crdgen import CUSTOM_RESOURCES
from karpy.apis.openapi import Rule, Schema


def _walk(schema: Schema, path: str = "") -> Iterator[tuple[str, Schema]]:
    yield path, schema
    for name, child in schema.properties.items():
        yield from _walk(child, f"{path}.{name}")
    if schema.items is not None:
        yield from _walk(schema.items, f"{path}[]")
    if schema.additional_properties is not None:
        yield from _walk(schema.additional_properties, f"{path}{{}}")


RULE_NODES = [
    (f"{resource.kind}{path}", node, rule)
    for resource in CUSTOM_RESOURCES
    for path, node in _walk(resource.schema)
    for rule in node.rules
]
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
STRINGS = sorted(
    {
        a or b
        for _, _, rule in RULE_NODES
        for a, b in _QUOTED.findall(rule.rule)
        if "(" not in (a or b)
    }
    | {
        "",
        "x",
        "team",
        "a@b",
        "al2023",
        "windows2019@v1",
        "sub.karpenter.sh/x",
        "karpenter.sh",
        "kubernetes.io/cluster/demo",
        "example.com/x",
        "-1",
        "0",
        "1",
        "+2",
        "17",
        "1.5",
        "-5Gi",
        "5%",
        "pg-1",
        "cr-1",
        "latest",
        "al2@latest",
        "windows2019@latest",
        "bottlerocket@v1",
    }
)
KEYS = sorted(
    {s for s in STRINGS if s and len(s) < 60}
    | {"cpu", "memory", "nodes", "memory.available", "nodefs.available", "pid"}
)
INTS = st.sampled_from([-1, 0, 1, 2, 5, 50, 100, 101])


def values_for(
    schema: Schema, depth: int = 0, boost: tuple[str, ...] = ()
) -> st.SearchStrategy[Any]:
    """Values shaped like ``schema`` (right JSON types, required fields present), biased
    to the strings and numbers the rules talk about (``boost``: the rule's own)."""
    strings = st.sampled_from(STRINGS)
    if boost:
        strings = st.one_of(st.sampled_from(boost), strings)
    keys = st.sampled_from(KEYS)
    if boost:
        keys = st.one_of(st.sampled_from(boost), keys)
    if schema.int_or_string:
        return st.one_of(INTS, strings)
    if schema.type == "string":
        if schema.enum:
            return st.sampled_from([*schema.enum, "other"])
        return strings
    if schema.type == "integer":
        return INTS
    if schema.type == "boolean":
        return st.booleans()
    if schema.type == "array":
        assert schema.items is not None
        return st.lists(values_for(schema.items, depth + 1, boost), max_size=3)
    if schema.type == "object" and schema.additional_properties is not None:
        return st.dictionaries(
            keys, values_for(schema.additional_properties, depth + 1, boost), max_size=3
        )
    if schema.type == "object":
        # Required properties are always there: objects missing them never get as far
        # as a model (parsing refuses them), and kube reports them before any rule.
        children = {
            name: values_for(child, depth + 1, boost) for name, child in schema.properties.items()
        }
        required = {name: s for name, s in children.items() if name in schema.required}
        optional = {
            name: s for name, s in children.items() if name not in schema.required and depth < 4
        }
        return st.fixed_dictionaries(required, optional=optional)
    return st.nothing()


def rule_strategy(node: Schema, rule: Rule) -> st.SearchStrategy[Any]:
    literals = tuple(sorted({a or b for a, b in _QUOTED.findall(rule.rule)}))
    if "@" in rule.rule:
        literals += tuple(f"{a}@{b}" for a in literals[:8] for b in ("latest", "v1"))
    strategy = values_for(node, boost=literals)
    return st.tuples(strategy, strategy) if rule.transition else strategy


def _find(text: celtypes.StringType, pattern: celtypes.StringType) -> celtypes.StringType:
    match = re.search(str(pattern), str(text))
    return celtypes.StringType(match.group(0) if match else "")


def _split(text: celtypes.StringType, separator: celtypes.StringType) -> celtypes.ListType:
    return celtypes.ListType([celtypes.StringType(p) for p in str(text).split(str(separator))])


_ENV = celpy.Environment()


@cache
def _program(rule: str) -> Any:
    return _ENV.program(_ENV.compile(rule), functions={"find": _find, "split": _split})


def cel_accepts(rule: Rule, value: Any, old: Any = None) -> bool:
    activation = {"self": json_to_cel(value)}
    if rule.transition:
        activation["oldSelf"] = json_to_cel(old)
    try:
        result = _program(rule.rule).evaluate(activation)
    except CELEvalError:
        return False
    return isinstance(result, celtypes.BoolType) and bool(result)


def twin_accepts(rule: Rule, value: Any, old: Any = None) -> bool:
    try:
        return bool(rule.check(value, old) if rule.transition else rule.check(value))
    except (KeyError, IndexError, TypeError, ValueError):
        return False


def test_every_rule_compiles_as_cel():
    assert len(RULE_NODES) > 60
    for _, _, rule in RULE_NODES:
        _program(rule.rule)


@pytest.mark.parametrize(
    ("where", "node", "rule"), RULE_NODES, ids=[f"{w}: {r.message[:40]}" for w, _, r in RULE_NODES]
)
def test_cel_and_python_agree(where, node, rule):
    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(rule_strategy(node, rule))
    def agree(sample: Any) -> None:
        value, old = sample if rule.transition else (sample, None)
        assert cel_accepts(rule, value, old) == twin_accepts(rule, value, old), (where, value, old)

    agree()


def _outcomes(node: Schema, rule: Rule) -> set[bool]:
    outcomes: set[bool] = set()

    @settings(
        max_examples=30, deadline=None, suppress_health_check=list(HealthCheck), database=None
    )
    @given(rule_strategy(node, rule))
    def collect(sample: Any) -> None:
        value, old = sample if rule.transition else (sample, None)
        outcomes.add(twin_accepts(rule, value, old))

    collect()
    return outcomes


def test_generated_values_exercise_both_outcomes_of_most_rules():
    """Guard against a vacuous comparison: the strategies must produce valid and
    invalid values for most rules."""
    both = [where for where, node, rule in RULE_NODES if _outcomes(node, rule) == {True, False}]
    assert len(both) >= len(RULE_NODES) * 0.8
