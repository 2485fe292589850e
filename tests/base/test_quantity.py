"""Quantities shown to people: exact, and in the form people write them."""

from __future__ import annotations

import pytest

from karpy.base.quantity import format_quantity, format_resource, parse_quantity


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
