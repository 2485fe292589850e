"""Resource-list arithmetic."""

from __future__ import annotations

from karpy.scheduling.resources import (
    fits,
    format_resources,
    max_resources,
    merge,
    min_resources,
    render_resources,
    subtract,
)


def test_merge_adds_every_resource() -> None:
    assert merge({"cpu": 1000}, {"cpu": 500, "memory": 10}) == {"cpu": 1500, "memory": 10}


def test_subtract_keeps_the_keys_of_the_left_side() -> None:
    assert subtract({"cpu": 1000}, {"cpu": 250, "memory": 10}) == {"cpu": 750}


def test_fits_compares_every_requested_resource_with_absent_as_zero() -> None:
    assert fits({"cpu": 1000}, {"cpu": 1000, "memory": 5})
    assert not fits({"cpu": 1001}, {"cpu": 1000})
    assert not fits({"nvidia.com/gpu": 1000}, {"cpu": 1000})
    assert fits({"nvidia.com/gpu": 0}, {"cpu": 1000})


def test_nothing_fits_an_overcommitted_node() -> None:
    assert not fits({"cpu": 1}, {"cpu": 1000, "memory": -1})


def test_min_resources_keeps_only_keys_present_everywhere() -> None:
    assert min_resources([{"cpu": 2, "memory": 5}, {"cpu": 1}]) == {"cpu": 1}
    assert min_resources([]) == {}


def test_max_resources_takes_the_largest_of_each() -> None:
    assert max_resources([{"cpu": 2}, {"cpu": 1, "memory": 5}]) == {"cpu": 2, "memory": 5}


def test_format_uses_kubernetes_quantities() -> None:
    assert format_resources({"memory": 3 * 2**30 * 1000, "cpu": 1500}) == {
        "cpu": "1500m",
        "memory": "3Gi",
    }
    assert render_resources({"cpu": 2000}) == "{cpu: 2}"
