"""A scrape renders the registry on a worker thread (at 11,000 nodes the per-node series
took 2.5 s to render, a stall of the event loop), after the hooks that must read
loop-owned state have run on the loop; the state's collector reads the snapshot pinned
there."""

from __future__ import annotations

import threading
from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from karpy.observability.metrics import Metrics
from karpy.state.cluster import ClusterState
from karpy.state.metrics import StateMetrics
from karpy.state.snapshot import StateSnapshot


class ThreadRecorder(Collector):
    def __init__(self) -> None:
        self.threads: list[int] = []

    def describe(self) -> list[GaugeMetricFamily]:
        return []

    def collect(self) -> Iterator[GaugeMetricFamily]:
        self.threads.append(threading.get_ident())
        yield GaugeMetricFamily("recorded", "a sample", value=1.0)


async def test_the_registry_renders_off_the_loop_after_the_hooks_ran_on_it() -> None:
    metrics = Metrics()
    recorder = ThreadRecorder()
    metrics.registry.register(recorder)
    order: list[tuple[str, int]] = []
    metrics.before_scrape.append(lambda: order.append(("hook", threading.get_ident())))
    body = await metrics.exposition_off_loop()
    loop_thread = threading.get_ident()
    assert b"recorded 1.0" in body
    assert order == [("hook", loop_thread)]
    assert recorder.threads and all(t != loop_thread for t in recorder.threads)


def test_the_state_collector_reads_the_snapshot_pinned_before_the_scrape() -> None:
    state = ClusterState(watched=())
    taken: list[StateSnapshot] = []

    def snapshot() -> StateSnapshot:
        taken.append(state.snapshot())
        return taken[-1]

    collector = StateMetrics(snapshot)
    collector.pin()
    list(collector.collect())
    list(collector.collect())
    assert len(taken) == 1  # both collections read the pinned snapshot
