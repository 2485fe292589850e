"""`WindowedSummary`: quantile series over the last ten minutes (what Karpenter's
Performance dashboard reads), cumulative count and sum, bounded memory."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from karpy.observability.quantiles import WindowedSummary


class Ticks:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def exported(registry: CollectorRegistry) -> dict[tuple[str, str], float]:
    """(sample name, quantile or "") -> value, for the one series of the test."""
    text = generate_latest(registry).decode()
    return {
        (sample.name, sample.labels.get("quantile", "")): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def summary(registry: CollectorRegistry, clock: Ticks, **kw) -> WindowedSummary:
    return WindowedSummary("startup_seconds", "Startup.", registry=registry, clock=clock, **kw)


def test_quantiles_are_those_of_the_observations_as_karpenter_names_them():
    registry, clock = CollectorRegistry(), Ticks()
    startup = summary(registry, clock)
    for value in range(1, 101):  # 1 .. 100 seconds
        startup.observe(float(value))
    samples = exported(registry)
    assert samples[("startup_seconds", "0")] == 1.0
    assert samples[("startup_seconds", "0.5")] == 50.0
    assert samples[("startup_seconds", "0.9")] == 90.0
    assert samples[("startup_seconds", "0.99")] == 99.0
    assert samples[("startup_seconds", "1")] == 100.0
    assert samples[("startup_seconds_count", "")] == 100.0
    assert samples[("startup_seconds_sum", "")] == 5050.0


def test_observations_older_than_the_window_leave_the_quantiles_but_not_count_and_sum():
    registry, clock = CollectorRegistry(), Ticks()
    startup = summary(registry, clock)
    startup.observe(300.0)
    clock.now = 590.0
    startup.observe(10.0)
    assert exported(registry)[("startup_seconds", "1")] == 300.0
    clock.now = 601.0  # the first is now more than ten minutes old
    samples = exported(registry)
    assert samples[("startup_seconds", "1")] == 10.0
    assert samples[("startup_seconds_count", "")] == 2.0
    assert samples[("startup_seconds_sum", "")] == 310.0
    clock.now = 1200.0
    assert math.isnan(exported(registry)[("startup_seconds", "0.5")])  # as client_golang


def test_at_most_max_samples_are_kept_per_series_the_newest_win():
    registry, clock = CollectorRegistry(), Ticks()
    startup = summary(registry, clock, max_samples=10)
    for value in range(100):
        startup.observe(float(value))
    samples = exported(registry)
    assert samples[("startup_seconds", "0")] == 90.0
    assert samples[("startup_seconds_count", "")] == 100.0


def test_labelled_series_are_kept_apart():
    registry, clock = CollectorRegistry(), Ticks()
    termination = WindowedSummary("termination_seconds", "T.", ["nodepool"], registry=registry,
                                  clock=clock)  # fmt: skip
    termination.labels("a").observe(5.0)
    termination.labels("b").observe(50.0)
    text = generate_latest(registry).decode()
    (family,) = text_string_to_metric_families(text)
    assert family.type == "summary"
    maxima = {s.labels["nodepool"]: s.value for s in family.samples
              if s.labels.get("quantile") == "1"}  # fmt: skip
    assert maxima == {"a": 5.0, "b": 50.0}
