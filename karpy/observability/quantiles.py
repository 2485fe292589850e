"""`WindowedSummary`: a Prometheus summary that reports quantiles, as Karpenter's do.

Karpenter exports two durations as client_golang summaries with quantile series
(``karpenter_nodes_termination_duration_seconds`` and
``karpenter_pods_startup_duration_seconds``, objectives 0, 0.5, 0.9, 0.99 and 1 over the
last ten minutes), and its Performance dashboard reads them as
``metric{quantile="0.99"}``. prometheus_client's `Summary` exports only ``_count`` and
``_sum``, so those panels would stay empty on karpy.

This summary keeps the observations of the last ``max_age`` seconds, at most
``max_samples`` of them per label set (the newest win), and computes exact quantiles
from them at scrape time. Memory is bounded by ``max_samples`` floats per series whatever
the rate; under a burst larger than that, the quantiles describe the newest
``max_samples`` observations of the window, which is the part a dashboard is looking at.
``_count`` and ``_sum`` are cumulative over the process's life, as in any summary. An
empty window reports NaN quantiles, as client_golang does.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import TYPE_CHECKING, Final

from prometheus_client.core import SummaryMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from prometheus_client import CollectorRegistry, Metric

__all__ = ["OBJECTIVES", "WindowedSummary"]

OBJECTIVES: Final = (0.0, 0.5, 0.9, 0.99, 1.0)  # Karpenter's SummaryObjectives


class _Series:
    __slots__ = ("count", "recent", "total")

    def __init__(self, max_samples: int) -> None:
        self.count = 0
        self.total = 0.0
        self.recent: deque[tuple[float, float]] = deque(maxlen=max_samples)  # (when, value)


class _Child:
    __slots__ = ("_owner", "_series")

    def __init__(self, owner: WindowedSummary, series: _Series) -> None:
        self._owner = owner
        self._series = series

    def observe(self, value: float) -> None:
        self._owner._observe(self._series, value)


class WindowedSummary(Collector):
    """A summary with quantile series; ``labels(...)`` and ``observe`` as prometheus_client's.
    ``clock`` is a monotonic reading in seconds (injected for tests)."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        *,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float],
        max_age: float = 600.0,
        max_samples: int = 1024,
        objectives: Sequence[float] = OBJECTIVES,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.clock = clock
        self.max_age = max_age
        self.max_samples = max_samples
        self.objectives = tuple(objectives)
        self._series: dict[tuple[str, ...], _Series] = {}
        self._lock = threading.Lock()  # scrapes may run on another thread
        if not self.labelnames:
            self._series[()] = _Series(max_samples)  # exported (count 0) from the start
        if registry is not None:
            registry.register(self)

    def labels(self, *values: str) -> _Child:
        if len(values) != len(self.labelnames):
            raise ValueError(f"{self.name} takes labels {self.labelnames}, got {values}")
        key = tuple(str(v) for v in values)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series(self.max_samples)
        return _Child(self, series)

    def observe(self, value: float) -> None:
        """For a summary without labels."""
        self.labels().observe(value)

    def _observe(self, series: _Series, value: float) -> None:
        with self._lock:
            series.count += 1
            series.total += value
            series.recent.append((self.clock(), value))

    def describe(self) -> list[Metric]:
        return [SummaryMetricFamily(self.name, self.documentation, labels=self.labelnames)]

    def collect(self) -> Iterator[Metric]:
        family = SummaryMetricFamily(self.name, self.documentation, labels=self.labelnames)
        oldest = self.clock() - self.max_age
        with self._lock:
            for key, series in self._series.items():
                while series.recent and series.recent[0][0] < oldest:
                    series.recent.popleft()
                values = sorted(value for _, value in series.recent)
                labels = dict(zip(self.labelnames, key, strict=True))
                for q in self.objectives:
                    family.samples.append(Sample(self.name, {**labels, "quantile": _text(q)},
                                                 _quantile(values, q)))  # fmt: skip
                family.add_metric(list(key), series.count, series.total)
        yield family


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank quantile of ``ordered`` (q=0 the least, q=1 the greatest)."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def _text(q: float) -> str:
    return repr(q) if q not in (0.0, 1.0) else str(int(q))
