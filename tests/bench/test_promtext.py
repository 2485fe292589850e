"""The benchmarks' scrape reader: quantiles as PromQL's histogram_quantile computes them,
buckets merged over label sets, gauges and counts."""

from __future__ import annotations

import math

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, Gauge, Histogram

from tests.bench.promtext import Scrape, quantile

INF = math.inf


def test_a_quantile_is_interpolated_inside_its_bucket():
    # 10 observations: 4 up to 1 s, 6 more up to 2 s. The median (rank 5) is the first
    # of the six in (1, 2]: 1 + 1 * (5 - 4) / 6.
    assert quantile(0.5, {1.0: 4, 2.0: 10, INF: 10}) == pytest.approx(1 + 1 / 6)


def test_the_first_bucket_starts_at_zero():
    assert quantile(0.5, {0.1: 10, INF: 10}) == pytest.approx(0.05)


def test_a_quantile_in_the_inf_bucket_is_the_highest_finite_bound():
    assert quantile(0.99, {1.0: 5, 2.0: 5, INF: 10}) == 2.0


def test_no_observations_have_no_quantile():
    assert quantile(0.99, {1.0: 0, INF: 0}) is None
    assert quantile(0.99, {}) is None


def scrape_of(registry: CollectorRegistry) -> Scrape:
    return Scrape(prometheus_client.generate_latest(registry).decode())


def test_buckets_are_merged_over_the_label_sets_a_filter_keeps():
    registry = CollectorRegistry()
    latency = Histogram("req_seconds", "Requests.", ["verb"], buckets=(0.1, 1.0), registry=registry)
    for _ in range(9):
        latency.labels("PUT").observe(0.05)
    latency.labels("PATCH").observe(0.5)
    latency.labels("GET").observe(5)
    scrape = scrape_of(registry)

    writes = scrape.buckets("req_seconds", lambda labels: labels["verb"] != "GET")

    assert writes == {0.1: 9, 1.0: 10, INF: 10}
    assert scrape.count("req_seconds") == 11
    assert scrape.quantile(0.99, "req_seconds", lambda labels: labels["verb"] == "PATCH") == (
        pytest.approx(0.1 + 0.9 * 0.99)
    )
    assert scrape.label_values("req_seconds", "verb") == ["GET", "PATCH", "PUT"]


def test_a_gauges_maximum_over_its_label_sets_and_a_missing_gauge():
    registry = CollectorRegistry()
    longest = Gauge("longest_seconds", "Longest.", ["name"], registry=registry)
    longest.labels("a").set(0.3)
    longest.labels("b").set(1.5)
    scrape = scrape_of(registry)
    assert scrape.max("longest_seconds") == 1.5
    assert scrape.max("absent_seconds") is None
