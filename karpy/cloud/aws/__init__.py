"""The AWS cloud provider (``CLOUD_PROVIDER=aws``, the default): EC2NodeClass resolution
(`nodeclass`), instance types with Karpenter's allocatable arithmetic (`instancetypes`),
launches through CreateFleet (`launch`), drift (`drift`) and interruption handling
(`interruption`), all through aiobotocore (`clients`); `provider` ties them together."""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.cloud.aws.nodeclasses import NODE_CLASSES

if TYPE_CHECKING:
    from collections.abc import Mapping

    from karpy.cloud.aws.provider import AWSCloudProvider
    from karpy.cloud.factory import ProviderDependencies
    from karpy.settings import Settings

__all__ = ["NODE_CLASSES", "build", "check"]


def check(settings: Settings, env: Mapping[str, str]) -> None:
    """`UsageError` when no AWS region is configured."""
    from karpy.cloud.aws.clients import region_from_env  # noqa: PLC0415

    region_from_env(env)


def build(dependencies: ProviderDependencies) -> AWSCloudProvider:
    """The AWS provider; `UsageError` when no region is configured. The endpoint and
    credentials follow the botocore chain (``AWS_ENDPOINT_URL``...)."""
    from karpy.cloud.aws.clients import AWSClients, region_from_env  # noqa: PLC0415
    from karpy.cloud.aws.provider import AWSCloudProvider  # noqa: PLC0415

    deps = dependencies
    clients = AWSClients(region_from_env(deps.env))
    return AWSCloudProvider(deps.settings, clients, client=deps.client, state=deps.state,
                            unavailable=deps.unavailable, clock=deps.clock,
                            controller_metrics=deps.controller_metrics,
                            metrics=deps.metrics)  # fmt: skip
