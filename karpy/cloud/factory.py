"""Choosing the cloud provider ``CLOUD_PROVIDER`` names, from a registry of plug-ins.

A provider is a module under ``karpy.cloud`` with two functions and one constant
(`ProviderModule`): ``check(settings, env)`` raises `UsageError` for what would stop the
build, before the process opens a connection; ``build(dependencies)`` returns the
`CloudProvider`; ``NODE_CLASSES`` declares the NodeClass kinds it serves, which the
operator must watch before it builds the cluster state the provider is built with. Adding a
provider is a folder under ``karpy/cloud/<name>/`` and one line in `PROVIDERS`. The
registry names modules rather than importing them, so the core never imports a provider
and a provider's dependencies load only when it is chosen.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Final, Protocol, cast

import attrs

from karpy.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.nodeclass import NodeClassKind
    from karpy.base.clock import Clock
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.kube.client import KubeClient
    from karpy.observability.controller_metrics import ControllerMetrics
    from karpy.observability.metrics import Metrics
    from karpy.settings import Settings
    from karpy.state.cluster import ClusterState

__all__ = ["PROVIDERS", "ProviderDependencies", "ProviderModule", "build_provider",
           "check_provider", "node_class_kinds", "provider_module"]  # fmt: skip

# CLOUD_PROVIDER value -> the module that implements it.
PROVIDERS: Final[Mapping[str, str]] = {
    "aws": "karpy.cloud.aws",
    "fake": "karpy.cloud.fake",
}


@attrs.frozen(kw_only=True)
class ProviderDependencies:
    """What the operator hands every provider's ``build``: one record, so a new
    dependency is one field here rather than a parameter in every provider."""

    settings: Settings
    client: KubeClient
    state: ClusterState
    unavailable: UnavailableOfferings
    clock: Clock
    controller_metrics: ControllerMetrics | None = None
    metrics: Metrics | None = None
    env: Mapping[str, str] = attrs.field(factory=lambda: dict(os.environ))


class ProviderModule(Protocol):
    """The two functions and the constant a provider's module exports."""

    NODE_CLASSES: Sequence[NodeClassKind[Any]]

    def check(self, settings: Settings, env: Mapping[str, str]) -> None: ...

    def build(self, dependencies: ProviderDependencies) -> CloudProvider: ...


def provider_module(name: str) -> ProviderModule:
    """The module registered for ``CLOUD_PROVIDER=name``; `UsageError` for an unknown name."""
    module = PROVIDERS.get(name)
    if module is None:
        expected = " or ".join(f'"{known}"' for known in sorted(PROVIDERS))
        raise UsageError(f"CLOUD_PROVIDER (--cloud-provider) = {name!r}: expected {expected}")
    return cast("ProviderModule", importlib.import_module(module))


def check_provider(settings: Settings, env: Mapping[str, str]) -> None:
    """`UsageError` (exit 2) for what would stop ``build_provider``, checked before the
    process opens any connection (the AWS region, the fake cloud's catalog file)."""
    provider_module(settings.cloud_provider).check(settings, env)


def node_class_kinds(settings: Settings) -> Sequence[NodeClassKind[Any]]:
    """The NodeClass kinds the provider ``settings`` names serves, known before it is
    built (the informers that watch them feed the state it is built with)."""
    return provider_module(settings.cloud_provider).NODE_CLASSES


def build_provider(dependencies: ProviderDependencies) -> CloudProvider:
    """The provider ``dependencies.settings`` names; `UsageError` (exit 2) when it cannot
    be built."""
    return provider_module(dependencies.settings.cloud_provider).build(dependencies)
