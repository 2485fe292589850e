"""The AWS cloud provider (``CLOUD_PROVIDER=aws``, the default): EC2NodeClass resolution
(`nodeclass`), instance types with Karpenter's allocatable arithmetic (`instancetypes`),
launches through CreateFleet (`launch`), drift (`drift`) and interruption handling
(`interruption`), all through aiobotocore (`clients`); `provider` ties them together."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.base.clock import Clock
    from karpy.cloud.aws.provider import AWSCloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.observability.metrics import Metrics
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = ["build"]


def build(
    settings: Settings,
    *,
    client: KubeClient,
    state: ClusterState,
    unavailable: UnavailableOfferings,
    clock: Clock,
    controller_metrics: ControllerMetrics | None = None,
    metrics: Metrics | None = None,
    env: Mapping[str, str] | None = None,
) -> AWSCloudProvider:
    """The AWS provider for ``settings``; `UsageError` when no region is configured. The
    endpoint and credentials follow the botocore chain (``AWS_ENDPOINT_URL``...)."""
    from karpy.cloud.aws.clients import AWSClients, region_from_env  # noqa: PLC0415
    from karpy.cloud.aws.provider import AWSCloudProvider  # noqa: PLC0415

    clients = AWSClients(region_from_env(os.environ if env is None else env))
    return AWSCloudProvider(settings, clients, client=client, state=state,
                            unavailable=unavailable, clock=clock,
                            controller_metrics=controller_metrics, metrics=metrics)  # fmt: skip
