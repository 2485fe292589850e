"""The compiled scheduling context, rebuilt only when what it is compiled from changes.

Compiling a `SchedulingContext` (instance types numbered into bitsets, NodeOverlays
applied, each NodePool's launchable types worked out) is the expensive, cacheable part of
scheduling; Karpenter recomputed it constantly and spent much of its CPU there. Here it
is keyed on exactly its inputs: each NodePool's uid, generation (its spec), readiness and
deletion, and its ``status.resources`` when it has limits (the only status field a round
reads); the identity of each pool's instance-type list (providers return the same object
while their answer is unchanged); the NodeOverlays' versions; and the version of the
insufficient-capacity cache. A round with the same key reuses the previous context.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from karpy.cloud.errors import CloudProviderError
from karpy.log import describe_error, get_logger, obj_ref
from karpy.scheduling.context import build_context

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from karpy.apis.nodepool import NodePool
    from karpy.cloud.provider import CloudProvider
    from karpy.cloud.unavailable import UnavailableOfferings
    from karpy.scheduling.context import SchedulingContext
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.settings import Settings
    from karpy.state.snapshot import StateSnapshot

__all__ = ["CompiledContext", "ContextCache", "context_cache"]

log = get_logger("provisioner")


@attrs.frozen(slots=True, eq=False)
class CompiledContext:
    context: SchedulingContext
    types_by_name: Mapping[str, InstanceType]
    unusable: Mapping[str, str]  # NodePool name -> why it cannot be provisioned from


def _pool_key(pool: NodePool) -> tuple[Any, ...]:
    ready = next((c.status for c in pool.status.conditions if c.type == "Ready"), None)
    usage = tuple(sorted(pool.status.resources.items())) if pool.spec.limits else ()
    return (pool.name, pool.metadata.uid, pool.metadata.generation, ready,
            pool.metadata.deletion_timestamp is not None, usage)  # fmt: skip


class ContextCache:
    def __init__(
        self,
        provider: CloudProvider,
        unavailable: UnavailableOfferings,
        *,
        min_values_policy: str = "Strict",
        overlays_enabled: bool = False,
    ) -> None:
        self.provider = provider
        self.unavailable = unavailable
        self.min_values_policy = min_values_policy
        self.overlays_enabled = overlays_enabled
        self.builds = 0
        self._key: tuple[Any, ...] | None = None
        self._compiled: CompiledContext | None = None
        self._reported: dict[str, str] = {}

    async def get(self, snapshot: StateSnapshot) -> CompiledContext:
        pools = sorted(snapshot.nodepools.values(), key=lambda p: p.name)
        types: dict[str, Sequence[InstanceType]] = {}
        unusable: dict[str, str] = {}
        for pool in pools:
            if pool.metadata.deletion_timestamp is not None or pool.is_static:
                continue
            limit_errors = pool.limit_errors()
            if limit_errors:  # its limits cannot be enforced: unlimited is not what was asked
                unusable[pool.name] = "; ".join(e.render() for e in limit_errors)
                continue
            try:
                types[pool.name] = await self.provider.get_instance_types(pool)
            except CloudProviderError as exc:
                unusable[pool.name] = describe_error(exc)
        self._report(unusable)
        overlays = list(snapshot.nodeoverlays.values()) if self.overlays_enabled else []
        offline = self.unavailable.current()
        key = (
            tuple(_pool_key(p) for p in pools),
            tuple((name, id(t)) for name, t in sorted(types.items())),
            tuple((o.metadata.name, o.metadata.resource_version) for o in overlays),
            self.unavailable.version,
            self.min_values_policy,
        )
        if key == self._key and self._compiled is not None:
            return self._compiled
        context = build_context(
            [p for p in pools if p.name in types],
            types,
            overlays=overlays,
            provider_labels=self.provider.well_known_labels,
            provider_restricted_domains=self.provider.restricted_label_domains,
            unavailable_offerings=offline,
            min_values_policy=self.min_values_policy,
        )
        self.builds += 1
        self._key = key
        self._compiled = CompiledContext(
            context=context,
            types_by_name={it.name: it for it in context.index.types},
            unusable=unusable,
        )
        log.debug("compiled scheduling context", nodepools=len(context.pools),
                  instanceTypes=len(context.index), unavailableOfferings=len(offline))  # fmt: skip
        return self._compiled

    def _report(self, unusable: Mapping[str, str]) -> None:
        """Log each NodePool that cannot be used once per reason, not every round."""
        for name, reason in unusable.items():
            if self._reported.get(name) != reason:
                log.warning("skipping nodepool", **obj_ref("NodePool", name), reason=reason)
        self._reported = dict(unusable)


def context_cache(
    settings: Settings, provider: CloudProvider, unavailable: UnavailableOfferings
) -> ContextCache:
    """The cache ``settings`` configure (minValues policy, the NodeOverlay gate): one per
    controller process, shared by provisioning and disruption."""
    return ContextCache(
        provider, unavailable, min_values_policy=settings.min_values_policy,
        overlays_enabled=settings.feature_gates.node_overlay,
    )  # fmt: skip
