"""``karpenter_pods_startup_duration_seconds``: observed once for a pod karpy saw Pending
when it is next seen Running, from its creation to its Ready condition turning True."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from prometheus_client import CollectorRegistry

from karpy.apis.core import format_time
from karpy.observability.quantiles import WindowedSummary
from karpy.state import kinds
from karpy.state.cluster import ClusterState
from karpy.state.metrics import PodStartupObserver
from karpy.state.records import pod_info
from tests import factories as f
from tests.kube.fakeclock import START, FakeClock

CREATED = START - timedelta(minutes=5)


def pod_at(phase: str, *, ready_at: timedelta | None = None, rv: str = "1") -> dict[str, Any]:
    pod = f.pod("web-1", node_name="" if phase == "Pending" else "n1")
    pod["metadata"].update(creationTimestamp=format_time(CREATED), resourceVersion=rv)
    conditions = []
    if ready_at is not None:
        conditions.append({"type": "Ready", "status": "True",
                           "lastTransitionTime": format_time(CREATED + ready_at)})  # fmt: skip
    pod["status"] = {"phase": phase, "conditions": conditions}
    return pod


class World:
    def __init__(self) -> None:
        self.clock = FakeClock()
        self.state = ClusterState(watched=[kinds.POD])
        self.summary = WindowedSummary("startup", "s", registry=CollectorRegistry(),
                                       clock=self.clock.monotonic)  # fmt: skip
        self.observed: list[float] = []
        self.state.subscribe(PodStartupObserver(self.summary, clock=self.clock))

    def see(self, pod: dict[str, Any]) -> None:
        self.state.apply(kinds.POD, [("default/web-1", pod_info(pod))], [])

    def samples(self) -> tuple[float, float]:
        (family,) = self.summary.collect()
        values = {s.name: s.value for s in family.samples}
        return values["startup_count"], values["startup_sum"]


def test_a_pending_pod_that_runs_is_observed_from_creation_to_ready():
    world = World()
    world.see(pod_at("Pending"))
    world.see(pod_at("Running", ready_at=timedelta(seconds=42), rv="2"))
    assert world.samples() == (1.0, 42.0)


def test_without_a_ready_condition_the_end_is_when_karpy_sees_it_running():
    world = World()
    world.see(pod_at("Pending"))
    world.see(pod_at("Running", rv="2"))  # FakeClock.now() is START, five minutes on
    assert world.samples() == (1.0, 300.0)


def test_each_pod_is_observed_once():
    world = World()
    world.see(pod_at("Pending"))
    world.see(pod_at("Running", rv="2"))
    world.see(pod_at("Running", ready_at=timedelta(seconds=42), rv="3"))  # later updates
    assert world.samples()[0] == 1.0


def test_a_pod_already_running_when_first_seen_is_not_observed():
    world = World()  # a controller restart: its start was never seen
    world.see(pod_at("Running", ready_at=timedelta(seconds=42)))
    world.see(pod_at("Running", ready_at=timedelta(seconds=42), rv="2"))
    assert world.samples() == (0.0, 0.0)


def test_a_pod_that_fails_before_running_is_not_observed():
    world = World()
    world.see(pod_at("Pending"))
    world.see(pod_at("Failed", rv="2"))
    assert world.samples() == (0.0, 0.0)
