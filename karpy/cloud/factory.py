"""Choosing the cloud provider ``CLOUD_PROVIDER`` names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.errors import UsageError

if TYPE_CHECKING:
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = ["build_provider"]


def build_provider(
    settings: Settings,
    *,
    client: KubeClient,
    state: ClusterState,
    unavailable: UnavailableOfferings,
    clock: Clock,
    controller_metrics: ControllerMetrics | None = None,
) -> CloudProvider:
    """The provider for ``settings``; `UsageError` (exit 2) when it cannot be built."""
    if settings.cloud_provider == "fake":
        from karpy.cloud import fake  # noqa: PLC0415

        return fake.build(settings, client=client, state=state, unavailable=unavailable,
                          clock=clock, controller_metrics=controller_metrics)  # fmt: skip
    raise UsageError(
        'CLOUD_PROVIDER (--cloud-provider) = "aws": the AWS provider is not part of this '
        "build yet; set CLOUD_PROVIDER=fake to run against a sandbox or KWOK cluster"
    )
