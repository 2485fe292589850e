"""The fake cloud provider (``CLOUD_PROVIDER=fake``), modelled on Karpenter's KWOK provider.

An instance is a Node object written through the API; see `provider` for launches,
`catalog` for the instance types, `faults` for injected capacity errors and failures,
`nodeclass` for NodeClass readiness without a cloud (the NodeClass kind it serves is
`NODE_CLASSES`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from karpy.cloud.fake.catalog import embedded_catalog, load_catalog
from karpy.cloud.fake.faults import FakeFaults
from karpy.cloud.fake.nodeclass import NODE_CLASSES
from karpy.cloud.fake.provider import FakeCloudProvider
from karpy.kube.client import KubeClient

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.cloud.factory import ProviderDependencies
    from karpy.settings import Settings

__all__ = ["NODE_CLASSES", "FakeCloudProvider", "FakeFaults", "build", "check"]


def check(settings: Settings, env: Mapping[str, str]) -> None:
    """`UsageError` for a catalog file (``FAKE_INSTANCE_TYPES``) that does not load."""
    del env  # the fake cloud reads no environment
    if settings.fake_instance_types:
        load_catalog(settings.fake_instance_types)


def build(dependencies: ProviderDependencies) -> FakeCloudProvider:
    """The fake provider the settings describe; `UsageError` for a bad catalog file."""
    settings, client = dependencies.settings, dependencies.client
    path = settings.fake_instance_types
    catalog = load_catalog(path) if path else embedded_catalog()
    # The fake cloud's Nodes stand in for what each instance's kubelet writes with its own
    # credentials: those writes do not spend karpy's request budget (KUBE_CLIENT_QPS).
    kubelets = KubeClient(client.transport, name="fake-kubelets", metrics=client.metrics,
                          clock=client.clock, write_gate=client.write_gate)  # fmt: skip
    return FakeCloudProvider(
        catalog,
        client=kubelets,
        state=dependencies.state,
        unavailable=dependencies.unavailable,
        faults=FakeFaults(settings.fake_insufficient_capacity),
        registration_delay=settings.fake_registration_delay / 1e9,
        repair_toleration=timedelta(seconds=settings.fake_repair_toleration / 1e9),
        clock=dependencies.clock,
        controller_metrics=dependencies.controller_metrics,
    )
