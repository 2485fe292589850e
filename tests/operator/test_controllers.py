"""The controllers a leader runs: the CapacityBuffer controller only with its gate."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.cloud.fake import FakeCloudProvider
from karpy.cloud.fake.catalog import embedded_catalog
from karpy.cloud.unavailable import UnavailableOfferings
from karpy.observability.metrics import Metrics
from karpy.operator.controllers import build_controllers
from karpy.operator.timings import DEFAULT_TIMINGS
from karpy.settings import Settings
from karpy.settings.gates import FeatureGates
from karpy.state.cluster import ClusterState
from tests.kube.fakeclock import FakeClock


def components(settings: Settings) -> list[Any]:
    """The components `build_controllers` makes for ``settings`` on the fake cloud; only
    built, never run, so no client is needed."""
    state, unavailable = ClusterState(), UnavailableOfferings()
    client: Any = None  # nothing is called while the controllers are only built
    provider = FakeCloudProvider(embedded_catalog(), client=client, state=state,
                                 unavailable=unavailable)  # fmt: skip
    return list(build_controllers(settings, state=state, client=client, recorder=client,
                                  provider=provider, unavailable=unavailable,
                                  metrics=Metrics(), clock=FakeClock(),
                                  timings=DEFAULT_TIMINGS))  # fmt: skip


def names(gate: bool) -> list[str]:
    settings = Settings(cluster_name="test", cloud_provider="fake",
                        feature_gates=FeatureGates(capacity_buffer=gate))  # fmt: skip
    return [str(getattr(c, "name", "")) for c in components(settings)]


@pytest.mark.parametrize("gate", [False, True])
def test_the_capacitybuffer_controller_runs_only_with_its_gate(gate: bool) -> None:
    assert ("capacitybuffer" in names(gate)) is gate


@pytest.mark.parametrize("named", [False, True])
def test_pods_are_named_only_with_nominated_node_names(named: bool) -> None:
    """NOMINATED_NODE_NAMES (off by default) alone starts the nominatedNodeName writer."""
    settings = Settings(cluster_name="test", cloud_provider="fake", nominated_node_names=named)
    built = [str(getattr(c, "name", "")) for c in components(settings)]
    assert ("nominated-node-names" in built) is named
    assert Settings(cluster_name="test", cloud_provider="fake").nominated_node_names is False
