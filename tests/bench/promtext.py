"""Figures from a Prometheus text scrape, for the benchmarks: gauges, counts and quantiles.

A benchmark scrapes ``/metrics`` once at its end and reports the p50/p99 of a histogram
the way PromQL's ``histogram_quantile(q, sum by (le) (...))`` would over the whole run:
the ``_bucket`` series of every label set that passes a filter are summed per bound, and
the quantile is interpolated linearly inside the bucket it falls in (the lower bound of
the first bucket is 0; a quantile in the ``+Inf`` bucket is the highest finite bound).
Parsing is prometheus_client's own parser; everything here is pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Labels = Mapping[str, str]
LabelFilter = Callable[[Labels], bool]

__all__ = ["Scrape", "quantile"]


def _all(_: Labels) -> bool:
    return True


def quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """``histogram_quantile`` over cumulative ``buckets`` (upper bound -> count, with
    ``+Inf``); None when there are no observations."""
    bounds = sorted(buckets)
    if not bounds or not math.isinf(bounds[-1]):
        return None
    counts = [buckets[b] for b in bounds]
    for i in range(1, len(counts)):  # cumulative counts never fall
        counts[i] = max(counts[i], counts[i - 1])
    total = counts[-1]
    if total <= 0:
        return None
    rank = q * total
    index = next(i for i, count in enumerate(counts) if count >= rank)
    if index == len(bounds) - 1:
        return bounds[-2] if len(bounds) > 1 else None
    upper = bounds[index]
    lower, below = (0.0, 0.0) if index == 0 else (bounds[index - 1], counts[index - 1])
    inside = counts[index] - below
    if inside <= 0:
        return upper
    return lower + (upper - lower) * (rank - below) / inside


class Scrape:
    """One ``/metrics`` answer, parsed."""

    def __init__(self, text: str) -> None:
        self.samples: list[tuple[str, dict[str, str], float]] = [
            (sample.name, dict(sample.labels), float(sample.value))
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def values(self, name: str, where: LabelFilter = _all) -> list[float]:
        return [value for n, labels, value in self.samples if n == name and where(labels)]

    def max(self, name: str, where: LabelFilter = _all) -> float | None:
        """The largest value of a gauge over its label sets (None: not exported)."""
        return max(self.values(name, where), default=None)

    def count(self, histogram: str, where: LabelFilter = _all) -> float:
        """Observations of a histogram, summed over the label sets ``where`` keeps."""
        return sum(self.values(histogram + "_count", where))

    def buckets(self, histogram: str, where: LabelFilter = _all) -> dict[float, float]:
        """Cumulative bucket counts summed per bound over the kept label sets."""
        merged: dict[float, float] = {}
        for name, labels, value in self.samples:
            if name == histogram + "_bucket" and where(labels):
                bound = float(labels["le"])
                merged[bound] = merged.get(bound, 0.0) + value
        return merged

    def quantile(self, q: float, histogram: str, where: LabelFilter = _all) -> float | None:
        return quantile(q, self.buckets(histogram, where))

    def label_values(self, histogram: str, label: str) -> list[str]:
        """The distinct values a histogram's series carry for ``label``."""
        seen = {labels[label] for name, labels, _ in self.samples
                if name == histogram + "_count" and label in labels}  # fmt: skip
        return sorted(seen)


def rounded(value: Any, digits: int = 4) -> Any:
    """``value`` rounded when it is a number (None stays None)."""
    return round(value, digits) if isinstance(value, float) else value
