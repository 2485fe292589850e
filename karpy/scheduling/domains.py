"""The universe of topology domains: every value a label could take on new capacity.

Topology spread needs to know the domains a pod *could* go to, including empty ones: a
zone with no pods yet counts as the minimum when computing skew. Karpenter derives them
from what NodePools can launch: for every NodePool and each of its instance types, the
values the pool's requirements and labels allow for each label key (zones from the type's
offerings narrowed by the pool's zone requirement, capacity types, architectures, ...),
plus the values of the pool's own ``In`` requirements.

Each domain remembers the taint sets of the pools that provide it, so a spread constraint
with ``nodeTaintsPolicy: Honor`` only counts domains on pools the pod tolerates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from karpy.scheduling.taints import tolerates_all

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from karpy.apis.core import Taint
    from karpy.scheduling.instancetypes import InstanceType
    from karpy.scheduling.taints import Toleration
    from karpy.scheduling.templates import NodeClaimTemplate

__all__ = ["DomainUniverse"]


class DomainUniverse:
    """``key -> domain -> taint sets of the pools offering it``."""

    __slots__ = ("_by_key", "_cache")

    def __init__(self) -> None:
        self._by_key: dict[str, dict[str, list[tuple[Taint, ...]]]] = {}
        self._cache: dict[tuple[str, bool, tuple[Toleration, ...]], tuple[str, ...]] = {}

    @classmethod
    def build(
        cls, pools: Iterable[tuple[NodeClaimTemplate, Sequence[InstanceType]]]
    ) -> DomainUniverse:
        universe = cls()
        for template, instance_types in pools:
            base = template.requirements
            taints = template.taints
            for it in instance_types:
                for key, own in it.requirements.items():
                    pool = base.find(key)
                    req = own if pool is None else pool.intersection(own)
                    if req.complement:
                        continue
                    for domain in req.values:
                        universe.insert(key, domain, taints)
            for key, req in base.items():
                if not req.complement:
                    for domain in req.values:
                        universe.insert(key, domain, taints)
        return universe

    def insert(self, key: str, domain: str, taints: tuple[Taint, ...]) -> None:
        domains = self._by_key.setdefault(key, {})
        groups = domains.get(domain)
        if groups is None or not taints:
            domains[domain] = [taints]
            return
        if not groups[0]:
            return  # an untainted pool offers it: every pod is eligible
        if taints not in groups:
            groups.append(taints)

    def domains(self, key: str, tolerations: Sequence[Toleration] | None) -> tuple[str, ...]:
        """Domains of ``key``; with ``tolerations``, only those on tolerated pools."""
        honor = tolerations is not None
        cache_key = (key, honor, tuple(tolerations or ()))
        cached = self._cache.get(cache_key)
        if cached is not None:
            return cached
        out = []
        for domain, taint_sets in self._by_key.get(key, {}).items():
            if not honor or any(tolerates_all(ts, tolerations or ()) for ts in taint_sets):
                out.append(domain)
        result = tuple(sorted(out))
        self._cache[cache_key] = result
        return result

    def keys(self) -> Iterable[str]:
        return self._by_key.keys()
