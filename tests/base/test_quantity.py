"""Quantities shown to people: exact, and in the form people write them."""

from __future__ import annotations

import pytest

from karpy.base.quantity import MAX_MILLI, format_quantity, format_resource, parse_quantity


@pytest.mark.parametrize(("resource", "text", "shown"), [
    ("cpu", "10000", "10000"), ("cpu", "1500m", "1500m"), ("cpu", "2", "2"),
    ("pods", "1024", "1024"), ("nvidia.com/gpu", "8", "8"),
    ("memory", "300Gi", "300Gi"), ("memory", "239554Mi", "239554Mi"),
    ("ephemeral-storage", "20Gi", "20Gi"), ("cpu", "0", "0"),
])  # fmt: skip
def test_resources_are_shown_as_users_write_them(resource: str, text: str, shown: str) -> None:
    assert format_resource(resource, parse_quantity(text)) == shown


def test_the_canonical_form_keeps_decimal_suffixes() -> None:
    # What the API server itself would print; karpy only uses it where it must.
    assert format_quantity(parse_quantity("10000")) == "10k"


# --- every quantity the CRDs admit and Kubernetes parses is read --------------------------


@pytest.mark.parametrize(("text", "milli"), [
    ("1e400", MAX_MILLI), ("9" * 500, MAX_MILLI), ("1e1000000000000000000000", MAX_MILLI),
    ("12345Ei", MAX_MILLI), ("-1e400", -MAX_MILLI), ("9223372036854775807", MAX_MILLI),
    ("9223372036854775806", 9223372036854775806000), ("1e18", 10**21),
    ("1e-400", 1), ("5e-4000000", 1), ("-1e-400", 0), ("0e999999", 0),
    ("500u", 1), ("1n", 1), ("1500000u", 1500), ("2000000000n", 2000),
    ("0.0000001e10", 1000000), ("1E", 10**21),
])  # fmt: skip
def test_odd_but_admitted_quantities_are_read_and_huge_ones_saturate(text: str, milli: int) -> None:
    assert parse_quantity(text) == milli


def test_a_huge_integer_saturates_too() -> None:
    assert parse_quantity(10**400) == MAX_MILLI
