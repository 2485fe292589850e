"""Round trips, as properties: any dict that fits a kind's schema parses, and parsing what
a model prints gives the same model (and the same print)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from karpy.apis import KINDS
from karpy.apis.crdgen import CUSTOM_RESOURCES
from karpy.apis.openapi import QUANTITY_PATTERN, Schema

_WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)
_QUANTITIES = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.builds(
        lambda n, suffix: f"{n}{suffix}",
        st.integers(min_value=0, max_value=10**5),
        st.sampled_from(["", "m", "k", "M", "G", "Ki", "Mi", "Gi", "Ti", "e3"]),
    ),
)
_DURATIONS = st.builds(
    lambda h, m, s: "".join(f"{n}{u}" for n, u in ((h, "h"), (m, "m"), (s, "s")) if n) or "0s",
    st.integers(0, 10_000),
    st.integers(0, 90),
    st.integers(0, 90),
)
_TIMES = st.builds(
    lambda d, s: f"2026-{d:02d}-01T00:00:{s:02d}Z",
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=0, max_value=59),
)


def wire_values(schema: Schema, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values that fit ``schema``'s types and patterns (not necessarily its CEL rules)."""
    if schema.int_or_string:
        assert schema.pattern == QUANTITY_PATTERN
        return _QUANTITIES
    if schema.type == "string":
        if schema.enum:
            return st.sampled_from(schema.enum)
        if schema.format == "date-time":
            return _TIMES
        if schema.pattern is not None and "(s|m|h)" in schema.pattern:
            return (
                _DURATIONS
                if "Never" not in schema.pattern
                else st.one_of(_DURATIONS, st.just("Never"))
            )
        if schema.pattern is not None:
            return st.from_regex(schema.pattern, fullmatch=True).filter(lambda s: len(s) < 40)
        return _WORDS
    if schema.type == "integer":
        low = schema.minimum if schema.minimum is not None else -5
        high = schema.maximum if schema.maximum is not None else 10_000
        return st.integers(min_value=low, max_value=high)
    if schema.type == "boolean":
        return st.booleans()
    if schema.type == "array":
        assert schema.items is not None
        return st.lists(wire_values(schema.items, depth + 1), max_size=2 if depth < 3 else 0)
    if schema.type == "object" and schema.additional_properties is not None:
        return st.dictionaries(
            _WORDS, wire_values(schema.additional_properties, depth + 1), max_size=2
        )
    if schema.type == "object" and not schema.properties:
        return st.builds(lambda name: {"name": name, "labels": {"app": name}}, _WORDS)
    children = {name: wire_values(child, depth + 1) for name, child in schema.properties.items()}
    required = {k: v for k, v in children.items() if k in schema.required}
    optional = {k: v for k, v in children.items() if k not in schema.required}
    return st.fixed_dictionaries(required, optional=optional)


def documents(resource: Any) -> st.SearchStrategy[dict[str, Any]]:
    body = wire_values(resource.schema)
    return body.map(
        lambda d: {**d, "apiVersion": resource.api_version, "kind": resource.kind}
    ).filter(lambda d: "spec" in d)


# The kinds karpy parses and prints whole (a CapacityBuffer is only read, and only its
# status written: `karpy.apis.capacitybuffer`).
MODELLED = [r for r in CUSTOM_RESOURCES if (r.api_version, r.kind) in KINDS]


@pytest.mark.parametrize("resource", MODELLED, ids=lambda r: r.kind)
def test_parse_print_parse_is_stable(resource):
    model = KINDS[(resource.api_version, resource.kind)]

    @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
    @given(documents(resource))
    def round_trip(document: dict[str, Any]) -> None:
        parsed = model.from_dict(document)
        printed = parsed.to_dict()
        again = model.from_dict(printed)
        assert again == parsed
        assert again.to_dict() == printed

    round_trip()
