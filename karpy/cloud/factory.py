"""Choosing the cloud provider ``CLOUD_PROVIDER`` names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.observability.metrics import Metrics
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = ["build_provider", "check_provider"]


def check_provider(settings: Settings, env: Mapping[str, str]) -> None:
    """`UsageError` (exit 2) for what would stop ``build_provider``, checked before the
    process opens any connection: the AWS region, the fake cloud's catalog file."""
    if settings.cloud_provider == "aws":
        from karpy.cloud.aws.clients import region_from_env  # noqa: PLC0415

        region_from_env(env)
    elif settings.cloud_provider == "fake" and settings.fake_instance_types:
        from karpy.cloud.fake.catalog import load_catalog  # noqa: PLC0415

        load_catalog(settings.fake_instance_types)


def build_provider(
    settings: Settings,
    *,
    client: KubeClient,
    state: ClusterState,
    unavailable: UnavailableOfferings,
    clock: Clock,
    controller_metrics: ControllerMetrics | None = None,
    metrics: Metrics | None = None,
) -> CloudProvider:
    """The provider for ``settings``; `UsageError` (exit 2) when it cannot be built."""
    if settings.cloud_provider == "fake":
        from karpy.cloud import fake  # noqa: PLC0415

        return fake.build(settings, client=client, state=state, unavailable=unavailable,
                          clock=clock, controller_metrics=controller_metrics)  # fmt: skip
    if settings.cloud_provider == "aws":
        from karpy.cloud import aws  # noqa: PLC0415

        return aws.build(settings, client=client, state=state, unavailable=unavailable,
                         clock=clock, controller_metrics=controller_metrics,
                         metrics=metrics)  # fmt: skip
    raise UsageError(f"CLOUD_PROVIDER (--cloud-provider) = {settings.cloud_provider!r}: "
                     'expected "aws" or "fake"')  # fmt: skip
