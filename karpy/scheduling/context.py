"""What a scheduling round needs that does not change from one round to the next.

Building this is the expensive, cacheable part of scheduling: numbering every instance type
into a bitset index, applying NodeOverlays per NodePool, deciding which instance types each
NodePool can launch at all (its requirements, its offerings, its ``minValues``), and
collecting the universe of topology domains. The controller keeps a `SchedulingContext`
for as long as its inputs (NodePools, instance types, overlays, the insufficient-capacity
cache) are unchanged and hands it to every round; `karpy simulate` builds one per run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from karpy.apis.labels import CORE_RESTRICTED_LABEL_DOMAINS, CORE_WELL_KNOWN_LABELS
from karpy.scheduling.domains import DomainUniverse
from karpy.scheduling.index import InstanceTypeIndex
from karpy.scheduling.overlays import apply_overlays
from karpy.scheduling.templates import compile_nodepool, ordered_templates

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

    from karpy.scheduling.instancetypes import CapacityPool, InstanceType
    from karpy.scheduling.overlays import NodeOverlayLike
    from karpy.scheduling.templates import NodeClaimTemplate, NodePoolLike

__all__ = [
    "PoolCandidates",
    "SchedulingContext",
    "assemble_context",
    "build_context",
    "mark_unavailable",
]

STRICT = "Strict"
BEST_EFFORT = "BestEffort"


@attrs.frozen(slots=True)
class PoolCandidates:
    """A usable NodePool with the instance types it may launch (``options``, a bitset)."""

    template: NodeClaimTemplate
    instance_types: tuple[InstanceType, ...]
    options: int


@attrs.frozen(slots=True)
class SkippedPool:
    """A usable NodePool that can launch nothing; ``reason`` says why."""

    template: NodeClaimTemplate
    reason: str


@attrs.frozen(slots=True, eq=False)
class SchedulingContext:
    index: InstanceTypeIndex
    pools: tuple[PoolCandidates, ...]  # in the order the scheduler tries them
    skipped: tuple[SkippedPool, ...]
    templates: Mapping[str, NodeClaimTemplate]  # every NodePool, usable or not, by name
    well_known_labels: frozenset[str]
    domains: DomainUniverse
    min_values_policy: str = STRICT
    # Label domains a pod may not require labels of unless they are well-known.
    restricted_label_domains: frozenset[str] = CORE_RESTRICTED_LABEL_DOMAINS
    # Each usable NodePool's instance types as compiled (overlays and the
    # insufficient-capacity cache applied), skipped pools too: what `assemble_context`
    # rebuilds a variant from (`karpy.scheduling.reservedslot`).
    pool_types: Mapping[str, tuple[InstanceType, ...]] = attrs.field(factory=dict)


def mark_unavailable(
    instance_types: Sequence[InstanceType], unavailable: frozenset[CapacityPool]
) -> tuple[InstanceType, ...]:
    """Apply the insufficient-capacity cache: the offerings of ``unavailable`` pools off."""
    if not unavailable:
        return tuple(instance_types)
    out = []
    for original in instance_types:
        it = original
        if any(
            (it.name, o.zone, o.capacity_type) in unavailable for o in it.offerings if o.available
        ):
            offerings = tuple(
                attrs.evolve(o, available=False)
                if (it.name, o.zone, o.capacity_type) in unavailable
                else o
                for o in it.offerings
            )
            it = attrs.evolve(it, offerings=offerings)
        out.append(it)
    return tuple(out)


def build_context(
    nodepools: Iterable[NodePoolLike],
    instance_types: Sequence[InstanceType] | Mapping[str, Sequence[InstanceType]],
    *,
    overlays: Iterable[NodeOverlayLike] = (),
    provider_labels: frozenset[str] = frozenset(),
    provider_restricted_domains: frozenset[str] = frozenset(),
    unavailable_offerings: frozenset[CapacityPool] = frozenset(),
    min_values_policy: str = STRICT,
) -> SchedulingContext:
    """Compile NodePools and instance types into a reusable `SchedulingContext`.

    ``instance_types`` is either one list for every NodePool or a list per NodePool name
    (a cloud provider may offer different types to different node classes).
    ``provider_labels`` are the provider's well-known label keys, added to Karpenter's;
    ``provider_restricted_domains`` the label domains it restricts, added to Karpenter's.
    """
    templates = {t.nodepool: t for t in (compile_nodepool(np) for np in nodepools)}
    overlay_list = list(overlays)
    per_pool: list[tuple[NodeClaimTemplate, tuple[InstanceType, ...]]] = []
    shared: tuple[InstanceType, ...] | None = None
    if not isinstance(instance_types, dict):
        shared = mark_unavailable(list(instance_types), unavailable_offerings)  # type: ignore[arg-type]
    for template in ordered_templates(templates.values()):
        if shared is not None:
            types = shared
        else:
            mapping: Mapping[str, Sequence[InstanceType]] = instance_types  # type: ignore[assignment]
            types = mark_unavailable(mapping.get(template.nodepool, ()), unavailable_offerings)
        if overlay_list:
            types = apply_overlays(template.nodepool, template.labels, types, overlay_list)
        per_pool.append((template, types))
    return assemble_context(
        templates,
        per_pool,
        well_known_labels=CORE_WELL_KNOWN_LABELS | provider_labels,
        restricted_label_domains=CORE_RESTRICTED_LABEL_DOMAINS | provider_restricted_domains,
        min_values_policy=min_values_policy,
    )


def assemble_context(
    templates: Mapping[str, NodeClaimTemplate],
    per_pool: Sequence[tuple[NodeClaimTemplate, tuple[InstanceType, ...]]],
    *,
    well_known_labels: frozenset[str],
    restricted_label_domains: frozenset[str],
    min_values_policy: str = STRICT,
) -> SchedulingContext:
    """The context of NodePools already compiled, each with its final instance types
    (``per_pool``, in the order the scheduler tries them): the numbering, each pool's
    launchable types, and the topology domains."""
    index = InstanceTypeIndex(it for _, types in per_pool for it in types)
    pools: list[PoolCandidates] = []
    skipped: list[SkippedPool] = []
    for template, types in per_pool:
        mask = index.mask_of(types)
        mask &= index.requirements_mask(template.requirements)
        mask &= index.offering_mask(template.requirements)
        if mask and template.requirements.has_min_values() and min_values_policy == STRICT:
            short = _min_values_shortfall(index, mask, template)
            if short:
                skipped.append(SkippedPool(template, short))
                continue
        if not mask:
            skipped.append(
                SkippedPool(template, "nodepool requirements filtered out all instance types")
            )
            continue
        pools.append(PoolCandidates(template, types, mask))
    return SchedulingContext(
        index=index,
        pools=tuple(pools),
        skipped=tuple(skipped),
        templates=templates,
        well_known_labels=well_known_labels,
        domains=DomainUniverse.build(per_pool),
        min_values_policy=min_values_policy,
        restricted_label_domains=restricted_label_domains,
        pool_types={template.nodepool: types for template, types in per_pool},
    )


def _min_values_shortfall(index: InstanceTypeIndex, mask: int, template: NodeClaimTemplate) -> str:
    for key, req in sorted(template.requirements.items()):
        if req.min_values is None:
            continue
        have = len(index.values_for(mask, key))
        if have < req.min_values:
            return (
                f"minValues requirement is not met for label {key} "
                f"({have} of {req.min_values} values available)"
            )
    return ""
